// Trace recording (SPEC §7): one event per processed tile, written by the producer's trace writer
// (TraceWriter) and stamped with its start and end times by one consumer thread
// (TileTraceRecorder). Recording is a runtime choice: with no event buffer nothing is written.
#pragma once

#include <cstdint>

#include "sm90/problem.cuh"
#include "tilesched/geometry.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu::sm90 {

struct TraceParams {
  TraceBuffer buffer;
  u32 block_n = 0;  // the workload's BN: a trace's kv_blocks use it (SPEC §7)
};

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ u32 sm_id() {
  u32 id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Everything of a trace event but its start and end times (SPEC §7): which CTA, its step, the
// tile, its KV-block count in the workload's BN, the SM.
template <class Params>
__device__ __forceinline__ void fill_event_head(const Params& p, DeviceTraceEvent& e, u32 cta,
                                                u32 step, u32 linear_idx, const SeqInfo& work,
                                                const TileGeometry& g) {
  e.cta = cta;
  e.step = step;
  e.linear_idx = linear_idx;
  e.prompt_offset = work.prompt_offset;
  e.head_idx = work.head_idx;
  e.prompt_idx = work.prompt_idx;
  e.query_rows = g.rows.query_rows;
  e.kv_blocks =
      tile_cost(work.prompt_offset, g.rows.query_rows, g.seq_len, g.kv_len, tile_height(p),
                p.trace.block_n, p.softmax.causal ? Mask::Causal : Mask::None)
          .kv_blocks;
  e.kv_block_begin = 0;
  // A piece (of the splitting kinds, whose workload's BN is the kernel's: validate()) counts its
  // own blocks.
  if constexpr (kHandsOutPieces<Params>) {
    if (work.is_piece()) {
      e.kv_blocks = g.piece_blocks();
      e.kv_block_begin = g.kv_block_begin;
    }
  }
  e.sm_id = sm_id();
}

// The producer warpgroup's trace writer (its thread 32, while recording): at each hand-off it
// claims the tile's event slot, publishes it beside the tile (trace_slot[slot]) and arrives on
// the hand-off as a second producer (the mbarrier then counts two arrivals), then writes the
// event but its times: the consumers write only the times.
template <class Params>
class TraceWriter {
 public:
  __device__ TraceWriter(const Params& p, bool writer)
      : p_(p),
        active_(p.trace.buffer.events != nullptr && writer),
        cta_(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)) {}

  __device__ __forceinline__ bool active() const { return active_; }

  // The writer's part of one hand-off: commit(), its arrive on the slot's mbarrier, releases
  // trace_slot[slot] as thread 0's does the scheduler's slot.
  template <class Commit>
  __device__ __forceinline__ void hand_off(u32* trace_slot, u32 slot, const Optional<SeqInfo>& work,
                                           u32 linear_idx, Commit&& commit) {
    if (!active_) return;
    u32 event = 0;
    if (work) {
      event = atomicAdd(p_.trace.buffer.count, 1u);
      trace_slot[slot] = event;
    }
    commit();
    if (work) {
      if (event < p_.trace.buffer.capacity)
        fill_event_head(p_, p_.trace.buffer.events[event], cta_, step_, linear_idx, *work,
                        tile_geometry(p_, *work));
      ++step_;
    }
  }

 private:
  const Params& p_;
  bool active_;
  u32 cta_;
  u32 step_ = 0;
};

// Trace recording is split between the roles so that the consumers, whose every stall delays
// their GEMMs (and through the ping-pong the other warpgroup's), do as little as possible. The
// producer warpgroup's thread 32 (the trace writer, TraceWriter) claims each tile's event slot
// with an atomic, writes the event but its times, and publishes the slot beside the tile in the
// hand-off. One consumer thread (the recorder) takes the slot when its warpgroup receives the
// tile and stores the tile's start time (when the warpgroup begins it) and end time (after the
// epilogue's stores), each with one 8-byte store. Before this split the recorder claimed and
// filled the event itself: 2-4 % at d = 128 seq <= 2048 against 1-2 % now
// (docs/gpu-performance.md, "Trace recording").
template <class Params>
class TileTraceRecorder {
 public:
  __device__ TileTraceRecorder(const Params& p, bool recorder)
      : p_(p), active_(p.trace.buffer.events != nullptr && recorder) {}

  // The slot published with the tile just received (read before the hand-off slot is released).
  // Every consumer thread keeps the slots, recorder or not, and only the stores depend on
  // active_: slots updated under a per-thread condition made ptxas treat the whole tile loop as
  // divergent, and it then built every wgmma descriptor in ordinary registers and moved it to
  // uniform ones before each HGMMA (48 R2UR per block at d = 128).
  __device__ __forceinline__ void receive(const u32& published_slot) {
    next_slot_ = published_slot;
  }
  // The received tile begins.
  __device__ __forceinline__ void stamp_start() {
    slot_ = next_slot_;
    if (active_ && slot_ < p_.trace.buffer.capacity)
      p_.trace.buffer.events[slot_].start_ns = global_timer_ns();
  }
  __device__ __forceinline__ void stamp_end() {
    if (active_ && slot_ < p_.trace.buffer.capacity)
      p_.trace.buffer.events[slot_].end_ns = global_timer_ns();
  }

 private:
  const Params& p_;
  bool active_;
  u32 slot_ = 0;       // the current tile's event
  u32 next_slot_ = 0;  // the last received tile's (one ahead with kPrefetchTile)
};

// Epilogue, first part: each row's sum across its quad, O / rowsum as bf16 and LSE = ln(sum
// exp(scale s)) = (max + log2 sum) ln 2 stored for the rows the tile owns (the rest of a partial
// tile's BM rows belong to another sequence or lie past the tensor). thread_row is the thread's

}  // namespace tilesched::gpu::sm90
