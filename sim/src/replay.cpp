#include "tilesched/sim/replay.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tilesched/sim/value_limits.hpp"

namespace tilesched::sim {

namespace {

// What every replay needs: the problem as the schedulers see it and a way to turn a SeqInfo into
// an event with its cost.
struct ReplayContext {
  const Workload& w;
  TileSummary summary;
  CostCoefficients k;
  bool faithful_rows;  // static tile scheduler in faithful mode: upstream's row count

  TraceEvent event(u32 cta, u32 step, u32 idx, const SeqInfo& s, double start) const {
    TraceEvent e;
    e.cta = cta;
    e.step = step;
    e.linear_idx = idx;
    e.prompt_offset = s.prompt_offset;
    e.head_idx = s.head_idx;
    e.prompt_idx = s.prompt_idx;
    e.query_rows = faithful_rows ? faithful_query_rows(s, w.block_m)
                                 : tile_rows(summary.query_layout(), s, w.block_m).query_rows;
    const TileCost c = event_tile_cost(w, e);
    e.kv_blocks = c.kv_blocks;
    e.start_us = start;
    e.end_us = start + k.tile_time_us(c);
    // A trace beyond the readers' range could be written but not read back (viz, diff, fit).
    if (!(e.end_us <= kMaxTraceTimeUs))
      throw std::invalid_argument(fmt::format(
          "the predicted times run past {:g} us (11.6 days), the most a trace records: tile {} "
          "of CTA {} would end at {:g} us; check the cost model's coefficients and the "
          "workload's size",
          kMaxTraceTimeUs, idx, cta, e.end_us));
    return e;
  }
};

// Tile scheduler: each CTA runs the scheduler loop on its own; its tiles follow back to back.
template <class Sched>
void replay_static(const ReplayContext& ctx, const Sched& sched, Trace& t) {
  const GridDim grid = sched.grid_dim(ctx.summary);
  t.launched_ctas = grid.count();
  t.events.reserve(ctx.summary.max_idx(ctx.w.num_q_heads));
  u32 sidx[1] = {0};
  for (u32 cta = 0; cta < grid.x; ++cta) {
    TileState st = sched.initial_state(sidx, ctx.summary, BlockIndex{cta, 0, 0});
    double time = 0;
    u32 step = 0;
    for (auto s = sched.first_work(ctx.summary, st); s; s = sched.advance(ctx.summary, st)) {
      t.events.push_back(ctx.event(cta, step++, st.idx, *s, time));
      time = t.events.back().end_us;
    }
  }
}

// Transient: one tile per CTA; CTAs start in id order whenever one of the resident slots
// (workload.resident_ctas) frees up. The slot is recorded as the event's sm_id so that metrics and
// pictures can show the machine's real parallelism instead of T*H*B one-tile CTAs.
void replay_transient(const ReplayContext& ctx, const runtime::TransientScheduler& sched,
                      Trace& t) {
  const GridDim grid = sched.grid_dim(ctx.summary);
  t.launched_ctas = grid.count();
  t.events.reserve(grid.count());
  const std::size_t slots = std::min<std::size_t>(ctx.w.resident_ctas, grid.count());
  // (time the slot frees up, slot): the earliest free slot takes the next CTA, ties to the lower
  // slot, so the assignment is deterministic.
  using Slot = std::pair<double, std::int32_t>;
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> free_at;
  u32 sidx[1] = {0};
  u32 cta = 0;
  for (u32 z = 0; z < grid.z; ++z)
    for (u32 y = 0; y < grid.y; ++y)
      for (u32 x = 0; x < grid.x; ++x, ++cta) {
        Slot slot{0.0, static_cast<std::int32_t>(free_at.size())};
        if (free_at.size() >= slots) {
          slot = free_at.top();
          free_at.pop();
        }
        const double start = slot.first;
        TileState st = sched.initial_state(sidx, ctx.summary, BlockIndex{x, y, z});
        double end = start;  // a CTA with nothing to do leaves at once
        if (auto s = sched.first_work(ctx.summary, st)) {
          t.events.push_back(ctx.event(cta, 0, st.idx, *s, start));
          t.events.back().sm_id = slot.second;
          end = t.events.back().end_us;
        }
        free_at.push({end, slot.second});
      }
}

// Queued: discrete events. The CTA that finishes first fetches next (ties: lower CTA id), so the
// counter hands out indices in the order a GPU with these tile times would.
void replay_queued(const ReplayContext& ctx, const runtime::QueuedTileScheduler& sched,
                   u32& counter_value, Trace& t) {
  const GridDim grid = sched.grid_dim(ctx.summary);
  const u32 ctas = grid.x;
  t.launched_ctas = ctas;
  counter_value = sched.counter_start();

  std::vector<u32> sidx(ctas, 0);  // each CTA's shared-memory slot
  std::vector<TileState> state(ctas);
  std::vector<u32> steps(ctas, 0);
  std::vector<TraceEvent> by_time;  // events in fetch order
  by_time.reserve(ctx.summary.max_idx(ctx.w.num_q_heads));

  using Ready = std::pair<double, u32>;  // (time the CTA wants its next tile, CTA)
  // Every CTA takes its first tile at time 0, in CTA order. The loop counts in the vector's own
  // size_t indices: with a u32 counter the compiler cannot prove the heap code's loop bounded
  // (-Waggressive-loop-optimizations).
  std::vector<Ready> initial(ctas);
  for (std::size_t c = 0; c < initial.size(); ++c) initial[c] = Ready{0.0, static_cast<u32>(c)};
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready(std::greater<Ready>(),
                                                                            std::move(initial));
  std::vector<bool> started(ctas, false);
  while (!ready.empty()) {
    const auto [time, c] = ready.top();
    ready.pop();
    Optional<SeqInfo> s;
    if (!started[c]) {
      started[c] = true;
      state[c] = sched.initial_state(&sidx[c], ctx.summary, BlockIndex{c, 0, 0});
      s = sched.first_work(ctx.summary, state[c]);
    } else {
      s = sched.advance(ctx.summary, state[c]);
    }
    if (!s) continue;  // this CTA ran past N: it exits
    by_time.push_back(ctx.event(c, steps[c]++, state[c].idx, *s, time));
    ready.push({by_time.back().end_us, c});
  }

  // Counting sort by CTA: stable, so each CTA's events stay in step order.
  // Sizes and indices in size_t: `ctas + 1` in u32 would wrap to 0 for a grid of 2^32-1 CTAs.
  std::vector<std::size_t> first(std::size_t(ctas) + 1, 0);
  for (const TraceEvent& e : by_time) ++first[std::size_t(e.cta) + 1];
  for (std::size_t c = 1; c < first.size(); ++c) first[c] += first[c - 1];
  t.events.resize(by_time.size());
  for (const TraceEvent& e : by_time) t.events[first[e.cta]++] = e;
}

}  // namespace

Trace replay(const Workload& w, const CostModel& cost) {
  const std::string problem = w.validate();
  if (!problem.empty()) throw std::invalid_argument("invalid workload: " + problem);
  const std::vector<u32> q_offsets = w.q_row_offsets();
  const ReplayContext ctx{
      w, w.summary(q_offsets.data()), cost.coefficients(w.head_dim),
      w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful};

  Trace t;
  t.source = "sim";
  t.device = cost.device;
  t.workload = w;
  u32 counter_value = 0;
  with_scheduler(w, AtomicCounter{&counter_value}, [&](const auto& sched) {
    using S = std::decay_t<decltype(sched)>;
    if constexpr (std::is_same_v<S, runtime::QueuedTileScheduler>)
      replay_queued(ctx, sched, counter_value, t);
    else if constexpr (std::is_same_v<S, runtime::TransientScheduler>)
      replay_transient(ctx, sched, t);
    else
      replay_static(ctx, sched, t);
  });
  return t;
}

Trace replay(const Workload& w) {
  return replay(w, CostModel::builtin(w.cost_profile));
}

}  // namespace tilesched::sim
