// The tile hand-off between the producer warpgroup, which owns the scheduler, and the consumer
// warpgroups (SPEC §4.2): the producer publishes each tile in a slot of sidx and arrives on the
// slot's mbarrier; consumers wait on it, read the slot and release it. Every role walks the same
// tile sequence, including tiles with no work and the final "none": the producer commits every
// slot it acquires and the consumers wait for every one, so no role waits on a barrier the others
// skip.
#pragma once

#include "sm90/sync.cuh"
#include "sm90/trace.cuh"
#include "sm90/traits.cuh"
#include "tilesched/scheduler.hpp"

namespace tilesched::gpu::sm90 {

// The hand-off's words: the scheduler's slots (the published tile index) and, while recording,
// each slot's trace event.
template <class Traits>
struct HandOffWords {
  u32 sidx[Traits::kTileSlots];
  u32 trace_slot[Traits::kTileSlots];  // while recording: the event slot of the tile in sidx[slot]
};

// The producer's side: every producer thread takes part in each step (the scheduler's barrier);
// the loader, thread 0, fetches and commits the slot, and while recording the trace writer,
// thread 32, commits it too (TraceWriter).
template <class Params>
class HandOffProducer {
  using Traits = typename Params::Traits;
  using PipelineTile = typename Traits::PipelineTile;

 public:
  // `state`: where the producer stands in the hand-off (cutlass::make_producer_start_state).
  __device__ __forceinline__ HandOffProducer(const Params& p, HandOffWords<Traits>& words,
                                             PipelineTile& pipe,
                                             typename PipelineTile::PipelineState& state,
                                             bool loader)
      : p_(p),
        words_(words),
        pipe_(pipe),
        state_(state),
        loader_(loader),
        st_(p.scheduler.initial_state(words.sidx, p.summary,
                                      BlockIndex{blockIdx.x, blockIdx.y, blockIdx.z})),
        trace_(p, threadIdx.x == 32) {}

  // The next tile (the first with `first`), published to the consumers.
  __device__ __forceinline__ Optional<SeqInfo> schedule(bool first) {
    // The hand-off slot must be free: consumers have read what it held two tiles ago. Only the
    // threads that write the slot (the loader, and while recording the trace writer) poll its
    // mbarrier; the warpgroup's other threads wait for the loader at a named barrier, where a
    // waiting warp issues nothing (polling it, three idle warps executed 54 M of the 619 M
    // instructions at d = 128, seq 8192).
    if (loader_ || trace_.active()) producer_acquire(pipe_, state_, "tile hand-off (producer)");
    named_barrier_sync(kProducerBarrier, Traits::kWarpgroupThreads);
    const u32 slot = state_.index();
    const Optional<SeqInfo> work =
        first
            ? p_.scheduler.template first_work<true, SchedulerSync::Producer>(p_.summary, st_, slot)
            : p_.scheduler.template advance<true, SchedulerSync::Producer>(p_.summary, st_, slot);
    // Thread 0 wrote the slot (counter schedulers) before the named barrier inside advance; its
    // arrive releases that write to the consumers, who acquire it by waiting on the same mbarrier.
    if (loader_) pipe_.producer_commit(state_);
    trace_.hand_off(words_.trace_slot, slot, work, st_.idx, [&] { pipe_.producer_commit(state_); });
    ++state_;
    return work;
  }

 private:
  const Params& p_;
  HandOffWords<Traits>& words_;
  PipelineTile& pipe_;
  typename PipelineTile::PipelineState& state_;
  bool loader_;
  TileState st_;
  TraceWriter<Params> trace_;
};

// The consumers' side: every consumer thread waits for the slot, reads it and releases it.
template <class Params>
class HandOffConsumer {
  using Traits = typename Params::Traits;
  using PipelineTile = typename Traits::PipelineTile;

 public:
  // `state`: where the consumer stands in the hand-off (a default PipelineState).
  __device__ __forceinline__ HandOffConsumer(const Params& p, HandOffWords<Traits>& words,
                                             PipelineTile& pipe,
                                             typename PipelineTile::PipelineState& state)
      : p_(p),
        words_(words),
        pipe_(pipe),
        state_(state),
        st_(p.scheduler.initial_state(words.sidx, p.summary,
                                      BlockIndex{blockIdx.x, blockIdx.y, blockIdx.z})) {}

  // The next tile (the first with `first`) and, to the trace recorder, its event slot.
  __device__ __forceinline__ Optional<SeqInfo> receive(bool first,
                                                       TileTraceRecorder<Params>& trace) {
    consumer_wait(pipe_, state_, "tile hand-off (consumer)");
    const u32 slot = state_.index();
    const Optional<SeqInfo> next =
        first
            ? p_.scheduler.template first_work<false, SchedulerSync::Producer>(p_.summary, st_,
                                                                               slot)
            : p_.scheduler.template advance<false, SchedulerSync::Producer>(p_.summary, st_, slot);
    trace.receive(words_.trace_slot[slot]);
    pipe_.consumer_release(state_);
    ++state_;
    return next;
  }

  // The linear index of the tile received last.
  __device__ __forceinline__ u32 tile_index() const { return st_.idx; }

 private:
  const Params& p_;
  HandOffWords<Traits>& words_;
  PipelineTile& pipe_;
  typename PipelineTile::PipelineState& state_;
  TileState st_;
};

}  // namespace tilesched::gpu::sm90
