// One scheduler type that can be any scheduler of scheduler.hpp, chosen at run time: a small
// tagged value holding the kind and every scheduler's parameters, whose calls switch on the kind.
//
// Why: a kernel templated on the scheduler is instantiated once per scheduler. The switch runs
// once per tile (first_work / advance), next to a tile's thousands of cycles, so one kernel
// instantiated with AnyScheduler runs every kind. The kernel stays templated on the scheduler
// policy, and a concrete scheduler plugs in where its static kind is worth an instantiation: the
// sm90 kernel has its own for tile, queued and lpt_queued, whose tile path is shorter code, and
// the kinds that hand out pieces of tiles (split_tail, split_kv, stream_k) run only in theirs
// (docs/gpu-kernel.md).
//
// Build one from any runtime scheduler, e.g. through with_scheduler (workload.hpp), with the
// schedule plan's arrays for the planned schedulers:
//   with_scheduler(w, SchedulerInputs{counter, plan}, [](const auto& s) { return AnyScheduler(s);
//   })
#pragma once

#include "tilesched/planned_schedulers.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/split_schedules.hpp"
#include "tilesched/split_tail.hpp"

namespace tilesched::runtime {

class AnyScheduler {
 private:
  // The one switch on the kind: every call below goes through it.
  template <class F>
  TS_HOST_DEVICE TS_FORCEINLINE constexpr decltype(auto) visit(F&& f) const {
    switch (kind) {
      case SchedulerKind::Queued: return f(queued);
      case SchedulerKind::Transient: return f(transient);
      case SchedulerKind::Lpt: return f(lpt);
      case SchedulerKind::LptQueued: return f(lpt_queued);
      case SchedulerKind::Planned: return f(planned);
      case SchedulerKind::RaggedQueued: return f(ragged_queued);
#if !TS_DEVICE_PASS
      // Host only: the GPU runs the splitting kinds in kernels of their own
      // (gpu/src/sm90/launch.cuh). In the AnyScheduler kernel split_tail's walk made ptxas build
      // the K/V loop's wgmma descriptors in ordinary registers (48 R2UR per block at d = 128), so
      // the device switch leaves them out, and with them the pieces' code.
      case SchedulerKind::SplitTail: return f(split_tail);
      case SchedulerKind::SplitKv: return f(split_kv);
      case SchedulerKind::StreamK: return f(stream_k);
#endif
      case SchedulerKind::Tile: break;
    }
    return f(tile);
  }

 public:
  SchedulerKind kind = SchedulerKind::Tile;  // which of the members below is in use
  TileScheduler tile{};
  QueuedTileScheduler queued{};
  TransientScheduler transient{};
  LptScheduler lpt{};
  LptQueuedScheduler lpt_queued{};
  PlannedListScheduler planned{};
  RaggedQueuedScheduler ragged_queued{};
  SplitTailScheduler split_tail{};
  SplitKvScheduler split_kv{};
  StreamKScheduler stream_k{};

  constexpr AnyScheduler() = default;
  TS_HOST_DEVICE constexpr AnyScheduler(const TileScheduler& s)  // NOLINT: implicit by design
      : kind(SchedulerKind::Tile), tile(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const QueuedTileScheduler& s)  // NOLINT
      : kind(SchedulerKind::Queued), queued(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const TransientScheduler& s)  // NOLINT
      : kind(SchedulerKind::Transient), transient(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const LptScheduler& s)  // NOLINT
      : kind(SchedulerKind::Lpt), lpt(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const LptQueuedScheduler& s)  // NOLINT
      : kind(SchedulerKind::LptQueued), lpt_queued(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const PlannedListScheduler& s)  // NOLINT
      : kind(SchedulerKind::Planned), planned(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const RaggedQueuedScheduler& s)  // NOLINT
      : kind(SchedulerKind::RaggedQueued), ragged_queued(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const SplitTailScheduler& s)  // NOLINT
      : kind(SchedulerKind::SplitTail), split_tail(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const SplitKvScheduler& s)  // NOLINT
      : kind(SchedulerKind::SplitKv), split_kv(s) {}
  TS_HOST_DEVICE constexpr AnyScheduler(const StreamKScheduler& s)  // NOLINT
      : kind(SchedulerKind::StreamK), stream_k(s) {}

  // Whether a CTA can get more than one tile (the concrete schedulers' may_advance).
  TS_HOST_DEVICE constexpr bool may_advance() const {
    return kind != SchedulerKind::Transient;
  }

  // The counter's start value of a counter scheduler (queued, lpt_queued, ragged_queued); 0 for
  // the others, which have no counter.
  TS_HOST_DEVICE constexpr u32 counter_start() const {
    switch (kind) {
      case SchedulerKind::Queued: return queued.counter_start();
      case SchedulerKind::LptQueued: return lpt_queued.counter_start();
      case SchedulerKind::RaggedQueued: return ragged_queued.counter_start();
      case SchedulerKind::SplitKv: return split_kv.counter_start();
      default: return 0u;
    }
  }

  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary& s) const {
    return visit([&](const auto& sched) { return sched.grid_dim(s); });
  }

  TS_HOST_DEVICE TileState initial_state(u32* sidx, const TileSummary& s, BlockIndex block) const {
    return visit([&](const auto& sched) { return sched.initial_state(sidx, s, block); });
  }

  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const TileSummary& s,
                                                          const TileState& st) const {
    return visit([&](const auto& sched) { return sched.get_current_work_info(s, st); });
  }

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const TileSummary& s, u32 idx) const {
    return visit([&](const auto& sched) { return sched.unsafe_seq_info(s, idx); });
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                              u32 pipeline_idx = 0) const {
    return visit([&](const auto& sched) {
      return sched.template first_work<producer, sync>(s, st, pipeline_idx);
    });
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                           u32 pipeline_idx = 0) const {
    return visit([&](const auto& sched) {
      return sched.template advance<producer, sync>(s, st, pipeline_idx);
    });
  }
};

}  // namespace tilesched::runtime
