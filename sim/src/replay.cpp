#include "tilesched/sim/replay.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "placement.hpp"

namespace tilesched::sim {

namespace {

// What every replay needs: the problem as the schedulers see it and a way to turn a SeqInfo into
// an event with its cost.
struct ReplayContext {
  const Workload& w;
  TileSummary summary;
  CostCoefficients k;
  double saved_row_us;  // CostModel::saved_row_us at the workload's head dim
  bool faithful_rows;   // static tile scheduler in faithful mode: upstream's row count

  // The tile at index `idx` with its KV-block counts and its time alone on an SM.
  detail::PlacedTile tile(u32 idx, const SeqInfo& s) const {
    detail::PlacedTile p;
    TraceEvent& e = p.event;
    e.linear_idx = idx;
    e.prompt_offset = s.prompt_offset;
    e.head_idx = s.head_idx;
    e.prompt_idx = s.prompt_idx;
    e.query_rows = faithful_rows ? faithful_query_rows(s, w.tile_shape())
                                 : tile_rows(summary.query_layout(), s, w.tile_shape()).query_rows;
    const TileCost whole = whole_tile_cost(w, e);
    const TileCost c = s.is_piece() ? piece_cost(whole, s.kv_block_begin, s.kv_block_end) : whole;
    if (s.is_piece()) e.kv_block_begin = std::min(s.kv_block_begin, whole.kv_blocks);
    e.kv_blocks = c.kv_blocks;
    // A piece saves its rows' partial state for the combine, beside its tile's fixed part.
    const double save_us = s.is_piece() ? saved_row_us * tile_output_rows(w, e) : 0.0;
    p.solo_us = k.tile_time_us(c) + save_us;
    // A decode tile's blocks stream from HBM after its fixed part, sharing the bandwidth.
    p.stream_bytes = stream_bytes(w, e);
    if (p.stream_bytes > 0) p.stream_us = p.solo_us - (k.fixed_us + save_us);
    return p;
  }
};

// The queued scheduler's counter starts where the host sets it before a launch; schedulers
// without a counter have nothing to set.
template <class Sched>
auto reset_counter(const Sched& sched, u32& counter_value, int)
    -> decltype(sched.counter_start(), void()) {
  counter_value = sched.counter_start();
}
template <class Sched>
void reset_counter(const Sched&, u32&, long) {}

// The events a replay of `sched` records: its own count where it hands out pieces.
template <class Sched>
auto work_items(const Sched& sched, const Workload&, int) -> decltype(sched.work_items()) {
  return sched.work_items();
}
template <class Sched>
std::uint64_t work_items(const Sched&, const Workload& w, long) {
  return replayed_tile_count(w);
}

// Every scheduler the same way: the grid's CTAs run the common/ scheduler loop (initial_state,
// first_work, advance) one call per tile, in the order the placement asks them (tile ends in
// time order, ties to the lower CTA id), so a dynamic scheduler's counter hands out indices in
// the order a GPU with these tile times would, and a static one is unaffected by the order.
// Scheduler state lives per resident slot, as the CTA's registers and shared memory do.
template <class Sched>
void replay_grid(const ReplayContext& ctx, const Sched& sched, const detail::SlotLayout& layout,
                 Trace& t) {
  const GridDim grid = sched.grid_dim(ctx.summary);
  t.launched_ctas = grid.count();
  const std::size_t slots = std::min<std::size_t>(layout.slots, grid.count());
  std::vector<u32> sidx(slots, 0);  // each slot's shared-memory index slot
  std::vector<TileState> state(slots);
  const detail::NextTile next = [&](const detail::CtaTurn& turn, detail::PlacedTile& tile) {
    TileState& st = state[turn.slot];
    Optional<SeqInfo> s;
    if (turn.step == 0) {
      const BlockIndex block{turn.cta % grid.x, (turn.cta / grid.x) % grid.y,
                             turn.cta / (grid.x * grid.y)};
      st = sched.initial_state(&sidx[turn.slot], ctx.summary, block);
      s = sched.first_work(ctx.summary, st);
    } else {
      s = sched.advance(ctx.summary, st);
    }
    if (!s) return false;
    tile = ctx.tile(st.idx, *s);
    return true;
  };
  detail::place_ctas(layout, t.launched_ctas, next, t.events);
}

}  // namespace

Trace replay(const Workload& w, const CostModel& cost) {
  const std::string problem = w.validate();
  if (!problem.empty()) throw std::invalid_argument("invalid workload: " + problem);
  const std::vector<u32> q_offsets = w.q_row_offsets();
  const SchedulePlan plan = plan_schedule(w, cost);
  const ReplayContext ctx{
      w, w.summary(q_offsets.data()), cost.coefficients(w), cost.saved_row_us(w.head_dim),
      w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful};

  const detail::SlotLayout layout = detail::slot_layout(w, cost);
  Trace t;
  t.source = "sim";
  t.device = cost.device;
  t.workload = w;
  t.workload.resident_ctas = layout.slots;  // the trace says what ran, whoever chose it
  u32 counter_value = 0;
  const SchedulerInputs inputs{AtomicCounter{&counter_value}, plan.arrays()};
  with_scheduler(w, inputs, [&](const auto& sched) {
    // Exactly: no growth, no slack. The split schedules' pieces are those of this cost model's
    // plan (stream_k's ranges follow its costs).
    t.events.reserve(work_items(sched, w, 0));
    reset_counter(sched, counter_value, 0);
    replay_grid(ctx, sched, layout, t);
  });
  t.combine_us = cost.combine_time_us(w, t.events);
  return t;
}

SchedulePlan plan_schedule(const Workload& w, const CostModel& cost) {
  const CostCoefficients k = cost.coefficients(w);
  return build_schedule_plan(w, [k](const TileCost& c) { return k.tile_time_us(c); });
}

SchedulePlan plan_schedule(const Workload& w) {
  return plan_schedule(w, CostModel::builtin(w.cost_profile));
}

Trace replay(const Workload& w) {
  return replay(w, CostModel::builtin(w.cost_profile));
}

std::uint64_t replayed_tile_count(const Workload& w) {
  if (w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful) {
    // Upstream's tile scheduler runs every index, past a sequence's end included (SPEC §5),
    // except a CTA's first when that one starts past its sequence: it steps over that one.
    const std::vector<u32> q_offsets = w.q_row_offsets();
    const TileSummary summary = w.summary(q_offsets.data());
    std::uint64_t tiles = summary.max_idx(w.scheduled_heads());
    u32 counter_value = 0;
    with_scheduler(w, AtomicCounter{&counter_value}, [&](const auto& sched) {
      using S = std::decay_t<decltype(sched)>;
      if constexpr (std::is_same_v<S, runtime::TileScheduler>) {
        u32 sidx[1] = {0};
        const GridDim grid = sched.grid_dim(summary);
        for (u32 cta = 0; cta < grid.x; ++cta) {
          TileState st = sched.initial_state(sidx, summary, BlockIndex{cta, 0, 0});
          sched.first_work(summary, st);
          if (st.idx != cta) --tiles;
        }
      }
    });
    return tiles;
  }
  // split_tail: the full waves' tiles and the tail's pieces.
  if (w.scheduler == SchedulerKind::SplitTail) return split_tail_scheduler(w).work_items();
  // split_kv and stream_k: the pieces of their plan (stream_k's with the built-in costs).
  if (w.scheduler == SchedulerKind::SplitKv || w.scheduler == SchedulerKind::StreamK) {
    const SchedulePlan plan = plan_schedule(w);
    u32 counter_value = 0;
    return with_scheduler(w, SchedulerInputs{AtomicCounter{&counter_value}, plan.arrays()},
                          [&](const auto& sched) { return work_items(sched, w, 0); });
  }
  // Every other scheduler, and safe mode, skip the tiles past a sequence's end.
  return w.valid_tile_count();
}

std::uint64_t replay_bytes_per_tile(const Workload& w) {
  // The event, and while the placement sorts it into (cta, step) order its destination; a
  // transient grid, already in order, has instead its CTA's slot and step (one CTA per tile).
  return sizeof(TraceEvent) +
         (w.scheduler == SchedulerKind::Transient ? 2 * sizeof(u32) : sizeof(u32));
}

}  // namespace tilesched::sim
