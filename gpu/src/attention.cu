// Host side of the GPU half: argument checks, scheduler dispatch and the launch (Arguments ->
// Params happens here once, so the kernel does no host work).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "attention_kernel.cuh"
#include "cuda_status.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu {
namespace {

using detail::cuda_status;

bool supported_head_dim(u32 d) {
  return d == 64 || d == 128 || d == 256;
}

// The kernel's compile-time shape: head dim, KV block width, 16-row mma tiles per warp. BN 64 and
// two m tiles per warp for d = 64, 128 (measured against BN 32 and one m tile at d = 128, see
// docs/gpu-performance.md); d = 256 has room for one m tile's accumulators only.
template <int D, int BN, int MT>
struct KernelShape {
  static constexpr int head_dim = D;
  static constexpr int block_n = BN;
  static constexpr int m_tiles = MT;
};

// Calls f(KernelShape<...>) for the workload's head dim (validated first).
template <class F>
Status with_head_dim(u32 d, F&& f) {
  switch (d) {
    case 64: return f(KernelShape<64, 64, 2>{});
    case 128: return f(KernelShape<128, 64, 2>{});
    case 256: return f(KernelShape<256, 64, 1>{});
    default: break;
  }
  return Status::error(fmt::format("head dim {} is not supported (64, 128 or 256)", d));
}

}  // namespace

u32 processed_tile_count(const Workload& w) {
  std::uint64_t tiles = 0;
  for (u32 len : w.q_lens) tiles += ceil_div(len, w.block_m);
  return static_cast<u32>(std::min<std::uint64_t>(tiles * w.num_q_heads, kU32Limit));
}

GridDim launch_grid(const Workload& w) {
  const std::vector<u32> offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(offsets.data());
  return with_scheduler(w, AtomicCounter{},
                        [&](const auto& sched) { return sched.grid_dim(summary); });
}

Status validate(const AttentionArgs& a) {
  const Workload& w = a.workload;
  if (std::string m = w.validate(); !m.empty()) return Status::error("invalid workload: " + m);
  if (!supported_head_dim(w.head_dim))
    return Status::error(
        fmt::format("head dim {} is not supported by the GPU kernel (64, 128 or 256)", w.head_dim));
  if (w.block_m != kKernelBlockM)
    return Status::error(fmt::format(
        "BM (block_m) {} is not supported by the GPU kernel: it processes tiles of {} query rows",
        w.block_m, kKernelBlockM));
  if (w.ragged_mode != RaggedMode::Safe)
    return Status::error(
        "faithful ragged mode is simulator-only: the GPU kernel never writes "
        "rows a tile does not own (use safe mode)");
  if (a.q == nullptr || a.k == nullptr || a.v == nullptr)
    return Status::error("Q, K and V must be device pointers (one of them is null)");
  if (a.o == nullptr) return Status::error("O must be a device pointer (it is null)");
  if (a.lse == nullptr) return Status::error("LSE must be a device pointer (it is null)");
  if (!w.padded && (a.q_row_offsets == nullptr || a.kv_row_offsets == nullptr))
    return Status::error(
        "a ragged batch needs device row-offset arrays for Q and KV "
        "(B+1 prefix sums); one of them is null");
  if (!std::isfinite(a.softmax_scale)) return Status::error("softmax scale must be finite");
  if (w.scheduler == SchedulerKind::Queued && a.queue_counter == nullptr)
    return Status::error("the queued scheduler needs a device counter (queue_counter is null)");
  if (a.trace.events != nullptr) {
    if (a.trace.count == nullptr)
      return Status::error("trace recording needs a device event count (trace.count is null)");
    const u32 need = processed_tile_count(w);
    if (a.trace.capacity < need)
      return Status::error(fmt::format("trace buffer holds {} events but the workload has {} tiles",
                                       a.trace.capacity, need));
  }
  if (w.scheduler == SchedulerKind::Transient) {
    const GridDim g = launch_grid(w);
    if (g.y > 65535 || g.z > 65535)
      return Status::error(
          fmt::format("transient grid ({}, {}, {}) exceeds CUDA's limit of 65535 blocks in y and z",
                      g.x, g.y, g.z));
  }
  return Status::success();
}

Status attention_forward(const AttentionArgs& a) {
  if (Status s = validate(a); !s) return s;
  const Workload& w = a.workload;
  const auto stream = static_cast<cudaStream_t>(a.stream);

  detail::KernelParams p{};
  p.q = static_cast<const detail::bf16*>(a.q);
  p.k = static_cast<const detail::bf16*>(a.k);
  p.v = static_cast<const detail::bf16*>(a.v);
  p.o = static_cast<detail::bf16*>(a.o);
  p.lse = a.lse;
  p.kv = w.kv_layout(a.kv_row_offsets);
  p.num_q_heads = w.num_q_heads;
  p.num_kv_heads = w.num_kv_heads;
  p.group = w.group_size();
  const float scale =
      a.softmax_scale > 0.f ? a.softmax_scale : 1.f / std::sqrt(static_cast<float>(w.head_dim));
  p.scale_log2 = scale * 1.4426950408889634f;
  p.causal = w.mask == Mask::Causal;
  p.trace_block_n = w.block_n;
  p.trace = a.trace;

  // The summary the device sees points at the device copy of the query row offsets.
  const TileSummary summary = w.summary(a.q_row_offsets);
  const AtomicCounter counter{a.queue_counter};

  return with_head_dim(w.head_dim, [&](auto dim) -> Status {
    constexpr int D = decltype(dim)::head_dim;
    constexpr int BN = decltype(dim)::block_n;
    constexpr int MT = decltype(dim)::m_tiles;
    constexpr int smem = detail::smem_bytes<D, BN>();
    return with_scheduler(w, counter, [&](const auto& sched) -> Status {
      using Sched = std::decay_t<decltype(sched)>;
      auto* kernel = &detail::attention_kernel<Sched, D, BN, MT>;
      if (Status s = cuda_status(
              cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
              "cudaFuncSetAttribute(max dynamic shared memory)");
          !s)
        return s;
      u32 counter_value = 0;
      u32* counter_ptr = nullptr;
      if constexpr (Sched::kind == SchedulerKind::Queued) {
        counter_value = sched.counter_start();
        counter_ptr = a.queue_counter;
      }
      if (counter_ptr != nullptr || a.trace.count != nullptr) {
        detail::reset_counters<<<1, 1, 0, stream>>>(counter_ptr, counter_value, a.trace.count);
        if (Status s = cuda_status(cudaGetLastError(), "launching the counter reset"); !s) return s;
      }
      const GridDim g = sched.grid_dim(summary);
      kernel<<<dim3(g.x, g.y, g.z), detail::threads_per_cta<MT>(), smem, stream>>>(sched, summary,
                                                                                   p);
      return cuda_status(cudaGetLastError(), "launching the attention kernel");
    });
  });
}

Status resident_ctas(const Workload& w, u32& out) {
  int device = 0, sms = 0, per_sm = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s) return s;
  if (Status s = cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                             "cudaDeviceGetAttribute(multiprocessors)");
      !s)
    return s;
  return with_head_dim(w.head_dim, [&](auto dim) -> Status {
    constexpr int D = decltype(dim)::head_dim;
    constexpr int BN = decltype(dim)::block_n;
    constexpr int MT = decltype(dim)::m_tiles;
    constexpr int smem = detail::smem_bytes<D, BN>();
    auto* kernel = &detail::attention_kernel<runtime::TileScheduler, D, BN, MT>;
    if (Status s = cuda_status(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
            "cudaFuncSetAttribute(max dynamic shared memory)");
        !s)
      return s;
    if (Status s = cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                                   &per_sm, kernel, detail::threads_per_cta<MT>(), smem),
                               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        !s)
      return s;
    out = static_cast<u32>(std::max(1, per_sm) * sms);
    return Status::success();
  });
}

Status device_info(std::string& name, int& multiprocessors) {
  int device = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s) return s;
  cudaDeviceProp prop{};
  if (Status s = cuda_status(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"); !s)
    return s;
  name = prop.name;
  multiprocessors = prop.multiProcessorCount;
  return Status::success();
}

}  // namespace tilesched::gpu
