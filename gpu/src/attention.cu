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
#include "tilesched/schedule_plan.hpp"

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

}  // namespace

u32 processed_tile_count(const Workload& w) {
  const std::uint64_t n = splits_tiles(w.scheduler) && w.validate().empty()
                              ? split_counts(w).pieces
                              : w.valid_tile_count();
  return static_cast<u32>(std::min<std::uint64_t>(n, kU32Limit));
}

SplitWorkspaceLayout split_workspace_layout(const Workload& w) {
  SplitWorkspaceLayout l;
  if (!splits_tiles(w.scheduler) || !w.validate().empty()) return l;
  const std::size_t warpgroups = std::max<u32>(w.block_m / 64, 1);
  // Per consumer thread: its head_dim / 2 accumulators, then its two rows' max and sum.
  l.slot_floats = warpgroups * 128 * (w.head_dim / 2 + 4);
  l.slots = split_counts(w).slots;
  return l;
}

Status check_kernel_support(const Workload& w) {
  // A decode tile holds kMaxDecodeTokens rows for each query head of a KV head's group.
  if (w.decoding && w.decode_tile_rows() > w.block_m)
    return Status::error(fmt::format(
        "a decode tile holds {} new tokens for each of a KV head's {} query heads, {} rows, but "
        "the kernel's tiles of BM (block_m) {} rows hold the tokens of {}: the GPU kernel "
        "decodes at most that many query heads per KV head (simulate larger groups with "
        "`tilesched sim --decode`)",
        kMaxDecodeTokens, w.group_size(), w.decode_tile_rows(), w.block_m,
        w.block_m / kMaxDecodeTokens));
  return Status::success();
}

namespace {

// The workload and the kernel's shapes: what needs no buffer.
Status validate_workload(const AttentionArgs& a) {
  const Workload& w = a.workload;
  if (std::string m = w.validate(); !m.empty()) return Status::error("invalid workload: " + m);
  if (!supported_head_dim(w.head_dim))
    return Status::error(
        fmt::format("head dim {} is not supported by the GPU kernel (64, 128 or 256)", w.head_dim));
  if (Status s = with_kernel(w.head_dim, w.block_m, launch_block_n(a),
                             [](auto, auto, auto) { return Status::success(); });
      !s)
    return s;
  if (Status s = check_kernel_support(w); !s) return s;
  if (w.ragged_mode != RaggedMode::Safe)
    return Status::error(
        "faithful ragged mode is simulator-only: the GPU kernel never writes "
        "rows a tile does not own (use safe mode)");
  // The TMA addresses rows with signed 32-bit coordinates (padded batches count B * S_max rows).
  if (w.total_q_rows() >= (1u << 31) || w.total_kv_rows() >= (1u << 31))
    return Status::error("Q and K/V must have fewer than 2^31 rows each for the GPU kernel");
  if (!a.plan.has_arrays_for(w.scheduler))
    return Status::error(
        fmt::format("the {} scheduler needs the device copies of its schedule plan (plan is empty)",
                    to_string(w.scheduler)));
  if (needs_schedule_plan(w.scheduler) && a.plan.tile_count != w.valid_tile_count())
    return Status::error(
        fmt::format("the {} scheduler's plan hands out {} tiles but the workload has {}",
                    to_string(w.scheduler), a.plan.tile_count, w.valid_tile_count()));
  return Status::success();
}

// Q, K, V, O, LSE and the row offsets: present and aligned.
Status validate_tensors(const AttentionArgs& a) {
  if (a.q == nullptr || a.k == nullptr || a.v == nullptr)
    return Status::error("Q, K and V must be device pointers (one of them is null)");
  if (a.o == nullptr) return Status::error("O must be a device pointer (it is null)");
  if (a.lse == nullptr) return Status::error("LSE must be a device pointer (it is null)");
  if (!aligned_16(a.q) || !aligned_16(a.k) || !aligned_16(a.v))
    return Status::error(
        "Q, K and V must be 16-byte aligned (the kernel loads them with the tensor memory "
        "accelerator)");
  if (!a.workload.padded && (a.q_row_offsets == nullptr || a.kv_row_offsets == nullptr))
    return Status::error(
        "a ragged batch needs device row-offset arrays for Q and KV "
        "(B+1 prefix sums); one of them is null");
  if (!std::isfinite(a.softmax_scale)) return Status::error("softmax scale must be finite");
  return Status::success();
}

// The splitting kinds' K/V block and workspace, and the sizes of split_kv's and stream_k's plan
// that the host knows.
Status validate_split(const AttentionArgs& a) {
  const Workload& w = a.workload;
  if (!splits_tiles(w.scheduler)) return Status::success();
  const char* kind = to_string(w.scheduler);
  const u32 block_n = launch_block_n(a);
  if (w.block_n != kernel_block_n(w.head_dim))
    return Status::error(fmt::format(
        "{} splits tiles in the kernel's KV blocks: give BN (block_n) {} at head dim {}, not {}",
        kind, kernel_block_n(w.head_dim), w.head_dim, w.block_n));
  if (block_n != kernel_block_n(w.head_dim))
    return Status::error(fmt::format(
        "{} runs the kernel's K/V blocks of {} keys at head dim {} (its pieces count them): "
        "kernel_block_n {} is not supported with it",
        kind, kernel_block_n(w.head_dim), w.head_dim, block_n));
  if (split_workspace_bytes(w) > 0 &&
      (a.split_workspace == nullptr || !aligned_16(a.split_workspace)))
    return Status::error(fmt::format(
        "{} needs a 16-byte aligned device workspace of split_workspace_bytes() = {} bytes "
        "(split_workspace is {})",
        kind, split_workspace_bytes(w), a.split_workspace == nullptr ? "null" : "misaligned"));
  // The plan's arrays live on the device; their counts are host values. A plan of another
  // workload would walk past the arrays or the workspace.
  const SplitArrays& plan = a.plan.split;
  if (plan.split_tile_count > w.valid_tile_count())
    return Status::error(
        fmt::format("the {} scheduler's plan lists {} split tiles but the workload has {} tiles",
                    kind, plan.split_tile_count, w.valid_tile_count()));
  if (w.scheduler == SchedulerKind::SplitKv) {
    const std::uint64_t pieces = split_counts(w).pieces;
    if (plan.piece_count != pieces)
      return Status::error(fmt::format(
          "the split_kv scheduler's plan hands out {} pieces but the workload's chunks of {} KV "
          "blocks make {}",
          plan.piece_count, w.split_kv_blocks, pieces));
  }
  if (w.scheduler == SchedulerKind::StreamK) {
    const std::uint64_t ranges = stream_k_range_count(w, w.total_kv_blocks());
    if (plan.ranges != ranges)
      return Status::error(fmt::format(
          "the stream_k scheduler's plan cuts {} ranges, but {} CTAs over the workload's {} KV "
          "blocks make {}",
          plan.ranges, w.num_ctas, w.total_kv_blocks(), ranges));
    if (ranges > 0 && plan.split_tile_count > ranges - 1)
      return Status::error(fmt::format(
          "the stream_k scheduler's plan lists {} split tiles, more than its {} ranges can cut",
          plan.split_tile_count, ranges));
  }
  return Status::success();
}

// A paged KV cache: a page table that covers every sequence (pages of any size: Problem::page_rows).
Status validate_pages(const AttentionArgs& a) {
  const Workload& w = a.workload;
  const KvPages& p = a.pages;
  if (w.page_size == 0) {
    if (p.page_table != nullptr)
      return Status::error(
          "pages.page_table is given but the workload's page_size is 0 (no paging): give the page "
          "size");
    return Status::success();
  }
  if (p.page_table == nullptr)
    return Status::error("a paged KV cache needs a device page table (pages.page_table is null)");
  if (reinterpret_cast<std::uintptr_t>(p.page_table) % alignof(std::int32_t) != 0)
    return Status::error("pages.page_table must be 4-byte aligned");
  if (p.max_pages_per_seq < w.max_pages_per_seq())
    return Status::error(fmt::format(
        "the page table's rows hold {} pages (pages.max_pages_per_seq) but a sequence of {} keys "
        "needs {} pages of {}",
        p.max_pages_per_seq, w.max_key_len(), w.max_pages_per_seq(), w.page_size));
  if (p.num_pages == 0) return Status::error("a paged KV cache needs at least one page");
  if (std::uint64_t(p.num_pages) * w.page_size >= (1ull << 31))
    return Status::error(
        fmt::format("{} pages of {} keys exceed the kernel's 2^31 rows of K and V", p.num_pages,
                    w.page_size));
  if (a.clusters == ClusterPolicy::Always)
    return Status::error(
        "clusters of two CTAs share K/V blocks of contiguous keys; a paged KV cache runs without "
        "them (clusters auto or never)");
  return Status::success();
}

// The counter, launch_done and the trace's words.
Status validate_words(const AttentionArgs& a) {
  const Workload& w = a.workload;
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
  return Status::success();
}

// The scheduler of the arguments' workload over the device's words and plan, the summary over
// the device copy of the query row offsets, and the grid: a plan's scheduler fields.
Status plan_schedule(const AttentionArgs& a, LaunchPlan& plan) {
  const Workload& w = a.workload;
  plan.summary = w.summary(a.q_row_offsets);
  plan.scheduler = with_scheduler(w, SchedulerInputs{AtomicCounter{a.queue_counter}, a.plan},
                                  [](const auto& s) { return runtime::AnyScheduler(s); });
  plan.grid = plan.scheduler.grid_dim(plan.summary);
  plan.counter_start = plan.scheduler.counter_start();
  if (plan.grid.y > 65535 || plan.grid.z > 65535)
    return Status::error(
        fmt::format("{} grid ({}, {}, {}) exceeds CUDA's limit of 65535 blocks in y and z",
                    to_string(w.scheduler), plan.grid.x, plan.grid.y, plan.grid.z));
  return Status::success();
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

// The counter, launch_done and the trace's count need setting unless the caller says they are
// set (launch_ready: the last launch, with launch_done, left them so). launch_done too: the
// kernel's last CTA is the one that brings it from 0 to the grid's size.
Status reset_launch_words(const AttentionArgs& a, const LaunchPlan& plan) {
  if (a.launch_ready) return Status::success();
  u32* counter = takes_from_counter(plan.scheduler.kind) ? a.queue_counter : nullptr;
  u32* trace_count = a.trace.events != nullptr ? a.trace.count : nullptr;
  if (counter == nullptr && a.launch_done == nullptr && trace_count == nullptr)
    return Status::success();
  reset_counters<<<1, 1, 0, static_cast<cudaStream_t>(a.stream)>>>(
      counter, plan.counter_start, a.launch_done, trace_count,
      trace_count != nullptr ? a.trace.last_count : nullptr);
  return cuda_status(cudaGetLastError(), "launching the counter reset");
}

// Every check but the scheduler's grid (plan_schedule).
Status validate_arguments(const AttentionArgs& a) {
  for (Status (*check)(const AttentionArgs&) :
       {validate_workload, validate_tensors, validate_split, validate_pages, validate_words})
    if (Status s = check(a); !s) return s;
  return Status::success();
}

}  // namespace

Status validate(const AttentionArgs& a) {
  if (Status s = validate_arguments(a); !s) return s;
  LaunchPlan plan;
  return plan_schedule(a, plan);
}

Status plan_launch(const AttentionArgs& a, LaunchPlan& out) {
  if (Status s = validate_arguments(a); !s) return s;
  const Workload& w = a.workload;
  LaunchPlan plan;
  plan.head_dim = w.head_dim;
  plan.block_m = w.block_m;
  plan.block_n = launch_block_n(a);
  plan.queue_counter = a.queue_counter;
  plan.q_row_offsets = a.q_row_offsets;
  plan.workload_tiles = w.valid_tile_count();
  if (Status s = plan_schedule(a, plan); !s) return s;
  if (Status s = with_kernel(w.head_dim, w.block_m, plan.block_n,
                             [&](auto dim, auto bm, auto bn) -> Status {
                               return sm90::plan_kernel<decltype(dim)::value, decltype(bm)::value,
                                                        decltype(bn)::value>(a, plan);
                             });
      !s)
    return s;
  out = plan;
  return Status::success();
}

namespace {

// A launch of arguments known to be the plan's: the buffers and words checked, the reset, the
// kernel.
Status launch_plan_checked(const AttentionArgs& a, const LaunchPlan& plan) {
  if (Status s = validate_tensors(a); !s) return s;
  if (Status s = validate_words(a); !s) return s;
  if (Status s = reset_launch_words(a, plan); !s) return s;
  return with_kernel(
      plan.head_dim, plan.block_m, plan.block_n, [&](auto dim, auto bm, auto bn) -> Status {
        return sm90::launch<decltype(dim)::value, decltype(bm)::value, decltype(bn)::value>(a,
                                                                                          plan);
      });
}

Status check_plan_not_empty(const LaunchPlan& plan) {
  if (plan.threads == 0) return Status::error("the launch plan is empty (plan_launch makes one)");
  return Status::success();
}

}  // namespace

Status launch_planned(const AttentionArgs& a, const LaunchPlan& plan) {
  const Workload& w = a.workload;
  if (Status s = check_plan_not_empty(plan); !s) return s;
  if (plan.head_dim != w.head_dim || plan.block_m != w.block_m ||
      plan.scheduler.kind != w.scheduler || plan.queue_counter != a.queue_counter ||
      plan.q_row_offsets != a.q_row_offsets || plan.workload_tiles != w.valid_tile_count())
    return Status::error(
        "the launch plan was made for other arguments (another workload, counter or row "
        "offsets): make it again with plan_launch");
  return launch_plan_checked(a, plan);
}

Status launch_planned_same_workload(const AttentionArgs& a, const LaunchPlan& plan) {
  if (Status s = check_plan_not_empty(plan); !s) return s;
  return launch_plan_checked(a, plan);
}

Status attention_forward(const AttentionArgs& a) {
  LaunchPlan plan;
  if (Status s = plan_launch(a, plan); !s) return s;
  return launch_planned(a, plan);
}

const char* to_string(ClusterPolicy c) {
  switch (c) {
    case ClusterPolicy::Auto: return "auto";
    case ClusterPolicy::Never: return "never";
    case ClusterPolicy::Always: return "always";
  }
  return "?";
}

const char* to_string(KernelVariant v) {
  switch (v) {
    case KernelVariant::Dense: return "dense";
    case KernelVariant::Causal: return "causal";
    case KernelVariant::Queued: return "queued";
    case KernelVariant::Cluster: return "cluster";
  }
  return "?";
}

std::string LaunchPlan::describe() const {
  const std::string clusters =
      cluster_ctas > 1 ? fmt::format(" in clusters of {} sharing each K/V load", cluster_ctas) : "";
  const std::string counter =
      takes_from_counter(scheduler.kind) ? fmt::format(", counter from {}", counter_start) : "";
  return fmt::format(
      "kernel: d {}, BM {}, BN {}, configuration {} ({}), {}'s {} kernel; {} threads, {} bytes "
      "of shared memory per CTA\ngrid: {} x {} x {} CTAs{}{}",
      head_dim, block_m, block_n, config, to_string(variant), to_string(scheduler.kind),
      kind_kernel ? "own" : "AnyScheduler", threads, shared_bytes, grid.x, grid.y, grid.z, clusters,
      counter);
}

namespace sm90 {

KernelVariant kernel_variant(SchedulerKind kind, const Workload& w, bool cluster_grid) {
  const KindKernel k = kind_kernel(kind);
  if (k.clusters && cluster_grid) return KernelVariant::Cluster;
  return w.max_key_len() <= kShortRowKeys ? k.short_rows : k.variant;
}

bool cluster_pairs_allowed(const Workload& w, ClusterPolicy policy, u32 tiles, u32 grid) {
  if (policy == ClusterPolicy::Never || w.mask != Mask::None || w.page_size != 0 || w.decoding ||
      w.num_ctas % 2 != 0 ||
      tiles % 2 != 0 || grid % 2 != 0)
    return false;
  if (policy == ClusterPolicy::Auto && w.key_len(0) < kClusterMinKeys) return false;
  for (u32 b = 0; b < w.batch_size(); ++b)
    if (w.q_lens[b] != w.q_lens[0] || w.key_len(b) != w.key_len(0)) return false;
  return true;
}

}  // namespace sm90

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
  if (w.head_dim != 256 || splits_tiles(w.scheduler)) return bn;
  const VisibleKeys v = visible_keys(w);
  const u32 choice = v.rows > 0 && v.keys < 1024 * v.rows ? 64 : bn;
  // A block within one page is one TMA box, a block across pages one box per page piece
  // (Problem::page_rows): the other BN where only it divides the page.
  const u32 other = choice == 64 ? bn : 64;
  if (w.page_size != 0 && w.page_size % choice != 0 && w.page_size % other == 0) return other;
  return choice;
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
