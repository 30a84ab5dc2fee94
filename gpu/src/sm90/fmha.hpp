// Host entry points of the warp-specialized sm90 attention kernel, one explicit instantiation per
// head dim (fmha_d64.cu, fmha_d128.cu, fmha_d256.cu: CuTe kernels compile slowly, so each head dim
// is a translation unit of its own and they build in parallel). Plain C++: no CuTe here.
#pragma once

#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu::sm90 {

// Launches the kernel for head dim D on `args` (already validated) with `scheduler` walking
// `summary` (whose row offsets, if any, are device pointers). Queue counter and trace count must
// already be reset on the stream.
template <int D>
Status launch(const AttentionArgs& args, const runtime::AnyScheduler& scheduler,
              const TileSummary& summary);

// CTAs of the head dim's kernel that one SM holds (cudaOccupancyMaxActiveBlocksPerMultiprocessor
// with the kernel's threads and shared memory).
template <int D>
Status resident_ctas_per_sm(int& out);

extern template Status launch<64>(const AttentionArgs&, const runtime::AnyScheduler&,
                                  const TileSummary&);
extern template Status launch<128>(const AttentionArgs&, const runtime::AnyScheduler&,
                                   const TileSummary&);
extern template Status launch<256>(const AttentionArgs&, const runtime::AnyScheduler&,
                                   const TileSummary&);
extern template Status resident_ctas_per_sm<64>(int&);
extern template Status resident_ctas_per_sm<128>(int&);
extern template Status resident_ctas_per_sm<256>(int&);

}  // namespace tilesched::gpu::sm90
