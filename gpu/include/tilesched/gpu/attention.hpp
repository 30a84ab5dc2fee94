// The GPU half's public host API: one call runs the persistent flash-attention forward kernel on a
// workload, driven by the scheduler the workload names (common/). Includers need no CUDA headers:
// device buffers are plain pointers and the stream is an opaque cudaStream_t passed as void*.
//
// Layouts (row-major, bf16 unless said otherwise):
//   Q, O  [total_q_rows][num_q_heads][head_dim]     LSE (fp32) [total_q_rows][num_q_heads]
//   K, V  [total_kv_rows][num_kv_heads][head_dim]
// Padded batch: sequence b starts at row b*S_max (keys: b*max_key_len). Ragged batch: device arrays
// of B+1 exclusive prefix sums (Workload::q_row_offsets()/kv_row_offsets() uploaded as u32).
// Causal masks are bottom-right aligned: query row i of a sequence sees keys j <= i + kv_len -
// q_len. LSE is the natural log of sum_j exp(scale * s_j).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/any_scheduler.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::gpu {

struct Status {
  bool ok = true;
  std::string message;  // empty when ok; otherwise one sentence naming the problem

  explicit operator bool() const { return ok; }
  static Status success() { return {}; }
  static Status error(std::string m) { return Status{false, std::move(m)}; }
};

// The kernel's tile sizes. BM is the workload's block_m (the scheduler's tile shape): the kernel
// runs tiles of 128 query rows at every head dim and of 192 at d = 64 (kernel_block_ms; none for
// an unsupported head dim). recommended_block_m picks the faster for a workload (measured:
// docs/gpu-performance.md, "192-row tiles at d = 64"): 192 at d = 64 when a query row sees 1536 keys or more on average
// over the batch (a causal row only those up to its diagonal), else 128; 0 for an unsupported
// head dim. (`tilesched run` and `bench` ask the simulator instead where the cost profile has
// coefficients for each tile height: it also sees the scheduler, docs/gpu-kernel.md.)
std::vector<u32> kernel_block_ms(u32 head_dim);
u32 recommended_block_m(const Workload& w);
// BN, the keys of one shared-memory K/V block, is the kernel's own: 128 at d = 64 and 128; 80 or
// 64 at d = 256 (kernel_block_ns). kernel_block_n is the long rows' BN, the one the splitting
// kinds (split_tail, split_kv, stream_k) run (their pieces count the kernel's blocks, so their
// workload's block_n must be that). Which one a
// launch runs is AttentionArgs::kernel_block_n, by default recommended_block_n (measured:
// docs/gpu-performance.md, "K/V blocks at d = 256"): at d = 256, 64 when a query row sees fewer
// than 1024 keys on average over the batch (as for recommended_block_m), else 80; with a paged
// cache, the other of the two where only it divides the page size. A trace still counts KV blocks
// with the workload's block_n, so GPU and simulator traces speak of the same cost whatever BN the
// kernel uses.
std::vector<u32> kernel_block_ns(u32 head_dim);
u32 recommended_block_n(const Workload& w);  // 0 for an unsupported head dim
constexpr u32 kernel_block_n(u32 head_dim) {
  return head_dim == 256 ? 80 : 128;
}

// One processed tile as the kernel records it (thread 0 of the CTA, %globaltimer in ns).
struct DeviceTraceEvent {
  u32 cta = 0;
  u32 step = 0;
  u32 linear_idx = 0;
  u32 prompt_offset = 0;
  u32 head_idx = 0;
  u32 prompt_idx = 0;
  u32 query_rows = 0;
  u32 kv_blocks = 0;
  u32 sm_id = 0;
  u32 kv_block_begin = 0;  // a piece's first KV block (the splitting kinds; 0 for a whole tile)
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
};

// Where the kernel writes trace events (device memory). Recording is off when `events` is null.
// `count` (one u32) is reset by attention_forward on the stream before the launch (unless
// AttentionArgs::launch_ready); the kernel claims slots with atomicAdd, so a tile processed twice
// shows up as an extra event. `last_count` (optional, one more u32): with
// AttentionArgs::launch_done the kernel's last CTA moves the launch's count there and leaves
// `count` at 0 for the next launch; attention_forward's reset sets both to 0. The launch's events
// are then *count + *last_count either way (TraceRecorder reads them so).
struct TraceBuffer {
  DeviceTraceEvent* events = nullptr;
  u32 capacity = 0;
  u32* count = nullptr;
  u32* last_count = nullptr;
};

// Whether the tile kind's kernel may run in clusters of two CTAs that share their K/V loads (TMA
// multicast). It needs a cluster's two CTAs to run tiles of one head and the same keys at all
// times: dense rows of one length, an even tile count per sequence and an even C, and the
// device holding the whole grid's clusters at once. Auto takes it there from 8192 keys (where it
// measured faster; docs/gpu-performance.md, "Clusters of two CTAs"), Always wherever the rows
// allow it, Never nowhere. Only d = 128 has a cluster kernel.
enum class ClusterPolicy : std::uint8_t { Auto, Never, Always };

// A paged KV cache (Workload::page_size > 0): K and V are [num_pages][page_size][num_kv_heads]
// [head_dim] and row b of the page table names sequence b's pages in key order, as vLLM and
// FlashAttention lay them out. kv_row_offsets still gives each sequence's key count (B+1 prefix
// sums of the cache lengths, e.g. FlashAttention's cu_seqlens_k); a padded batch has
// max_key_len keys in every sequence. The kernel loads a K/V block with one TMA copy from one
// page, so page_size must be a multiple of the launch's K/V block (kernel_block_ns; at d = 256
// that makes a multiple of 64 run BN 64). Entries must lie in [0, num_pages): the kernel does not
// read the table on the host, and a page past the cache reads as zeros.
struct KvPages {
  const std::int32_t* page_table = nullptr;  // device, [batch][max_pages_per_seq]
  u32 max_pages_per_seq = 0;                 // the table's row length (its stride)
  u32 num_pages = 0;                         // pages in K and in V
};
const char* to_string(ClusterPolicy c);

struct AttentionArgs {
  Workload workload;  // shapes, mask, BM/BN, scheduler, schedule, num_ctas (validated per call)
  const void* q = nullptr;  // bf16, device
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;                    // bf16, device
  float* lse = nullptr;                 // fp32, device
  const u32* q_row_offsets = nullptr;   // device, B+1 entries; ragged batches only
  const u32* kv_row_offsets = nullptr;  // device, B+1 entries; ragged batches only
  float softmax_scale = 0.f;            // <= 0 means 1/sqrt(head_dim)
  // Counter schedulers only (queued, lpt_queued, ragged_queued, split_kv): one u32 of device
  // memory. attention_forward sets it to counter_start() on `stream` before every launch (a
  // one-thread kernel, which also zeroes the trace's count), so the call can be captured in a
  // CUDA graph and replayed; unless `launch_ready`.
  u32* queue_counter = nullptr;
  // Optional: one u32 of device memory of its own. With it each CTA counts itself done at its
  // end and the grid's last leaves what the next launch needs: a counter scheduler's
  // queue_counter at counter_start(), while recording the trace's count moved to
  // trace.last_count and count at 0, and launch_done itself at 0. attention_forward's reset sets
  // it to 0 with the rest.
  u32* launch_done = nullptr;
  // The caller's word that the launch's words are ready: queue_counter (counter schedulers) at
  // counter_start(), launch_done at 0, and while recording trace.count at 0; as the last launch on
  // them left them when it had launch_done (and trace.last_count while recording), the same
  // counter_start() (the scheduler's CTA count, C for queued and lpt_queued) and ran to completion.
  // launch_planned then launches no reset kernel before the attention kernel (about 2 us a call
  // on the H200: docs/gpu-performance.md, "No reset kernel"). Needs launch_done, and trace.last_count while recording.
  // A wrong word is a wrong schedule (tiles skipped or done twice) or a wrong trace.
  // DeviceProblem sets it from its second launch on.
  bool launch_ready = false;
  // Planned schedulers only (lpt, lpt_queued, planned, ragged_queued, split_kv, stream_k): device
  // copies of the workload's schedule plan (common/schedule_plan.hpp; sim::plan_schedule builds
  // the one the simulator replays), with its counts (PlanArrays::tile_count, SplitArrays'
  // split_tile_count and ranges) as host values. DeviceProblem uploads them.
  PlanArrays plan;
  // The splitting kinds only (split_tail, split_kv, stream_k): split_workspace_bytes(workload)
  // bytes of device memory, where the pieces of a split tile leave their partial results for the
  // combine kernel that attention_forward launches after the attention kernel.
  void* split_workspace = nullptr;
  // The kernel's keys per K/V block: 0 runs recommended_block_n(workload); otherwise one of
  // kernel_block_ns(head_dim) (kernel_block_n's with the splitting kinds).
  u32 kernel_block_n = 0;
  KvPages pages;  // paged KV cache only (workload.page_size > 0)
  ClusterPolicy clusters = ClusterPolicy::Auto;
  TraceBuffer trace;       // optional
  void* stream = nullptr;  // cudaStream_t; null is the legacy default stream
};

// Which configuration of the kernel's shape a launch runs (gpu/src/sm90/configs.hpp: one per
// shipped kernel, and the table of which scheduler kind runs which in launch.hpp).
enum class KernelVariant : std::uint8_t {
  Dense,    // the tile kind, the splitting kinds, and the kinds that run the AnyScheduler kernel
  Causal,   // lpt_queued
  Queued,   // queued, and lpt_queued where every sequence has at most 1024 keys
  Cluster,  // the tile kind in clusters of two CTAs
};
const char* to_string(KernelVariant v);

// The launch attention_forward makes for a set of arguments, decided once on the host by
// plan_launch: the kernel (shape, configuration, and whether it is the scheduler kind's own
// instantiation or the AnyScheduler one), the scheduler with its device words and plan, the grid,
// the cluster size and the counter's start. A plan stays valid for arguments with the same
// workload, scheduler words (queue_counter, plan), row offsets and cluster policy: only Q, K, V,
// O, LSE, the trace and the stream may change from one launch of it to the next.
struct LaunchPlan {
  u32 head_dim = 0;
  u32 block_m = 0;  // the kernel's tile height (the workload's BM)
  u32 block_n = 0;  // the kernel's K/V block (its own BN)
  KernelVariant variant = KernelVariant::Dense;
  const char* config = "";     // the configuration's name (configs.hpp), e.g. "D128Cluster"
  bool kind_kernel = false;    // the scheduler kind's own instantiation (else AnyScheduler's)
  runtime::AnyScheduler scheduler;
  TileSummary summary;         // with the device copy of the query row offsets
  GridDim grid;
  u32 cluster_ctas = 1;
  u32 counter_start = 0;       // a counter scheduler's first index (AnyScheduler::counter_start)
  u32 threads = 0;             // per CTA
  u32 shared_bytes = 0;        // per CTA
  // What it was planned for (launch_planned refuses other scheduler words).
  const u32* queue_counter = nullptr;
  const u32* q_row_offsets = nullptr;
  std::uint64_t workload_tiles = 0;

  // Two lines for people: the kernel, then the grid.
  std::string describe() const;
};

// Validates `args` (as validate) and decides their launch. Touches the device only to ask whether
// a cluster grid fits it (the tile kind at d = 128, where the rows allow clusters).
Status plan_launch(const AttentionArgs& args, LaunchPlan& out);

// Launches `plan` on `args`: resets the queue counter / trace count on the stream (unless
// launch_ready) and launches the kernel (and the splitting kinds' combine). `plan` must come from
// plan_launch on arguments with the same workload and scheduler words; the buffers are checked,
// the workload is not validated again.
Status launch_planned(const AttentionArgs& args, const LaunchPlan& plan);
// launch_planned for a caller that owns the arguments and their plan together and changes nothing
// of the arguments between launches but Q, K, V, O, LSE, the page table, the softmax scale,
// launch_ready, the trace and the stream (as the Python package's StepPlan does): the workload is
// not compared with the plan again, which walks the batch on every launch. The buffers and the
// words are still checked. Arguments of another workload launch a wrong schedule.
Status launch_planned_same_workload(const AttentionArgs& args, const LaunchPlan& plan);

// Whether the kernel runs this kind of workload at all: every scheduler, but no decode workload
// (the kernel has no decode path; the simulator has). Needs no device, so a tool can refuse before
// it touches one.
Status check_kernel_support(const Workload& w);

// Checks everything attention_forward checks, without touching the device.
Status validate(const AttentionArgs& args);

// plan_launch, then launch_planned. Never launches on bad arguments. Asynchronous: errors inside
// the kernel surface at the next synchronisation.
Status attention_forward(const AttentionArgs& args);

// Tiles the schedulers will process: sum over sequences of ceil(q_len / BM) * num_q_heads; for
// split_tail the full waves' tiles and the tail's pieces, for split_kv its pieces, for stream_k
// the most pieces a plan of the workload can have (split_counts: where its ranges cut depends on
// the cost model, so a launch records this many or fewer). The capacity a TraceBuffer needs.
u32 processed_tile_count(const Workload& w);

// The device memory the splitting kinds need (AttentionArgs::split_workspace): per piece slot the
// partial state of BM rows in fp32, as the consumer threads hold it (each thread's unscaled O,
// its two rows' max and its part of their sums); for stream_k as many slots as a plan of the
// workload can use (split_counts). Nothing for the other schedulers.
struct SplitWorkspaceLayout {
  std::size_t slot_floats = 0;  // floats per piece slot
  std::size_t slots = 0;
  std::size_t bytes() const { return slots * slot_floats * sizeof(float); }
};
SplitWorkspaceLayout split_workspace_layout(const Workload& w);
inline std::size_t split_workspace_bytes(const Workload& w) {
  return split_workspace_layout(w).bytes();
}

// A persistent CTA count that fills the device: SMs x CTAs of this kernel resident per SM.
Status resident_ctas(const Workload& w, u32& out);

// Name and multiprocessor count of the current device.
Status device_info(std::string& name, int& multiprocessors);

// Owns the device memory of a TraceBuffer and turns what the kernel wrote into a common Trace
// (source "gpu", times in µs relative to the earliest start, events ordered by (cta, step)).
class TraceRecorder {
 public:
  TraceRecorder() = default;
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // The events, and the two words of the count (count and last_count, both 0).
  Status allocate(u32 capacity);
  TraceBuffer buffer() const { return buffer_; }
  // Synchronises the device, copies the events back and converts them; the trace's
  // launched_ctas is the grid of `launch` (the plan of the recorded launch).
  Status download(const Workload& w, const LaunchPlan& launch, Trace& out) const;
  // The raw events in slot order (for tests that look at duplicates).
  Status download_raw(std::vector<DeviceTraceEvent>& out) const;

 private:
  TraceBuffer buffer_{};
};

}  // namespace tilesched::gpu
