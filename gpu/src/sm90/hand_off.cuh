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

// What both sides of the hand-off hold: where they stand in it (the pipeline state, run_producer's
// or run_consumer's), the scheduler's state, and the scheduler's step that reads or writes the
// slot (`kProducer`: advance<true>, thread 0 of a counter scheduler fetches and writes it;
// advance<false>, read it).
template <class Params, bool kProducer>
class HandOffSide {
 public:
  using Traits = typename Params::Traits;
  using PipelineTile = typename Traits::PipelineTile;

  __device__ __forceinline__ HandOffSide(const Params& p, HandOffWords<Traits>& words,
                                         PipelineTile& pipe,
                                         typename PipelineTile::PipelineState& state)
      : p_(p),
        words_(words),
        pipe_(pipe),
        state_(state),
        st_(p.scheduler.initial_state(words.sidx, p.summary,
                                      BlockIndex{blockIdx.x, blockIdx.y, blockIdx.z})) {}

 protected:
  // The scheduler's first or next tile, through hand-off slot `slot`.
  __device__ __forceinline__ Optional<SeqInfo> step(bool first, u32 slot) {
    constexpr SchedulerSync kSync = SchedulerSync::Producer;
    return first ? p_.scheduler.template first_work<kProducer, kSync>(p_.summary, st_, slot)
                 : p_.scheduler.template advance<kProducer, kSync>(p_.summary, st_, slot);
  }

  const Params& p_;
  HandOffWords<Traits>& words_;
  PipelineTile& pipe_;
  typename PipelineTile::PipelineState& state_;
  TileState st_;
};

// The producer's side: every producer thread takes part in each step (the scheduler's barrier);
// the loader, thread 0, fetches and commits the slot, and while recording the trace writer,
// thread 32, commits it too (TraceWriter). `state` starts at cutlass::make_producer_start_state.
template <class Params>
class HandOffProducer : HandOffSide<Params, true> {
  using Side = HandOffSide<Params, true>;
  using typename Side::PipelineTile;
  using typename Side::Traits;

 public:
  __device__ __forceinline__ HandOffProducer(const Params& p, HandOffWords<Traits>& words,
                                             PipelineTile& pipe,
                                             typename PipelineTile::PipelineState& state,
                                             bool loader)
      : Side(p, words, pipe, state), loader_(loader), trace_(p, threadIdx.x == 32) {}

  // The next tile (the first with `first`), published to the consumers.
  __device__ __forceinline__ Optional<SeqInfo> schedule(bool first) {
    // The hand-off slot must be free: consumers have read what it held two tiles ago. Only the
    // threads that write the slot (the loader, and while recording the trace writer) poll its
    // mbarrier; the warpgroup's other threads wait for the loader at a named barrier, where a
    // waiting warp issues nothing (polling it, three idle warps executed 54 M of the 619 M
    // instructions at d = 128, seq 8192).
    if (loader_ || trace_.active())
      producer_acquire(this->pipe_, this->state_, "tile hand-off (producer)");
    named_barrier_sync(kProducerBarrier, Traits::kWarpgroupThreads);
    const u32 slot = this->state_.index();
    const Optional<SeqInfo> work = this->step(first, slot);
    // Thread 0 wrote the slot (counter schedulers) before the named barrier inside advance; its
    // arrive releases that write to the consumers, who acquire it by waiting on the same mbarrier.
    if (loader_) this->pipe_.producer_commit(this->state_);
    trace_.hand_off(this->words_.trace_slot, slot, work, this->st_.idx,
                    [&] { this->pipe_.producer_commit(this->state_); });
    ++this->state_;
    return work;
  }

 private:
  bool loader_;
  TraceWriter<Params> trace_;
};

// The consumers' side: every consumer thread waits for the slot, reads it and releases it.
// `state` starts as a default PipelineState.
template <class Params>
class HandOffConsumer : HandOffSide<Params, false> {
  using Side = HandOffSide<Params, false>;

 public:
  using Side::Side;

  // The next tile (the first with `first`) and, to the trace recorder, its event slot.
  __device__ __forceinline__ Optional<SeqInfo> receive(bool first,
                                                       TileTraceRecorder<Params>& trace) {
    consumer_wait(this->pipe_, this->state_, "tile hand-off (consumer)");
    const u32 slot = this->state_.index();
    const Optional<SeqInfo> next = this->step(first, slot);
    trace.receive(this->words_.trace_slot[slot]);
    this->pipe_.consumer_release(this->state_);
    ++this->state_;
    return next;
  }

  // The linear index of the tile received last.
  __device__ __forceinline__ u32 tile_index() const { return this->st_.idx; }
};

}  // namespace tilesched::gpu::sm90
