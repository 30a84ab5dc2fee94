// Host side of the sm90 kernel for one head dim and tile height: the TMA descriptors (Arguments ->
// Params) and the launch. Included once per (head dim, BM, BN) by fmha_d<D>*.cu.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "cuda_status.hpp"
#include "sm90/fmha.hpp"
#include "sm90/fmha_kernel.cuh"

namespace tilesched::gpu::sm90 {

#ifdef TILESCHED_GPU_EXPERIMENTS
// Candidate configurations, compiled only into experiment builds (-DTILESCHED_GPU_EXPERIMENTS=ON)
// and chosen at run time with TILESCHED_GPU_VARIANT=N; docs/gpu-performance.md records what each
// measured: the default with one switch flipped. 1: the consumer warpgroups' GEMM turns
// (PingPong) off; 2: the PV wait moved (Unpinned <-> AfterMax); 3: the default, or below.
template <class Config, bool PingPongTurns, PvWait Wait>
struct Rebind {
  // The kernel reads every switch as Config::kX, so a derived struct flips one.
  struct type : Config {
    static constexpr bool kPingPong = PingPongTurns;
    static constexpr PvWait kPvWait = Wait;
  };
};
// Variants 1 and 2 of a default C: each flips one of its switches.
template <class C>
struct OneSwitchFlipped {
  using v1 = typename Rebind<C, !C::kPingPong, C::kPvWait>::type;
  using v2 =
      typename Rebind<C, C::kPingPong,
                      C::kPvWait == PvWait::Unpinned ? PvWait::AfterMax : PvWait::Unpinned>::type;
};
template <int D, int BM, int BN>
struct ExperimentConfigs : OneSwitchFlipped<typename DefaultConfig<D, BM, BN>::type> {
  using v3 = typename DefaultConfig<D, BM, BN>::type;
};
// BM 192 at d = 64: 3, the next tile received under the last PV (PrefetchTile).
template <>
struct ExperimentConfigs<64, 192, 128> : OneSwitchFlipped<DefaultConfig<64, 192, 128>::type> {
  using v3 = KernelConfig<64, 128, 3, 2, false, false, 0, false, 160, true, true, true, 3>;
};
#endif

// Calls f(Config{}) with the configuration head dim D and tile height BM run: its default, or in
// an experiment build the variant TILESCHED_GPU_VARIANT names. Every one has tiles of BM rows
// (checked at compile time), so the launch's scheduler and kernel agree on the tile.
template <int D, int BM, int BN, class F>
Status with_config(F&& f) {
  const auto call = [&](auto config) {
    static_assert(FmhaTraits<decltype(config)>::kBlockM == BM && decltype(config)::kBlockN == BN,
                  "the configuration's tiles are BM and its K/V blocks BN");
    return f(config);
  };
#ifdef TILESCHED_GPU_EXPERIMENTS
  const char* env = std::getenv("TILESCHED_GPU_VARIANT");
  switch (env != nullptr ? std::atoi(env) : 0) {
    case 1: return call(typename ExperimentConfigs<D, BM, BN>::v1{});
    case 2: return call(typename ExperimentConfigs<D, BM, BN>::v2{});
    case 3: return call(typename ExperimentConfigs<D, BM, BN>::v3{});
    default: break;
  }
#endif
  return call(typename DefaultConfig<D, BM, BN>::type{});
}

// The kernel's shared memory exceeds the 48 KB default: opt in before launching or asking for
// occupancy.
template <class Config, class Scheduler = runtime::AnyScheduler>
Status allow_shared_memory() {
  return detail::cuda_status(cudaFuncSetAttribute(&fmha_kernel<Scheduler, Config>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  FmhaTraits<Config>::kSharedBytes),
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
    config.dynamicSmemBytes = Traits::kSharedBytes;
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
  p.q_rows = static_cast<std::int32_t>(w.total_q_rows());  // padded: B * S_max (row layout)
  p.kv_rows = static_cast<std::int32_t>(w.total_kv_rows());
  p.tma_q = make_tma_copy(SM90_TMA_LOAD{}, gmem(a.q, p.q_rows, w.num_q_heads),
                          typename Traits::SmemLayoutQ{}(_, _, _0{}));
  p.tma_k = make_tma_copy(typename Traits::TmaLoadKV{}, gmem(a.k, p.kv_rows, w.num_kv_heads),
                          typename Traits::SmemLayoutKV{}(_, _, _0{}), Int<Traits::kClusterM>{});
  p.tma_v = make_tma_copy(typename Traits::TmaLoadKV{}, gmem(a.v, p.kv_rows, w.num_kv_heads),
                          typename Traits::SmemLayoutKV{}(_, _, _0{}), Int<Traits::kClusterM>{});
  p.tma_o = make_tma_copy(SM90_TMA_STORE{}, gmem(a.o, p.q_rows, w.num_q_heads),
                          typename Traits::SmemLayoutO{});
  p.scheduler = scheduler;
  p.summary = summary;
  p.num_q_heads = w.num_q_heads;
  p.num_kv_heads = w.num_kv_heads;
  p.group = w.group_size();
  p.kv = w.kv_layout(a.kv_row_offsets);
  p.o = static_cast<__nv_bfloat16*>(a.o);
  p.lse = a.lse;
  const float scale =
      a.softmax_scale > 0.f ? a.softmax_scale : 1.f / std::sqrt(static_cast<float>(w.head_dim));
  p.scale_log2 = scale * 1.4426950408889634f;
  p.causal = w.mask == Mask::Causal;
  p.trace = a.trace;
  p.trace_block_n = w.block_n;
  p.split_partials = static_cast<float*>(a.split_workspace);
  p.launch_done = a.launch_done;
  if (a.launch_done != nullptr && takes_from_counter(w.scheduler)) {
    p.queue_counter = a.queue_counter;
    p.counter_start = counter_start;
  }
  if (a.launch_done != nullptr && a.trace.events != nullptr)
    p.trace_last_count = a.trace.last_count;

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
    kernel<<<dim3(g.x, g.y, g.z), Traits::kThreads, Traits::kSharedBytes,
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

// The kernel for the scheduler's kind: its own instantiation for the kinds `bench` runs (tile for
// dense rows; queued and lpt_queued, the simulator's picks for causal ones) and for split_tail
// (which the AnyScheduler kernel leaves out), AnyScheduler's for the rest. A kernel with
// AnyScheduler carries every kind's code in the path a tile runs once between its K/V blocks (the
// whole kernel: about 7,100 SASS instructions at d = 128, one kind's 4,400-4,800): at seq 512
// causal, Nsight Compute showed our warps stalled for instruction fetch four to five times as often
// as cuDNN's, and the specialised kernels were 0.2-2.2 % faster (docs/gpu-performance.md,
// thirteenth session). The build took no measurable time more (the front end, not ptxas, takes a
// translation unit's time).
// The queued and lpt_queued kernels (the causal rows' schedulers) also receive the next tile under
// a tile's last PV (PrefetchTile) at every configuration: +1.4-2.4 % at d = 64 seq 512-1024
// causal, +0.9-1.5 % at d = 256, within +-0.3 % from 8192 up; the tile kernel (dense rows) keeps
// each configuration's own choice, which measured PrefetchTile 1-4 % slower on long dense rows at
// d = 64 and 256 (docs/gpu-performance.md, fourteenth session).
// They also stage warpgroup 0's O outside the V ring where the configuration asks for it
// (kStageOSplitQueued: d = 256 BN 64, +1.5 / +1.0 % at seq 512 / 1024 causal; in the tile
// kernel, dense rows, it cost 1.3 % at seq 512; twenty-first session).
template <class Config>
struct PrefetchingConfig : Config {
  static constexpr bool kPrefetchTile = true;
  static constexpr bool kStageOSplit = Config::kStageOSplit || Config::kStageOSplitQueued;
};
// The queued kind's kernel also runs NarrowFirst where the configuration asks for it
// (kNarrowFirstQueued): d = 128, +2.0 / +1.4 % at seq 512 / 1024 causal; in the tile and
// lpt_queued kernels (dense rows, long causal ones) it cost 0.5-0.8 % (docs/gpu-performance.md,
// seventeenth and eighteenth sessions). lpt_queued runs this configuration too where every
// sequence has at most kNarrowMaxKeys keys (short_rows): the simulator gives d = 128's 512-key
// causal rows to lpt_queued since its refits, which had left them without the narrow block.
template <class Config>
struct QueuedConfig : PrefetchingConfig<Config> {
  static constexpr bool kNarrowFirst = Config::kNarrowFirst || Config::kNarrowFirstQueued;
  // And the LSE store's branch where the configuration keeps it there (kPredicatedLseQueued):
  // d = 128's queued kernel measured 0.3-1.0 % slower with the predicated store.
  static constexpr bool kPredicatedLse = Config::kPredicatedLse && Config::kPredicatedLseQueued;
};
// The tile kind's kernel in clusters of two CTAs that share their K/V loads (kClusterM 2). It
// needs a cluster's two CTAs to run tiles of the same head and keys at all times: CTA 2k and
// 2k + 1 take tiles 2k + nC and 2k + 1 + nC, two tiles of one head and sequence when every
// sequence has the same even number of tiles and the same keys, the mask is none (every tile
// then reads all of them) and C is even; and the device must hold the whole grid's clusters at
// once (a persistent grid that did not fit would run its clusters in turns). Taken where it
// measured faster: from kClusterMinKeys keys up (d = 128 dense: +0.6 % at 8192 keys, +3 % at
// 16384 in noisy rounds, 1.001 at 4096 and 2.0 / 1.0 / 0.6 % slower at 512 / 1024 / 2048, where
// the stage releases that wait for both CTAs cost more than the shared loads save;
// docs/gpu-performance.md, twenty-sixth session). TILESCHED_GPU_CLUSTER=0 never takes it, =1
// wherever the rows allow it (the tests' switch).
inline constexpr u32 kNarrowMaxKeys = 1024;
// Whether every sequence of `w` has at most kNarrowMaxKeys keys.
inline bool short_rows(const Workload& w) { return w.max_key_len() <= kNarrowMaxKeys; }
template <class Config>
struct ClusterConfig : Config {
  static constexpr int kClusterM = 2;
};
inline constexpr u32 kClusterMinKeys = 8192;
// -1: by the rows (unset), 0: never, 1: wherever the rows allow.
inline int cluster_switch() {
  const char* env = std::getenv("TILESCHED_GPU_CLUSTER");
  return env == nullptr ? -1 : (std::atoi(env) != 0 ? 1 : 0);
}
// num_ctas: the tile scheduler's C; tiles: a sequence's tiles (T); grid: the CTAs launched.
template <class Config>
bool cluster_pairs_fit(const Workload& w, u32 num_ctas, u32 tiles, u32 grid) {
  const int wanted = cluster_switch();
  if (wanted == 0 || w.mask != Mask::None || num_ctas % 2 != 0 || tiles % 2 != 0 || grid % 2 != 0)
    return false;
  if (wanted < 0 && w.key_len(0) < kClusterMinKeys) return false;
  for (u32 b = 0; b < w.batch_size(); ++b)
    if (w.q_lens[b] != w.q_lens[0] || w.key_len(b) != w.key_len(0)) return false;
  // How many clusters the device holds at once (asked once per process).
  static const int fit = [] {
    using Cluster = ClusterConfig<Config>;
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

template <class Config>
Status launch_config(const AttentionArgs& a, const runtime::AnyScheduler& scheduler,
                     const TileSummary& summary) {
  const u32 start = scheduler.counter_start();
  switch (scheduler.kind) {
    case SchedulerKind::Tile:
      if constexpr (Config::kClusterPairsTile) {
        if (cluster_pairs_fit<Config>(a.workload, scheduler.tile.num_ctas,
                                      summary.max_num_prompt_tiles,
                                      scheduler.tile.grid_dim(summary).x))
          return launch_with<ClusterConfig<Config>>(a, scheduler.tile, summary, start);
      }
      return launch_with<Config>(a, scheduler.tile, summary, start);
    case SchedulerKind::Queued:
      return launch_with<QueuedConfig<Config>>(a, scheduler.queued, summary, start);
    case SchedulerKind::LptQueued:
      if constexpr (Config::kNarrowFirstQueued) {
        if (short_rows(a.workload))
          return launch_with<QueuedConfig<Config>>(a, scheduler.lpt_queued, summary, start);
      }
      return launch_with<PrefetchingConfig<Config>>(a, scheduler.lpt_queued, summary, start);
    // Always its own: the AnyScheduler kernel's switch leaves split_tail out (any_scheduler.hpp).
    // Only at kernel_block_n's BN (validate() refuses the others): no split kernel for the rest.
    case SchedulerKind::SplitTail:
      if constexpr (Config::kBlockN == kernel_block_n(Config::kHeadDim))
        return launch_with<Config>(a, scheduler.split_tail, summary, start);
      else
        return Status::error(
            "split_tail runs only the kernel's K/V blocks of kernel_block_n(head_dim) keys");
    default: return launch_with<Config>(a, scheduler, summary, start);
  }
}

template <int D, int BM, int BN>
Status launch(const AttentionArgs& a, const runtime::AnyScheduler& scheduler,
              const TileSummary& summary) {
  return with_config<D, BM, BN>(
      [&](auto config) { return launch_config<decltype(config)>(a, scheduler, summary); });
}

template <int D, int BM, int BN>
Status cluster_ctas(const Workload& w, u32& out) {
  return with_config<D, BM, BN>([&](auto config) -> Status {
    using Config = decltype(config);
    out = 1;
    if constexpr (Config::kClusterPairsTile) {
      if (w.scheduler != SchedulerKind::Tile) return Status::success();
      // T and the tile scheduler's persistent grid, min(C, N), as the launch sees them.
      const TileSummary summary = TileSummary::make(w.batch_size(), w.max_seq_len(), BM);
      const u32 grid = std::min(w.num_ctas, summary.max_idx(w.num_q_heads));
      if (cluster_pairs_fit<Config>(w, w.num_ctas, summary.max_num_prompt_tiles, grid))
        out = ClusterConfig<Config>::kClusterM;
    }
    return Status::success();
  });
}

template <int D, int BM, int BN>
Status resident_ctas_per_sm(int& out) {
  return with_config<D, BM, BN>([&](auto config) -> Status {
    using Config = decltype(config);
    using Traits = FmhaTraits<Config>;
    if (Status s = allow_shared_memory<Config>(); !s) return s;
    return detail::cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                   &out, &fmha_kernel<runtime::AnyScheduler, Config>,
                                   Traits::kThreads, Traits::kSharedBytes),
                               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  });
}

}  // namespace tilesched::gpu::sm90
