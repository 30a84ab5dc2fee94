// Host side of the GPU half: argument checks, scheduler dispatch and the launch (Arguments ->
// Params happens here once, so the kernel does no host work). The kernel itself is the
// warp-specialized sm90 kernel of sm90/, one translation unit per head dim.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda_status.hpp"
#include "sm90/launch.hpp"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu {
namespace {

using detail::cuda_status;

bool supported_head_dim(u32 d) {
#define TILESCHED_HEAD_DIM(D, BM, BN) \
  if (d == (D)) return true;
  TILESCHED_SM90_KERNELS(TILESCHED_HEAD_DIM)
#undef TILESCHED_HEAD_DIM
  return false;
}

// Calls f(std::integral_constant<int, D>{}, std::integral_constant<int, BM>{},
// std::integral_constant<int, BN>{}) for the kernel of head dim d, tile height bm and K/V blocks
// of bn keys: one instantiation each (TILESCHED_SM90_KERNELS lists them), everything else is a
// runtime value.
template <class F>
Status with_kernel(u32 d, u32 bm, u32 bn, F&& f) {
  using std::integral_constant;
  if (!supported_head_dim(d))
    return Status::error(fmt::format("head dim {} is not supported (64, 128 or 256)", d));
  bool bm_runs = false;
#define TILESCHED_DISPATCH(D, BM, BN)                                     \
  if (d == (D) && bm == (BM)) {                                           \
    bm_runs = true;                                                       \
    if (bn == (BN))                                                       \
      return f(integral_constant<int, D>{}, integral_constant<int, BM>{}, \
               integral_constant<int, BN>{});                             \
  }
  TILESCHED_SM90_KERNELS(TILESCHED_DISPATCH)
#undef TILESCHED_DISPATCH
  if (!bm_runs)
    return Status::error(fmt::format(
        "BM (block_m) {} is not supported by the GPU kernel at head dim {}: it runs tiles of {} "
        "query rows",
        bm, d, fmt::join(kernel_block_ms(d), " or ")));
  return Status::error(fmt::format(
      "kernel_block_n {} is not supported by the GPU kernel at head dim {}: its K/V blocks are {} "
      "keys",
      bn, d, fmt::join(kernel_block_ns(d), " or ")));
}

// The K/V block the launch runs: the caller's, or recommended_block_n's.
u32 launch_block_n(const AttentionArgs& a) {
  return a.kernel_block_n != 0 ? a.kernel_block_n : recommended_block_n(a.workload);
}

// A batch's query rows and the keys they see in all (row i of a causal sequence, bottom-right,
// sees min(kv, i + kv - q + 1)): keys / rows is the average a row sees.
struct VisibleKeys {
  std::uint64_t rows = 0, keys = 0;
};
VisibleKeys visible_keys(const Workload& w) {
  VisibleKeys v;
  for (u32 b = 0; b < w.batch_size(); ++b) {
    const std::uint64_t q = w.q_lens[b], kv = w.key_len(b);
    v.rows += q;
    if (w.mask != Mask::Causal)
      v.keys += q * kv;
    else if (kv >= q)
      v.keys += q * (kv - q + 1) + q * (q - 1) / 2;
    else
      v.keys += kv * (kv + 1) / 2;
  }
  return v;
}

bool aligned_16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// Sets a launch's words before it (a kernel, not a memset: counter_start() is not a byte
// pattern): a counter scheduler's counter, launch_done, the trace's event count and last_count,
// each where given. Stream-ordered, so graph-capturable.
__global__ void reset_counters(u32* counter, u32 counter_value, u32* done, u32* trace_count,
                               u32* trace_last_count) {
  if (counter != nullptr) *counter = counter_value;
  if (done != nullptr) *done = 0;
  if (trace_count != nullptr) *trace_count = 0;
  if (trace_last_count != nullptr) *trace_last_count = 0;
}

}  // namespace

u32 processed_tile_count(const Workload& w) {
  const std::uint64_t n = w.scheduler == SchedulerKind::SplitTail && w.validate().empty()
                              ? split_tail_scheduler(w).work_items()
                              : w.valid_tile_count();
  return static_cast<u32>(std::min<std::uint64_t>(n, kU32Limit));
}

SplitWorkspaceLayout split_workspace_layout(const Workload& w) {
  SplitWorkspaceLayout l;
  if (w.scheduler != SchedulerKind::SplitTail || !w.validate().empty()) return l;
  const runtime::SplitTailScheduler s = split_tail_scheduler(w);
  const std::size_t warpgroups = std::max<u32>(w.block_m / 64, 1);
  // Per consumer thread: its head_dim / 2 accumulators, then its two rows' max and sum.
  l.slot_floats = warpgroups * 128 * (w.head_dim / 2 + 4);
  l.slots = s.tail_tiles() == 0 ? 0 : s.piece_slots();
  return l;
}

GridDim launch_grid(const Workload& w, const PlanArrays& plan) {
  const std::vector<u32> offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(offsets.data());
  return with_scheduler(w, SchedulerInputs{AtomicCounter{}, plan},
                        [&](const auto& sched) { return sched.grid_dim(summary); });
}

Status check_kernel_support(const Workload& w) {
  if (w.decoding)
    return Status::error(
        "decode workloads are not supported by the GPU kernel (it has no decode path); simulate "
        "them with `tilesched sim --decode`");
  return Status::success();
}

Status validate(const AttentionArgs& a) {
  const Workload& w = a.workload;
  if (std::string m = w.validate(); !m.empty()) return Status::error("invalid workload: " + m);
  if (!supported_head_dim(w.head_dim))
    return Status::error(
        fmt::format("head dim {} is not supported by the GPU kernel (64, 128 or 256)", w.head_dim));
  const u32 block_n = launch_block_n(a);
  if (Status s = with_kernel(w.head_dim, w.block_m, block_n,
                             [](auto, auto, auto) { return Status::success(); });
      !s)
    return s;
  if (Status s = check_kernel_support(w); !s) return s;
  if (!a.plan.has_arrays_for(w.scheduler))
    return Status::error(
        fmt::format("the {} scheduler needs the device copies of its schedule plan (plan is empty)",
                    to_string(w.scheduler)));
  if (needs_schedule_plan(w.scheduler) && a.plan.tile_count != w.valid_tile_count())
    return Status::error(
        fmt::format("the {} scheduler's plan hands out {} tiles but the workload has {}",
                    to_string(w.scheduler), a.plan.tile_count, w.valid_tile_count()));
  if (w.ragged_mode != RaggedMode::Safe)
    return Status::error(
        "faithful ragged mode is simulator-only: the GPU kernel never writes "
        "rows a tile does not own (use safe mode)");
  if (a.q == nullptr || a.k == nullptr || a.v == nullptr)
    return Status::error("Q, K and V must be device pointers (one of them is null)");
  if (a.o == nullptr) return Status::error("O must be a device pointer (it is null)");
  if (a.lse == nullptr) return Status::error("LSE must be a device pointer (it is null)");
  if (!aligned_16(a.q) || !aligned_16(a.k) || !aligned_16(a.v))
    return Status::error(
        "Q, K and V must be 16-byte aligned (the kernel loads them with the tensor memory "
        "accelerator)");
  // The TMA addresses rows with signed 32-bit coordinates (padded batches count B * S_max rows).
  if (w.total_q_rows() >= (1u << 31) || w.total_kv_rows() >= (1u << 31))
    return Status::error("Q and K/V must have fewer than 2^31 rows each for the GPU kernel");
  if (!w.padded && (a.q_row_offsets == nullptr || a.kv_row_offsets == nullptr))
    return Status::error(
        "a ragged batch needs device row-offset arrays for Q and KV "
        "(B+1 prefix sums); one of them is null");
  if (!std::isfinite(a.softmax_scale)) return Status::error("softmax scale must be finite");
  if (w.scheduler == SchedulerKind::SplitTail) {
    if (w.block_n != kernel_block_n(w.head_dim))
      return Status::error(fmt::format(
          "split_tail splits tiles in the kernel's KV blocks: give BN (block_n) {} at head dim {}, "
          "not {}",
          kernel_block_n(w.head_dim), w.head_dim, w.block_n));
    if (block_n != kernel_block_n(w.head_dim))
      return Status::error(fmt::format(
          "split_tail runs the kernel's K/V blocks of {} keys at head dim {} (its pieces count "
          "them): kernel_block_n {} is not supported with it",
          kernel_block_n(w.head_dim), w.head_dim, block_n));
    if (split_workspace_bytes(w) > 0 &&
        (a.split_workspace == nullptr || !aligned_16(a.split_workspace)))
      return Status::error(fmt::format(
          "split_tail needs a 16-byte aligned device workspace of "
          "split_workspace_bytes() = {} bytes (split_workspace is {})",
          split_workspace_bytes(w), a.split_workspace == nullptr ? "null" : "misaligned"));
  }
  if (takes_from_counter(w.scheduler) && a.queue_counter == nullptr)
    return Status::error(fmt::format(
        "the {} scheduler needs a device counter (queue_counter is null)", to_string(w.scheduler)));
  if (a.launch_ready && a.launch_done == nullptr)
    return Status::error(
        "launch_ready needs launch_done: only a launch with it leaves its words ready for the "
        "next");
  if (a.launch_ready && a.trace.events != nullptr && a.trace.last_count == nullptr)
    return Status::error(
        "launch_ready while recording needs trace.last_count: only a launch that moves the count "
        "there leaves trace.count at 0");
  if (a.launch_done != nullptr &&
      (a.launch_done == a.queue_counter || a.launch_done == a.trace.count ||
       a.launch_done == a.trace.last_count))
    return Status::error("launch_done must be a u32 of its own");
  if (a.trace.last_count != nullptr && a.trace.last_count == a.trace.count)
    return Status::error("trace.last_count must be a u32 of its own, not trace.count");
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

  // The summary the device sees points at the device copy of the query row offsets.
  const TileSummary summary = w.summary(a.q_row_offsets);
  // One kernel per head dim runs every scheduler: the kind is a runtime value (AnyScheduler).
  const runtime::AnyScheduler sched =
      with_scheduler(w, SchedulerInputs{AtomicCounter{a.queue_counter}, a.plan},
                     [](const auto& s) { return runtime::AnyScheduler(s); });
  // The counter, launch_done and the trace's count need setting unless the caller says they are
  // set (launch_ready: the last launch, with launch_done, left them so). launch_done too: the
  // kernel's last CTA is the one that brings it from 0 to the grid's size.
  const bool reset = !a.launch_ready;
  u32* counter = reset && takes_from_counter(sched.kind) ? a.queue_counter : nullptr;
  u32* done = reset ? a.launch_done : nullptr;
  u32* trace_count = reset && a.trace.events != nullptr ? a.trace.count : nullptr;
  if (counter != nullptr || done != nullptr || trace_count != nullptr) {
    reset_counters<<<1, 1, 0, stream>>>(counter, sched.counter_start(), done, trace_count,
                                        trace_count != nullptr ? a.trace.last_count : nullptr);
    if (Status s = cuda_status(cudaGetLastError(), "launching the counter reset"); !s) return s;
  }
  return with_kernel(
      w.head_dim, w.block_m, launch_block_n(a), [&](auto dim, auto bm, auto bn) -> Status {
        return sm90::launch<decltype(dim)::value, decltype(bm)::value, decltype(bn)::value>(
            a, sched, summary);
      });
}

namespace {

// The distinct tile heights (`block_ns` false) or K/V blocks (true) of a head dim's kernels, in
// the order TILESCHED_SM90_KERNELS lists them.
std::vector<u32> kernel_shapes(u32 head_dim, bool block_ns) {
  std::vector<u32> values;
  const auto add = [&](u32 d, u32 bm, u32 bn) {
    const u32 v = block_ns ? bn : bm;
    if (d == head_dim && std::find(values.begin(), values.end(), v) == values.end())
      values.push_back(v);
  };
#define TILESCHED_KERNEL_SHAPE(D, BM, BN) add(D, BM, BN);
  TILESCHED_SM90_KERNELS(TILESCHED_KERNEL_SHAPE)
#undef TILESCHED_KERNEL_SHAPE
  return values;
}

}  // namespace

std::vector<u32> kernel_block_ms(u32 head_dim) {
  return kernel_shapes(head_dim, false);
}

std::vector<u32> kernel_block_ns(u32 head_dim) {
  return kernel_shapes(head_dim, true);
}

u32 recommended_block_m(const Workload& w) {
  if (w.head_dim != 64) return w.head_dim == 128 || w.head_dim == 256 ? 128 : 0;
  // The work a 192-row tile's third warpgroup overlaps.
  const VisibleKeys v = visible_keys(w);
  return v.rows > 0 && v.keys >= 1536 * v.rows ? 192 : 128;
}

u32 recommended_block_n(const Workload& w) {
  if (!supported_head_dim(w.head_dim)) return 0;
  const u32 bn = kernel_block_n(w.head_dim);
  if (w.head_dim != 256 || w.scheduler == SchedulerKind::SplitTail) return bn;
  const VisibleKeys v = visible_keys(w);
  return v.rows > 0 && v.keys < 1024 * v.rows ? 64 : bn;
}

Status resident_ctas(const Workload& w, u32& out) {
  int device = 0, sms = 0, per_sm = 0;
  if (Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice"); !s) return s;
  if (Status s = cuda_status(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                             "cudaDeviceGetAttribute(multiprocessors)");
      !s)
    return s;
  if (Status s =
          with_kernel(w.head_dim, w.block_m, recommended_block_n(w),
                      [&](auto dim, auto bm, auto bn) -> Status {
                        return sm90::resident_ctas_per_sm<decltype(dim)::value, decltype(bm)::value,
                                                          decltype(bn)::value>(per_sm);
                      });
      !s)
    return s;
  out = static_cast<u32>(std::max(1, per_sm) * sms);
  return Status::success();
}

Status cluster_ctas(const Workload& w, u32& out) {
  out = 1;
  if (std::string m = w.validate(); !m.empty()) return Status::error("invalid workload: " + m);
  return with_kernel(
      w.head_dim, w.block_m, recommended_block_n(w), [&](auto dim, auto bm, auto bn) -> Status {
        return sm90::cluster_ctas<decltype(dim)::value, decltype(bm)::value, decltype(bn)::value>(
            w, out);
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
