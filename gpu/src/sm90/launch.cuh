// Host side of the sm90 kernel for one tile shape: the plan's kernel fields, Arguments -> Params
// (the TMA descriptors), and the launch of the configuration the plan names. Included once per
// (head dim, BM, BN) by kernel_d<D>*.cu.
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include "cuda_status.hpp"
#include "sm90/combine.cuh"
#include "sm90/configs.hpp"
#include "sm90/kernel.cuh"
#include "sm90/launch.hpp"

namespace tilesched::gpu::sm90 {

// The shape's configurations have tiles of BM rows and K/V blocks of BN keys (checked at compile
// time), so the launch's scheduler and kernel agree on the tile.
template <int D, int BM, int BN>
struct CheckedKernels : Kernels<D, BM, BN> {
  using Dense = typename Kernels<D, BM, BN>::Dense;
  static_assert(FmhaTraits<Dense>::kBlockM == BM && Dense::kBlockN == BN && Dense::kHeadDim == D,
                "the configuration's tiles are BM and its K/V blocks BN");
};

// The configuration of variant V in a KernelSet.
template <class Set, KernelVariant V>
using ConfigOf = std::conditional_t<
    V == KernelVariant::Dense, typename Set::Dense,
    std::conditional_t<V == KernelVariant::Causal, typename Set::Causal,
                       std::conditional_t<V == KernelVariant::Queued, typename Set::Queued,
                                          typename Set::Cluster>>>;

// The kernel's shared memory exceeds the 48 KB default: opt in before launching or asking for
// occupancy. The attribute holds for the kernel on its device, so it is set once per device (of
// the first 64) and process, not on every launch.
template <class Config, class Scheduler>
Status allow_shared_memory() {
  static std::atomic<std::uint64_t> devices_set{0};
  int device = 0;
  if (Status s = detail::cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s) return s;
  const std::uint64_t bit = device >= 0 && device < 64 ? std::uint64_t(1) << device : 0;
  if (bit != 0 && (devices_set.load(std::memory_order_acquire) & bit) != 0)
    return Status::success();
  Status s = detail::cuda_status(
      cudaFuncSetAttribute(&fmha_kernel<Scheduler, Config>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes<Config>),
      "cudaFuncSetAttribute(max dynamic shared memory)");
  if (s) devices_set.fetch_or(bit, std::memory_order_release);
  return s;
}

// A launch of `Config`'s kernel in clusters of Traits::kClusterM CTAs along x: the launch itself
// (launch_with) and the occupancy query (cluster_grid_fits) share it. Not copyable: the
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

// Whether the device holds `grid` CTAs of `Config`'s cluster kernel at once (a persistent grid
// that did not fit would run its clusters in turns). The device's cluster count is asked once per
// process.
template <class Config>
bool cluster_grid_fits(u32 grid) {
  static int clusters = -1;
  static std::mutex asked;
  const std::lock_guard<std::mutex> lock(asked);
  if (clusters < 0) {
    clusters = 0;
    auto* kernel = &fmha_kernel<runtime::TileScheduler, Config>;
    const ClusterLaunch<Config> launch(dim3(Config::kClusterM), nullptr);
    if (!allow_shared_memory<Config, runtime::TileScheduler>() ||
        cudaOccupancyMaxActiveClusters(&clusters, kernel, &launch.config) != cudaSuccess) {
      (void)cudaGetLastError();
      clusters = 0;
    }
  }
  return static_cast<std::uint64_t>(clusters) * Config::kClusterM >= grid;
}

// Everything the kernel reads, from the arguments and the plan.
template <class Config, class Scheduler>
FmhaParams<Scheduler, Config> make_params(const AttentionArgs& a, const LaunchPlan& plan,
                                          const Scheduler& scheduler) {
  using namespace cute;
  using Traits = FmhaTraits<Config>;
  constexpr int D = Traits::kHeadDim;
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
  problem.decoding = w.decoding;
  while ((1u << problem.decode_tokens_log2) < w.decode_tile_tokens()) ++problem.decode_tokens_log2;
  problem.kv = w.kv_layout(a.kv_row_offsets);
  if (w.page_size != 0) {
    // The tensor maps see the cache as its rows; each block's row comes from the page table.
    problem.kv_rows = static_cast<std::int32_t>(std::int64_t(a.pages.num_pages) * w.page_size);
    problem.page_table = a.pages.page_table;
    problem.page_stride = a.pages.max_pages_per_seq;
    problem.page_blocks = w.page_size / plan.block_n;
    problem.page_size = w.page_size;
    problem.page_rows = page_rows(w.page_size, plan.block_n);
  }
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
  p.summary = plan.summary;
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
    p.launch_words.counter_start = plan.counter_start;
  }
  if (a.launch_done != nullptr && a.trace.events != nullptr)
    p.launch_words.trace_last_count = a.trace.last_count;
  return p;
}

// K or V as the page-row boxes see it (MainloopParams::page_rows_k/v), or Q as a decode tile's
// boxes do (MainloopParams::decode_q): (d, heads, rows), boxes of 64 columns by `box_rows` rows
// with the buffers' 128-byte swizzle; rows past the tensor are zero-filled.
template <int D>
Status encode_page_rows(cute::TmaDescriptor& desc, const void* base, std::int32_t rows, u32 heads,
                        u32 box_rows) {
  const cuuint64_t dims[3] = {cuuint64_t(D), heads, cuuint64_t(rows)};
  const cuuint64_t strides[2] = {D * sizeof(Element), cuuint64_t(heads) * D * sizeof(Element)};
  const cuuint32_t box[3] = {64, 1, box_rows};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      &desc, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(base), dims, strides, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status::error(fmt::format(
        "cuTensorMapEncodeTiled failed ({}) for boxes of {} rows of {} heads", int(r), box_rows,
        heads));
  return Status::success();
}

// The launch of `Config`'s kernel with `scheduler` (the plan's, or its kind's part), then for the
// splitting kinds the combine kernel that finishes their split tiles.
template <class Config, class Scheduler>
Status launch_with(const AttentionArgs& a, const LaunchPlan& plan, const Scheduler& scheduler) {
  using Traits = FmhaTraits<Config>;
  static_assert(kSharedBytes<Config> <= 227 * 1024, "shared storage exceeds the sm90 limit per CTA");
  FmhaParams<Scheduler, Config> p = make_params<Config>(a, plan, scheduler);
  if (Traits::kClusterM == 1 && p.problem.page_rows != 0) {
    for (auto [desc, base] : {std::pair{&p.mainloop.page_rows_k, a.k},
                              std::pair{&p.mainloop.page_rows_v, a.v}})
      if (Status s = encode_page_rows<Traits::kHeadDim>(*desc, base, p.problem.kv_rows,
                                                        p.problem.num_kv_heads,
                                                        p.problem.page_rows);
          !s)
        return s;
  }
  if (p.problem.decoding)
    if (Status s = encode_page_rows<Traits::kHeadDim>(p.mainloop.decode_q, a.q, p.problem.q_rows,
                                                      p.problem.num_q_heads, kMaxDecodeTokens);
        !s)
      return s;
  auto* kernel = &fmha_kernel<Scheduler, Config>;
  if (Status s = allow_shared_memory<Config, Scheduler>(); !s) return s;
  const auto stream = static_cast<cudaStream_t>(a.stream);
  const dim3 grid(plan.grid.x, plan.grid.y, plan.grid.z);
  if constexpr (Traits::kClusterM > 1) {
    // Clusters of kClusterM CTAs along x (plan_kernel has checked the grid).
    const ClusterLaunch<Config> launch(grid, stream);
    if (Status s = detail::cuda_status(cudaLaunchKernelEx(&launch.config, kernel, p),
                                       "launching the attention kernel (clusters)");
        !s)
      return s;
  } else {
    kernel<<<grid, Traits::kThreads, kSharedBytes<Config>, stream>>>(p);
  }
  if (Status s = detail::cuda_status(cudaGetLastError(), "launching the attention kernel"); !s)
    return s;
  if constexpr (kSchedulerHandsOutPieces<Scheduler>) {
    if (scheduler.split_tile_count() > 0) {
      combine_split_tiles<<<dim3(scheduler.split_tile_count(), Traits::kConsumerWarpgroups),
                            Traits::kWarpgroupThreads, 0, stream>>>(p);
      return detail::cuda_status(
          cudaGetLastError(),
          fmt::format("launching {}'s combine kernel", to_string(Scheduler::kind)).c_str());
    }
  }
  return Status::success();
}

// Whether kind K's kernel runs variant V (kKindKernels), and the shape has that configuration.
template <class Set, SchedulerKind K, KernelVariant V>
constexpr bool kind_runs() {
  constexpr KindKernel k = kind_kernel(K);
  if constexpr (V == KernelVariant::Cluster)
    return k.clusters && !std::is_void_v<typename Set::Cluster>;
  else
    return k.variant == V || k.short_rows == V;
}

// Sets `out` to f(ConfigOf<Set, V>{}) when the plan's variant is V and kind K's kernel runs V
// (only those configurations are instantiated); whether it did.
template <class Set, SchedulerKind K, KernelVariant V, class F>
bool call_if_variant(KernelVariant variant, F& f, Status& out) {
  if constexpr (kind_runs<Set, K, V>()) {
    if (variant == V) {
      out = f(ConfigOf<Set, V>{});
      return true;
    }
  }
  return false;
}

// Calls f(ConfigOf<Set, V>{}) for the plan's variant V, among those kind K's kernel runs.
template <class Set, SchedulerKind K, class F>
Status with_kind_config(KernelVariant variant, F&& f) {
  using V = KernelVariant;
  Status out;
  if (call_if_variant<Set, K, V::Dense>(variant, f, out) ||
      call_if_variant<Set, K, V::Causal>(variant, f, out) ||
      call_if_variant<Set, K, V::Queued>(variant, f, out) ||
      call_if_variant<Set, K, V::Cluster>(variant, f, out))
    return out;
  return Status::error(fmt::format("the {} scheduler's kernel has no {} configuration here",
                                   to_string(K), to_string(variant)));
}

// The kinds with a kernel of their own are exactly those the switches below name.
static_assert(kind_kernel(SchedulerKind::Tile).own_kernel &&
                  kind_kernel(SchedulerKind::Queued).own_kernel &&
                  kind_kernel(SchedulerKind::LptQueued).own_kernel &&
                  kind_kernel(SchedulerKind::SplitTail).own_kernel &&
                  kind_kernel(SchedulerKind::SplitKv).own_kernel &&
                  kind_kernel(SchedulerKind::StreamK).own_kernel &&
                  !kind_kernel(SchedulerKind::Transient).own_kernel &&
                  !kind_kernel(SchedulerKind::Lpt).own_kernel &&
                  !kind_kernel(SchedulerKind::Planned).own_kernel &&
                  !kind_kernel(SchedulerKind::RaggedQueued).own_kernel,
              "kKindKernels and the launch's dispatch agree on which kinds have their own kernel");

// Calls f(config, scheduler) with the plan's configuration and the scheduler its kernel is
// instantiated with (the kind's own type, or AnyScheduler).
template <class Set, class F>
Status with_planned_kernel(const LaunchPlan& plan, F&& f) {
  const runtime::AnyScheduler& s = plan.scheduler;
  const auto with = [&](auto kind, const auto& scheduler) {
    return with_kind_config<Set, decltype(kind)::value>(
        plan.variant, [&](auto config) { return f(config, scheduler); });
  };
  using K = SchedulerKind;
  switch (s.kind) {
    case K::Tile: return with(std::integral_constant<K, K::Tile>{}, s.tile);
    case K::Queued: return with(std::integral_constant<K, K::Queued>{}, s.queued);
    case K::LptQueued: return with(std::integral_constant<K, K::LptQueued>{}, s.lpt_queued);
    // The splitting kinds only at kernel_block_n's BN (validate() refuses the others, since
    // their pieces count the kernel's blocks): no split kernel for the rest.
    case K::SplitTail:
    case K::SplitKv:
    case K::StreamK:
      if constexpr (Set::Dense::kBlockN == kernel_block_n(Set::Dense::kHeadDim)) {
        if (s.kind == K::SplitKv) return with(std::integral_constant<K, K::SplitKv>{}, s.split_kv);
        if (s.kind == K::StreamK) return with(std::integral_constant<K, K::StreamK>{}, s.stream_k);
        return with(std::integral_constant<K, K::SplitTail>{}, s.split_tail);
      } else {
        return Status::error(
            fmt::format("{} runs only the kernel's K/V blocks of kernel_block_n(head_dim) keys",
                        to_string(s.kind)));
      }
    default: return with(std::integral_constant<K, K::Transient>{}, s);  // the AnyScheduler kernel
  }
}

template <int D, int BM, int BN>
Status plan_kernel(const AttentionArgs& args, LaunchPlan& plan) {
  using Set = CheckedKernels<D, BM, BN>;
  const Workload& w = args.workload;
  bool cluster_grid = false;
  if constexpr (!std::is_void_v<typename Set::Cluster>) {
    cluster_grid = kind_kernel(w.scheduler).clusters &&
                   cluster_pairs_allowed(w, args.clusters, plan.summary.max_num_prompt_tiles,
                                         plan.grid.x) &&
                   cluster_grid_fits<typename Set::Cluster>(plan.grid.x);
  }
  plan.variant = kernel_variant(w.scheduler, w, cluster_grid);
  plan.kind_kernel = kind_kernel(w.scheduler).own_kernel;
  return with_planned_kernel<Set>(plan, [&](auto config, const auto&) {
    using Config = decltype(config);
    plan.config = Config::kName;
    plan.threads = FmhaTraits<Config>::kThreads;
    plan.shared_bytes = kSharedBytes<Config>;
    plan.cluster_ctas = Config::kClusterM;
    return Status::success();
  });
}

template <int D, int BM, int BN>
Status launch(const AttentionArgs& args, const LaunchPlan& plan) {
  return with_planned_kernel<CheckedKernels<D, BM, BN>>(
      plan, [&](auto config, const auto& scheduler) {
        return launch_with<decltype(config)>(args, plan, scheduler);
      });
}

template <int D, int BM, int BN>
Status resident_ctas_per_sm(int& out) {
  using Config = typename CheckedKernels<D, BM, BN>::Dense;
  // Asked once per process and device: the answer is the kernel's, not the workload's.
  static std::mutex asked;
  static int device_asked = -1, per_sm = 0;
  const std::lock_guard<std::mutex> lock(asked);
  int device = 0;
  if (Status s = detail::cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s) return s;
  if (device != device_asked) {
    if (Status s = allow_shared_memory<Config, runtime::AnyScheduler>(); !s) return s;
    if (Status s = detail::cuda_status(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                &per_sm, &fmha_kernel<runtime::AnyScheduler, Config>,
                FmhaTraits<Config>::kThreads, kSharedBytes<Config>),
            "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        !s)
      return s;
    device_asked = device;
  }
  out = per_sm;
  return Status::success();
}

}  // namespace tilesched::gpu::sm90
