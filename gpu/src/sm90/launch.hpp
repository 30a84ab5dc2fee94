// Host entry points of the warp-specialized sm90 attention kernel, one explicit instantiation per
// head dim, tile height and K/V block (fmha_d64.cu, fmha_d64_bm192.cu, fmha_d128.cu, fmha_d256.cu,
// fmha_d256_bn64.cu: CuTe kernels compile slowly, so each is a translation unit of its own and
// they build in parallel).
// Plain C++: no CuTe here.
#pragma once

#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu::sm90 {

// Launches the kernel for head dim D, tiles of BM query rows and K/V blocks of BN keys on `args`
// (already validated)
// with `scheduler` walking `summary` (whose row offsets, if any, are device pointers). Queue
// counter and trace count must already be reset on the stream.
template <int D, int BM, int BN>
Status launch(const AttentionArgs& args, const runtime::AnyScheduler& scheduler,
              const TileSummary& summary);

// CTAs of that kernel that one SM holds (cudaOccupancyMaxActiveBlocksPerMultiprocessor with the
// kernel's threads and shared memory).
template <int D, int BM, int BN>
Status resident_ctas_per_sm(int& out);

// CTAs per cluster that launch would run `w` (validated, its num_ctas set) in: 2 where the tile
// kernel shares its K/V loads between two CTAs (kClusterM, fmha_launch.cuh), else 1.
template <int D, int BM, int BN>
Status cluster_ctas(const Workload& w, u32& out);

// The kernels that exist, one (head dim, BM, BN) each: the one list the declarations below, the
// launch's dispatch, kernel_block_ms and kernel_block_ns (attention.cu) expand. Each one's
// instantiation is its own translation unit (fmha_d*.cu). At d = 256 the first BN listed is
// kernel_block_n's (long rows, split_tail), the second recommended_block_n's for short rows.
#define TILESCHED_SM90_KERNELS(X) \
  X(64, 128, 128) X(64, 192, 128) X(128, 128, 128) X(256, 128, 80) X(256, 128, 64)

#define TILESCHED_SM90_KERNEL(D, BM, BN)                                                       \
  extern template Status launch<D, BM, BN>(const AttentionArgs&, const runtime::AnyScheduler&, \
                                           const TileSummary&);                                \
  extern template Status resident_ctas_per_sm<D, BM, BN>(int&);                                \
  extern template Status cluster_ctas<D, BM, BN>(const Workload&, u32&);
TILESCHED_SM90_KERNELS(TILESCHED_SM90_KERNEL)
#undef TILESCHED_SM90_KERNEL

}  // namespace tilesched::gpu::sm90
