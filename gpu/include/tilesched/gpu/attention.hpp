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
// an unsupported head dim). recommended_block_m picks the faster for a workload (measured,
// docs/gpu-performance.md): 192 at d = 64 when a query row sees 1536 keys or more on average
// over the batch (a causal row only those up to its diagonal), else 128; 0 for an unsupported
// head dim. (`tilesched run` and `bench` ask the simulator instead where the cost profile has
// coefficients for each tile height: it also sees the scheduler, docs/gpu-kernel.md.)
std::vector<u32> kernel_block_ms(u32 head_dim);
u32 recommended_block_m(const Workload& w);
// BN, the keys of one shared-memory K/V block, is the kernel's own: 128 at d = 64 and 128; 80 or
// 64 at d = 256 (kernel_block_ns). kernel_block_n is the long rows' BN, the one split_tail runs
// (its pieces count the kernel's blocks, so its workload's block_n must be that). Which one a
// launch runs is AttentionArgs::kernel_block_n, by default recommended_block_n (measured,
// docs/gpu-performance.md): at d = 256, 64 when a query row sees fewer than 1024 keys on average
// over the batch (as for recommended_block_m), else 80. A trace still counts KV blocks with the
// workload's block_n, so GPU and simulator traces speak of the same cost whatever BN the kernel
// uses.
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
  u32 kv_block_begin = 0;  // a split_tail piece's first KV block (0 for a whole tile)
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
  // Counter schedulers only (queued, lpt_queued, ragged_queued): one u32 of device memory.
  // attention_forward sets it to counter_start() on `stream` before every launch (a one-thread
  // kernel, which also zeroes the trace's count), so the call can be captured in a CUDA graph and
  // replayed; unless `launch_ready`.
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
  // attention_forward then launches no reset kernel before the attention kernel (about 2 us a call
  // on the H200: docs/gpu-performance.md). Needs launch_done, and trace.last_count while recording.
  // A wrong word is a wrong schedule (tiles skipped or done twice) or a wrong trace.
  // DeviceProblem sets it from its second launch on.
  bool launch_ready = false;
  // Planned schedulers only (lpt, lpt_queued, planned, ragged_queued): device copies of the
  // workload's schedule plan (common/schedule_plan.hpp; sim::plan_schedule builds the one the
  // simulator replays). DeviceProblem uploads them.
  PlanArrays plan;
  // split_tail only: split_workspace_bytes(workload) bytes of device memory, where the pieces of
  // a split tile leave their partial results for the combine kernel that attention_forward
  // launches after the attention kernel.
  void* split_workspace = nullptr;
  // The kernel's keys per K/V block: 0 runs recommended_block_n(workload); otherwise one of
  // kernel_block_ns(head_dim) (kernel_block_n's with split_tail).
  u32 kernel_block_n = 0;
  TraceBuffer trace;       // optional
  void* stream = nullptr;  // cudaStream_t; null is the legacy default stream
};

// Whether the kernel runs this kind of workload at all: every scheduler, but no decode workload
// (the kernel has no decode path; the simulator has). Needs no device, so a tool can refuse before
// it touches one.
Status check_kernel_support(const Workload& w);

// Checks everything attention_forward checks, without touching the device.
Status validate(const AttentionArgs& args);

// Validates, resets the queue counter / trace count on the stream and launches. Never launches on
// bad arguments. Asynchronous: errors inside the kernel surface at the next synchronisation.
Status attention_forward(const AttentionArgs& args);

// Tiles the schedulers will process: sum over sequences of ceil(q_len / BM) * num_q_heads; for
// split_tail the full waves' tiles and the tail's pieces. The capacity a TraceBuffer needs.
u32 processed_tile_count(const Workload& w);

// The device memory split_tail needs (AttentionArgs::split_workspace): per piece slot the
// partial state of BM rows in fp32, as the consumer threads hold it (each thread's unscaled O,
// its two rows' max and its part of their sums). Nothing for the other schedulers.
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

// CTAs per cluster the launch of `w` (valid, its num_ctas set) runs in: 2 where d = 128's tile
// kernel runs dense rows of one length from 8192 keys in pairs of CTAs that share each K/V load
// (TMA multicast; TILESCHED_GPU_CLUSTER=0 turns that off, =1 takes it wherever the rows allow:
// docs/gpu-kernel.md), else 1.
Status cluster_ctas(const Workload& w, u32& out);

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
  // launched_ctas is the scheduler's grid size for `w` (and its schedule plan, if it has one).
  Status download(const Workload& w, Trace& out, const PlanArrays& plan = {}) const;
  // The raw events in slot order (for tests that look at duplicates).
  Status download_raw(std::vector<DeviceTraceEvent>& out) const;

 private:
  TraceBuffer buffer_{};
};

// The grid the kernel launches for a workload (the scheduler's grid_dim). A planned scheduler
// needs its plan (only its tile count is read: device pointers are fine).
GridDim launch_grid(const Workload& w, const PlanArrays& plan = {});

}  // namespace tilesched::gpu
