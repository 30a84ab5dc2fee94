// Host side of the sm90 kernel for one head dim and tile height: the TMA descriptors (Arguments ->
// Params) and the launch. Included once per (head dim, BM, BN) by fmha_d<D>*.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "cuda_status.hpp"
#include "sm90/combine.cuh"
#include "sm90/kernel.cuh"
#include "sm90/launch.hpp"

namespace tilesched::gpu::sm90 {

// The kernel's shared memory exceeds the 48 KB default: opt in before launching or asking for
// occupancy.
template <class Config, class Scheduler = runtime::AnyScheduler>
Status allow_shared_memory() {
  return detail::cuda_status(
      cudaFuncSetAttribute(&fmha_kernel<Scheduler, Config>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes<Config>),
      "cudaFuncSetAttribute(max dynamic shared memory)");
}

// A launch of `Config`'s kernel in clusters of Traits::kClusterM CTAs along x: the launch
// itself (launch_with) and the occupancy query (cluster_pairs_fit) share it. Not copyable: the
// configuration points at the attribute beside it.
template <class Config>
struct ClusterLaunch {
  using Traits = FmhaTraits<Config>;
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute cluster{};
  ClusterLaunch(dim3 grid, cudaStream_t stream) {
    config.gridDim = grid;
    config.blockDim = dim3(Traits::kThreads);
    config.dynamicSmemBytes = kSharedBytes<Config>;
    config.stream = stream;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = Traits::kClusterM;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};

// counter_start: the counter scheduler's (AnyScheduler::counter_start()), for
// restore_launch_words.
template <class Config, class Scheduler>
Status launch_with(const AttentionArgs& a, const Scheduler& scheduler, const TileSummary& summary,
                   u32 counter_start) {
  using namespace cute;
  using Traits = FmhaTraits<Config>;
  constexpr int D = Traits::kHeadDim;
  // The workload's BM is Traits::kBlockM: attention.cu's with_kernel chose this kernel by it.
  const Workload& w = a.workload;

  // (rows, d, heads) views of Q and K/V for the tensor maps; validate() has checked that the row
  // counts fit the TMA's signed 32-bit coordinates and that the pointers are 16-byte aligned.
  const auto gmem = [](const void* ptr, std::int32_t rows, u32 heads) {
    return make_tensor(make_gmem_ptr(static_cast<Element const*>(ptr)),
                       make_layout(make_shape(rows, Int<D>{}, static_cast<std::int32_t>(heads)),
                                   make_stride(std::int64_t(heads) * D, _1{}, Int<D>{})));
  };

  FmhaParams<Scheduler, Config> p;
  Problem& problem = p.problem;
  problem.q_rows = static_cast<std::int32_t>(w.total_q_rows());  // padded: B * S_max (row layout)
  problem.kv_rows = static_cast<std::int32_t>(w.total_kv_rows());
  problem.num_q_heads = w.num_q_heads;
  problem.num_kv_heads = w.num_kv_heads;
  problem.group = w.group_size();
  problem.kv = w.kv_layout(a.kv_row_offsets);
  p.mainloop.tma_q = make_tma_copy(SM90_TMA_LOAD{}, gmem(a.q, problem.q_rows, w.num_q_heads),
                                   typename Traits::SmemLayoutQ{}(_, _, _0{}));
  p.mainloop.tma_k =
      make_tma_copy(typename Traits::TmaLoadKV{}, gmem(a.k, problem.kv_rows, w.num_kv_heads),
                    typename Traits::SmemLayoutKV{}(_, _, _0{}), Int<Traits::kClusterM>{});
  p.mainloop.tma_v =
      make_tma_copy(typename Traits::TmaLoadKV{}, gmem(a.v, problem.kv_rows, w.num_kv_heads),
                    typename Traits::SmemLayoutKV{}(_, _, _0{}), Int<Traits::kClusterM>{});
  p.epilogue.tma_o = make_tma_copy(SM90_TMA_STORE{}, gmem(a.o, problem.q_rows, w.num_q_heads),
                                   typename Traits::SmemLayoutO{});
  p.scheduler = scheduler;
  p.summary = summary;
  p.outputs.o = static_cast<__nv_bfloat16*>(a.o);
  p.outputs.lse = a.lse;
  const float scale =
      a.softmax_scale > 0.f ? a.softmax_scale : 1.f / std::sqrt(static_cast<float>(w.head_dim));
  p.softmax.scale_log2 = scale * 1.4426950408889634f;
  p.softmax.causal = w.mask == Mask::Causal;
  p.trace.buffer = a.trace;
  p.trace.block_n = w.block_n;
  p.combine.split_partials = static_cast<float*>(a.split_workspace);
  p.launch_words.launch_done = a.launch_done;
  if (a.launch_done != nullptr && takes_from_counter(w.scheduler)) {
    p.launch_words.queue_counter = a.queue_counter;
    p.launch_words.counter_start = counter_start;
  }
  if (a.launch_done != nullptr && a.trace.events != nullptr)
    p.launch_words.trace_last_count = a.trace.last_count;
  static_assert(kSharedBytes<Config> <= 227 * 1024,
                "shared storage exceeds the sm90 limit per CTA");

  auto* kernel = &fmha_kernel<Scheduler, Config>;
  if (Status s = allow_shared_memory<Config, Scheduler>(); !s) return s;
  const GridDim g = scheduler.grid_dim(summary);
  if constexpr (Traits::kClusterM > 1) {
    // Clusters of kClusterM CTAs along x (cluster_pairs_fit has checked the grid).
    const ClusterLaunch<Config> launch(dim3(g.x, g.y, g.z), static_cast<cudaStream_t>(a.stream));
    if (Status s = detail::cuda_status(cudaLaunchKernelEx(&launch.config, kernel, p),
                                       "launching the attention kernel (clusters)");
        !s)
      return s;
  } else {
    kernel<<<dim3(g.x, g.y, g.z), Traits::kThreads, kSharedBytes<Config>,
             static_cast<cudaStream_t>(a.stream)>>>(p);
  }
  if (Status s = detail::cuda_status(cudaGetLastError(), "launching the attention kernel"); !s)
    return s;
  // split_tail: the tail's split tiles are finished by a second kernel (combine_split_tiles).
  if constexpr (std::is_same_v<Scheduler, runtime::SplitTailScheduler>) {
    if (scheduler.tail_tiles() > 0) {
      combine_split_tiles<<<dim3(scheduler.tail_tiles(), Traits::kConsumerWarpgroups),
                            Traits::kWarpgroupThreads, 0, static_cast<cudaStream_t>(a.stream)>>>(p);
      return detail::cuda_status(cudaGetLastError(), "launching split_tail's combine kernel");
    }
  }
  return Status::success();
}

// -1: by the rows (unset), 0: never, 1: wherever the rows allow.
inline int cluster_switch() {
  const char* env = std::getenv("TILESCHED_GPU_CLUSTER");
  return env == nullptr ? -1 : (std::atoi(env) != 0 ? 1 : 0);
}
// num_ctas: the tile scheduler's C; tiles: a sequence's tiles (T); grid: the CTAs launched.
template <class Config>  // the Cluster configuration
bool cluster_pairs_fit(const Workload& w, u32 num_ctas, u32 tiles, u32 grid) {
  const int wanted = cluster_switch();
  if (wanted == 0 || w.mask != Mask::None || num_ctas % 2 != 0 || tiles % 2 != 0 || grid % 2 != 0)
    return false;
  if (wanted < 0 && w.key_len(0) < kClusterMinKeys) return false;
  for (u32 b = 0; b < w.batch_size(); ++b)
    if (w.q_lens[b] != w.q_lens[0] || w.key_len(b) != w.key_len(0)) return false;
  // How many clusters the device holds at once (asked once per process).
  static const int fit = [] {
    using Cluster = Config;
    auto* kernel = &fmha_kernel<runtime::TileScheduler, Cluster>;
    if (!allow_shared_memory<Cluster, runtime::TileScheduler>()) return 0;
    const ClusterLaunch<Cluster> launch(dim3(Cluster::kClusterM), nullptr);
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return clusters;
  }();
  return static_cast<u32>(fit) * 2 >= grid;
}

// The kernel each scheduler kind runs, from its shape's KernelSet (configs.hpp):
//   kind                                  kernel                 configuration
//   tile                                  its own                Dense; Cluster where the rows
//   allow queued                                its own                Queued lpt_queued its own
//   Queued where every sequence has at
//                                                                most kNarrowMaxKeys keys, else
//                                                                Causal
//   split_tail                            its own                Dense (only at kernel_block_n's
//   BN) transient, lpt, planned, ragged_queued  AnyScheduler's       Dense
// A kind's own instantiation carries only its scheduler's code in the per-tile path ("A kernel per
// scheduler kind").
template <class Set>
Status launch_config(const AttentionArgs& a, const runtime::AnyScheduler& scheduler,
                     const TileSummary& summary) {
  using Dense = typename Set::Dense;
  const u32 start = scheduler.counter_start();
  switch (scheduler.kind) {
    case SchedulerKind::Tile:
      if constexpr (!std::is_void_v<typename Set::Cluster>) {
        if (cluster_pairs_fit<typename Set::Cluster>(a.workload, scheduler.tile.num_ctas,
                                                     summary.max_num_prompt_tiles,
                                                     scheduler.tile.grid_dim(summary).x))
          return launch_with<typename Set::Cluster>(a, scheduler.tile, summary, start);
      }
      return launch_with<Dense>(a, scheduler.tile, summary, start);
    case SchedulerKind::Queued:
      return launch_with<typename Set::Queued>(a, scheduler.queued, summary, start);
    case SchedulerKind::LptQueued:
      if (a.workload.max_key_len() <= kNarrowMaxKeys)
        return launch_with<typename Set::Queued>(a, scheduler.lpt_queued, summary, start);
      return launch_with<typename Set::Causal>(a, scheduler.lpt_queued, summary, start);
    // The AnyScheduler kernel's switch leaves split_tail out (any_scheduler.hpp). Only at
    // kernel_block_n's BN (validate() refuses the others): no split kernel for the rest.
    case SchedulerKind::SplitTail:
      if constexpr (Dense::kBlockN == kernel_block_n(Dense::kHeadDim))
        return launch_with<Dense>(a, scheduler.split_tail, summary, start);
      else
        return Status::error(
            "split_tail runs only the kernel's K/V blocks of kernel_block_n(head_dim) keys");
    default: return launch_with<Dense>(a, scheduler, summary, start);
  }
}

// The shape's configurations have tiles of BM rows and K/V blocks of BN keys (checked at compile
// time), so the launch's scheduler and kernel agree on the tile.
template <int D, int BM, int BN>
struct CheckedKernels : Kernels<D, BM, BN> {
  using Dense = typename Kernels<D, BM, BN>::Dense;
  static_assert(FmhaTraits<Dense>::kBlockM == BM && Dense::kBlockN == BN && Dense::kHeadDim == D,
                "the configuration's tiles are BM and its K/V blocks BN");
};

template <int D, int BM, int BN>
Status launch(const AttentionArgs& a, const runtime::AnyScheduler& scheduler,
              const TileSummary& summary) {
  return launch_config<CheckedKernels<D, BM, BN>>(a, scheduler, summary);
}

template <int D, int BM, int BN>
Status cluster_ctas(const Workload& w, u32& out) {
  using Cluster = typename Kernels<D, BM, BN>::Cluster;
  out = 1;
  if constexpr (!std::is_void_v<Cluster>) {
    if (w.scheduler != SchedulerKind::Tile) return Status::success();
    // T and the tile scheduler's persistent grid, min(C, N), as the launch sees them.
    const TileSummary summary = TileSummary::make(w.batch_size(), w.max_seq_len(), BM);
    const u32 grid = std::min(w.num_ctas, summary.max_idx(w.num_q_heads));
    if (cluster_pairs_fit<Cluster>(w, w.num_ctas, summary.max_num_prompt_tiles, grid))
      out = Cluster::kClusterM;
  }
  return Status::success();
}

template <int D, int BM, int BN>
Status resident_ctas_per_sm(int& out) {
  using Config = typename CheckedKernels<D, BM, BN>::Dense;
  using Traits = FmhaTraits<Config>;
  if (Status s = allow_shared_memory<Config>(); !s) return s;
  return detail::cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                 &out, &fmha_kernel<runtime::AnyScheduler, Config>,
                                 Traits::kThreads, kSharedBytes<Config>),
                             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
}

}  // namespace tilesched::gpu::sm90
