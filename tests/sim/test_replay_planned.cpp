// Replay of the planned schedulers (lpt, lpt_queued, planned, ragged_queued) and of decode
// workloads (SPEC §6), their attention, and the schedule check on them.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;

namespace {

using Coords = std::tuple<u32, u32, u32>;  // (prompt, head, prompt_offset)

std::multiset<Coords> tiles_of(const Trace& t) {
  std::multiset<Coords> out;
  for (const TraceEvent& e : t.events) out.emplace(e.prompt_idx, e.head_idx, e.prompt_offset);
  return out;
}

constexpr SchedulerKind kPlannedKinds[] = {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                           SchedulerKind::Planned, SchedulerKind::RaggedQueued};

// A padded causal batch of equal lengths: the shape where static striding loses most.
Workload equal_causal(u32 batch, u32 len) {
  Workload w;
  w.padded = true;
  w.q_lens.assign(batch, len);
  w.num_q_heads = 32;
  w.num_kv_heads = 8;
  w.head_dim = 128;
  w.mask = Mask::Causal;
  return w;
}

Workload decode_workload(SchedulerKind kind) {
  Workload w;
  w.decoding = true;
  w.q_lens.assign(7, 1);
  w.kv_lens = {4096, 1, 300, 129, 8000, 64, 1000};
  w.num_q_heads = 16;
  w.num_kv_heads = 4;
  w.head_dim = 64;
  w.block_n = 64;
  w.num_ctas = 5;  // fewer CTAs than the 28 tiles: every CTA must fetch again
  w.scheduler = kind;
  return w;
}

}  // namespace

TEST_CASE("static planned replay: each CTA runs its scheduler's walk of the plan, back to back") {
  const sim::CostModel cost = flat_cost(1.0, 2.0, 3.0);
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::Planned}) {
    CAPTURE(std::string(to_string(kind)));
    for_random_workloads(4242, 150, kind, [&](Workload& w, int) {
      const Trace t = sim::replay(w, cost);
      check_ordered_and_back_to_back(t);
      const SchedulePlan plan = sim::plan_schedule(w, cost);
      const std::vector<u32> q_offsets = w.q_row_offsets();
      const TileSummary summary = w.summary(q_offsets.data());
      std::size_t k = 0;
      with_scheduler(w, SchedulerInputs{AtomicCounter{}, plan.arrays()}, [&](const auto& s) {
        REQUIRE(t.launched_ctas == s.grid_dim(summary).x);
        for (u32 c = 0; c < t.launched_ctas; ++c) {
          u32 sidx[1] = {0};
          TileState st = s.initial_state(sidx, summary, BlockIndex{c, 0, 0});
          for (auto si = s.first_work(summary, st); si; si = s.advance(summary, st)) {
            REQUIRE(k < t.events.size());
            const TraceEvent& e = t.events[k++];
            CAPTURE(show(e));
            CHECK(e.cta == c);
            CHECK(e.linear_idx == st.idx);
            CHECK(e.prompt_idx == si->prompt_idx);
            CHECK(e.head_idx == si->head_idx);
            CHECK(e.prompt_offset == si->prompt_offset);
          }
        }
      });
      CHECK(k == t.events.size());
      Workload tile = w;
      tile.scheduler = SchedulerKind::Tile;
      CHECK(tiles_of(t) == tiles_of(sim::replay(tile, cost)));
    });
  }
}

TEST_CASE("planned replay: every CTA's busy time is its planned load") {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  for_random_workloads(777, 150, SchedulerKind::Planned, [&](Workload& w, int) {
    // Every CTA resident from the start, each on an SM of its own: a grid in waves would start
    // some CTAs late, and the makespan would be more than the largest planned load.
    w.resident_ctas = w.num_ctas;
    const sim::CostCoefficients k = cost.coefficients(w);  // at the workload's BM and BN
    const TileLists lists = balanced_lists(w, [&](const TileCost& c) { return k.tile_time_us(c); });
    const std::map<u32, sim::CtaLoad> loads = sim::cta_loads(sim::replay(w, cost));
    for (const auto& [cta, load] : loads) CHECK(load.busy_us == doctest::Approx(lists.loads[cta]));
    const double planned_max = *std::max_element(lists.loads.begin(), lists.loads.end());
    CHECK(sim::compute_metrics(sim::replay(w, cost)).makespan_us == doctest::Approx(planned_max));
  });
}

TEST_CASE("counter planned replay: deterministic, the valid tiles once, fetched in time order") {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  for (const SchedulerKind kind : {SchedulerKind::LptQueued, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    for_random_workloads(99, 150, kind, [&](Workload& w, int) {
      const Trace a = sim::replay(w, cost), b = sim::replay(w, cost);
      REQUIRE(a.events.size() == b.events.size());
      for (std::size_t i = 0; i < a.events.size(); ++i)
        REQUIRE_MESSAGE(same_event(a.events[i], b.events[i]), show(a.events[i]));
      check_ordered_and_back_to_back(a);
      Workload queued = w;
      queued.scheduler = SchedulerKind::Queued;
      CHECK(tiles_of(a) == tiles_of(sim::replay(queued, cost)));
      std::set<u32> own;
      for (const TraceEvent& e : a.events) own.insert(e.linear_idx);
      CHECK(own.size() == a.events.size());
      CHECK(*own.rbegin() == a.events.size() - 1);  // indices 0..M-1: no fetch is wasted
      std::vector<TraceEvent> fetched;  // from the counter: all but each CTA's static first
      for (const TraceEvent& e : a.events)
        if (!(e.step == 0 && e.linear_idx == e.cta)) fetched.push_back(e);
      std::sort(fetched.begin(), fetched.end(), [](const TraceEvent& x, const TraceEvent& y) {
        return x.start_us != y.start_us ? x.start_us < y.start_us : x.cta < y.cta;
      });
      for (std::size_t i = 1; i < fetched.size(); ++i)
        CHECK(fetched[i - 1].linear_idx < fetched[i].linear_idx);
    });
  }
}

TEST_CASE("longest first balances equal-length causal batches that static striding does not") {
  // 10 x 3072 and 32 x 1024, causal: measured on the H200 (mma.sync kernel) the seed's DEFAULT at
  // C = 132 was 1.83x slower than the best strategy there. The static stride leaves more than
  // 18 % of the device idle; longest first leaves under 5 %. The same tiles on the same slots
  // have the same ideal bound, so the makespan shrinks by at least the ratio of the two.
  for (const auto& [batch, len] : {std::pair<u32, u32>{10, 3072}, {32, 1024}}) {
    CAPTURE(batch);
    Workload w = equal_causal(batch, len);
    const sim::Metrics seed = sim::compute_metrics(sim::replay(w));
    CHECK(seed.efficiency < 0.82);
    for (const SchedulerKind kind : kPlannedKinds) {
      w.scheduler = kind;
      CAPTURE(std::string(to_string(kind)));
      const sim::Metrics m = sim::compute_metrics(sim::replay(w));
      CHECK(m.tile_count == w.valid_tile_count());
      if (kind == SchedulerKind::RaggedQueued) continue;  // queued's order: no longest first
      CHECK(m.efficiency > 0.95);
      CHECK(seed.makespan_us / m.makespan_us > 0.95 / 0.82);
    }
  }
}

TEST_CASE("decoding: every scheduler hands out each (sequence, KV head) once and stops") {
  const sim::CostModel cost = flat_cost(1.0, 2.0, 3.0);
  for (const auto& row : kSchedulerKindNames) {
    const SchedulerKind kind = row.value;
    if (kind == SchedulerKind::SplitTail) continue;  // prefill only (validate refuses decoding)
    if (splits_tiles(kind)) continue;  // pieces of tiles: test_split_attention.cpp
    const Workload w = decode_workload(kind);
    CAPTURE(std::string(row.name));
    const Trace t = sim::replay(w, cost);
    std::set<std::pair<u32, u32>> seen;
    std::map<u32, u32> per_cta;
    for (const TraceEvent& e : t.events) {
      CAPTURE(show(e));
      CHECK(seen.insert({e.prompt_idx, e.head_idx}).second);
      CHECK(e.head_idx < w.num_kv_heads);
      CHECK(e.prompt_offset == 0);
      CHECK(e.query_rows == 1);
      CHECK(e.kv_blocks == ceil_div(w.key_len(e.prompt_idx), w.block_n));
      ++per_cta[e.cta];
    }
    CHECK(seen.size() == w.batch_size() * w.num_kv_heads);
    // Upstream's queued scheduler never left its fetch loop, so CTAs stopped after one tile.
    if (kind != SchedulerKind::Transient)
      CHECK(
          std::any_of(per_cta.begin(), per_cta.end(), [](const auto& c) { return c.second > 1; }));
  }
}

TEST_CASE("decoding attention: each tile writes its sequence's row for the KV head's group") {
  for (const auto& row : kSchedulerKindNames) {
    const SchedulerKind kind = row.value;
    if (kind == SchedulerKind::SplitTail) continue;  // prefill only (validate refuses decoding)
    const Workload w = decode_workload(kind);
    CAPTURE(std::string(row.name));
    const sim::AttentionInputs in = sim::make_inputs(w, 11);
    const Trace t = sim::replay(w);
    const auto ref = sim::reference_attention(w, in);
    const auto tiled = sim::tiled_attention(w, in, t, 0.f, 2);
    REQUIRE(tiled.problems.empty());
    for (std::uint32_t n : tiled.row_writes) REQUIRE(n == 1);
    CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
    CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);
    for (const TraceEvent& e : t.events) {
      const sim::TileError err = sim::tile_error(w, e, tiled.o, tiled.lse, ref.o, ref.lse);
      CHECK(err.rows == 1);
      CHECK(err.o_rel < 1e-5);
    }
  }
}

TEST_CASE("decoding attention: a dropped tile leaves its group's heads unwritten") {
  const Workload w = decode_workload(SchedulerKind::Queued);
  const sim::AttentionInputs in = sim::make_inputs(w, 12);
  Trace t = sim::replay(w);
  const TraceEvent dropped = t.events[3];
  t.events.erase(t.events.begin() + 3);
  const auto tiled = sim::tiled_attention(w, in, t);
  std::set<u32> gap_heads;
  for (const auto& p : tiled.problems) {
    CHECK(p.kind == sim::CoverageProblem::Kind::Gap);
    CHECK(p.tile_head == dropped.head_idx);  // blamed on the KV head's tile
    gap_heads.insert(p.head);
  }
  const u32 group = w.group_size();
  std::set<u32> expected;
  for (u32 h = dropped.head_idx * group; h < (dropped.head_idx + 1) * group; ++h)
    expected.insert(h);
  CHECK(gap_heads == expected);
}

TEST_CASE("schedule check on planned schedulers: a changed tile is named") {
  Workload w;
  w.q_lens = {300, 1, 0, 257};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.num_ctas = 3;
  for (const SchedulerKind kind : kPlannedKinds) {
    w.scheduler = kind;
    CAPTURE(std::string(to_string(kind)));
    const Trace model = sim::replay(w);
    CHECK(sim::schedule_differences(model, model).empty());
    Trace measured = model;
    measured.events[2].head_idx ^= 1u;  // the same index, another tile
    const std::vector<std::string> diffs = sim::schedule_differences(model, measured);
    REQUIRE_FALSE(diffs.empty());
    CHECK(contains(diffs.front(), "the simulator says"));
    measured = model;
    measured.events.pop_back();
    CHECK_FALSE(sim::schedule_differences(model, measured).empty());
  }
}
