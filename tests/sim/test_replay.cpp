// Replay against closed forms written independently of common/ (SPEC §3-§5), the queued
// discrete-event simulation, the transient launch limit, and per-tile cost (SPEC §7).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;

namespace {

// SPEC §3 from scratch: idx -> (prompt_offset, head, prompt).
struct Coord {
  u32 prompt_offset, head, prompt;
};
Coord coord_of(const Workload& w, u32 idx) {
  const u32 T = (w.max_seq_len() + w.block_m - 1) / w.block_m;
  u32 t = idx % T;
  const u32 h = (idx / T) % w.num_q_heads;
  const u32 b = idx / (T * w.num_q_heads);
  if (w.schedule == Schedule::PromptRotate && h % 2 == 1) t = T - 1 - t;
  return {t * w.block_m, h, b};
}
u32 tiles_of(const Workload& w) {
  const u32 T = (w.max_seq_len() + w.block_m - 1) / w.block_m;
  return T * w.num_q_heads * w.batch_size();
}
bool starts_inside(const Workload& w, u32 idx) {
  const Coord c = coord_of(w, idx);
  return c.prompt_offset < w.q_lens[c.prompt];
}

// Independent per-tile cost (SPEC §7) for a tile inside its sequence.
TileCost hand_cost(const Workload& w, const Coord& c) {
  const std::int64_t q = w.q_lens[c.prompt], k = w.key_len(c.prompt);
  const std::int64_t rows = std::min<std::int64_t>(q - c.prompt_offset, w.block_m);
  std::int64_t end = k, full_end = k;
  if (w.mask == Mask::Causal) {
    const std::int64_t row0 = c.prompt_offset + (k - q);
    end = std::min<std::int64_t>(k, row0 + rows);  // last row sees keys up to row0 + rows - 1
    full_end = std::min<std::int64_t>(k, row0 + 1);
  }
  const std::int64_t blocks = (end + w.block_n - 1) / w.block_n;
  return TileCost{u32(blocks), u32(blocks - std::min<std::int64_t>(full_end / w.block_n, blocks))};
}

}  // namespace

TEST_CASE("static tile scheduler replay matches the closed form (safe and faithful)") {
  const sim::CostModel cost = flat_cost(1.0, 2.0, 3.0);
  for_random_workloads(1234, 300, SchedulerKind::Tile, [&](Workload& w, int iter) {
    w.ragged_mode = iter % 2 ? RaggedMode::Faithful : RaggedMode::Safe;
    w.resident_ctas = Workload::kResidentFromDevice;  // 132 SMs: every CTA has one to itself
    const Trace t = sim::replay(w, cost);
    const u32 n = tiles_of(w);
    CHECK(t.launched_ctas == std::min(n, w.num_ctas));
    check_ordered_and_back_to_back(t);
    std::size_t k = 0;
    for (u32 c = 0; c < std::min(n, w.num_ctas); ++c) {
      double time = 0;
      u32 step = 0;
      for (u32 idx = c; idx < n; idx += w.num_ctas) {
        const bool inside = starts_inside(w, idx);
        // Safe: skip every tile past its sequence. Faithful (upstream): only the CTA's first.
        if (!inside && (w.ragged_mode == RaggedMode::Safe || idx == c)) continue;
        REQUIRE(k < t.events.size());
        const TraceEvent& e = t.events[k++];
        const Coord co = coord_of(w, idx);
        CAPTURE(show(e));
        CHECK(e.cta == c);
        CHECK(e.step == step++);
        CHECK(e.linear_idx == idx);
        CHECK(e.sm_id == std::int32_t(c));  // fewer CTAs than SMs: CTA c alone on SM c
        CHECK(e.prompt_offset == co.prompt_offset);
        CHECK(e.head_idx == co.head);
        CHECK(e.prompt_idx == co.prompt);
        const u32 seq = w.q_lens[co.prompt];
        // Upstream's rows wrap in u32 past the end; that is BM rows (0 exactly at the end).
        const u32 rows = inside ? std::min(seq - co.prompt_offset, w.block_m)
                                : (co.prompt_offset == seq ? 0u : w.block_m);
        CHECK(e.query_rows == rows);
        if (inside) {
          const TileCost hc = hand_cost(w, co);
          CHECK(e.kv_blocks == hc.kv_blocks);
          const double d = 1.0 + 2.0 * (hc.kv_blocks - hc.masked_blocks) + 3.0 * hc.masked_blocks;
          CHECK(e.end_us - e.start_us == doctest::Approx(d));
        }
        CHECK(e.start_us == time);
        time = e.end_us;
      }
    }
    CHECK(k == t.events.size());
  });
}

TEST_CASE("transient replay: one tile per CTA, id x + T*(y + H*z), resident-CTA limit") {
  const sim::CostModel cost = flat_cost(1.0, 2.0, 3.0);
  for_random_workloads(99, 200, SchedulerKind::Transient, [&](Workload& w, int iter) {
    w.flip_prompt_idx = iter % 2 == 1;
    const Trace t = sim::replay(w, cost);
    const u32 T = (w.max_seq_len() + w.block_m - 1) / w.block_m;
    CHECK(t.launched_ctas == T * w.num_q_heads * w.batch_size());
    std::size_t k = 0;
    // (finish time, CTA, resident slot) of CTAs so far, to replay the resident limit: a waiting
    // CTA takes the slot of the CTA that exits first (ties: the lower CTA id exits first).
    std::vector<std::tuple<double, u32, std::int32_t>> ends;
    for (u32 z = 0; z < w.batch_size(); ++z)
      for (u32 y = 0; y < w.num_q_heads; ++y)
        for (u32 x = 0; x < T; ++x) {
          const u32 cta = x + T * (y + w.num_q_heads * z);
          const u32 t_idx = w.flip_prompt_idx ? T - 1 - x : x;
          double start = 0;
          auto slot = static_cast<std::int32_t>(ends.size());  // a fresh slot while there is one
          if (ends.size() >= w.resident_ctas) {                // wait for the earliest free slot
            std::sort(ends.begin(), ends.end());
            start = std::get<0>(ends.front());
            slot = std::get<2>(ends.front());
            ends.erase(ends.begin());
          }
          if (t_idx * w.block_m >= w.q_lens[z]) {
            ends.push_back({start, cta, slot});
            continue;
          }
          REQUIRE(k < t.events.size());
          const TraceEvent& e = t.events[k++];
          CHECK(e.cta == cta);
          CHECK(e.step == 0);
          CHECK(e.prompt_offset == t_idx * w.block_m);
          CHECK(e.head_idx == y);
          CHECK(e.prompt_idx == z);
          CHECK(e.linear_idx == (z * w.num_q_heads + y) * T + t_idx);
          CHECK(e.start_us == start);
          CHECK(e.sm_id == slot);  // fewer slots than SMs: slot s alone on SM s
          ends.push_back({e.end_us, cta, slot});
        }
    CHECK(k == t.events.size());
  });
}

TEST_CASE("transient replay never runs more than resident_ctas CTAs at once") {
  Workload w = sim::default_workload();
  w.scheduler = SchedulerKind::Transient;
  w.resident_ctas = 20;
  w.num_ctas = 3;  // the persistent stride: not the transient limit
  const Trace t = sim::replay(w);
  // Sweep start/end points: the number of running tiles never exceeds 20 and reaches it.
  std::vector<std::pair<double, int>> points;
  for (const TraceEvent& e : t.events) {
    points.push_back({e.start_us, +1});
    points.push_back({e.end_us, -1});
  }
  std::sort(points.begin(), points.end());  // ends (-1) before starts at the same time
  int running = 0, peak = 0;
  for (const auto& p : points) peak = std::max(peak, running += p.second);
  CHECK(peak == 20);
  // Each resident slot (sm_id) runs one CTA at a time, and all 20 are used.
  std::map<std::int32_t, std::vector<std::pair<double, double>>> by_slot;
  for (const TraceEvent& e : t.events) by_slot[e.sm_id].push_back({e.start_us, e.end_us});
  CHECK(by_slot.size() == 20);
  CHECK(by_slot.begin()->first == 0);
  CHECK(by_slot.rbegin()->first == 19);
  for (auto& [slot, spans] : by_slot) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
      REQUIRE_MESSAGE(spans[i - 1].second <= spans[i].first, "slot ", slot, " overlaps");
  }
}

TEST_CASE("queued replay: hand-computed discrete-event order") {
  // q_lens {1, 4}, BM = BN = 1, one head, 2 CTAs: T = 4, N = 8. Tiles of sequence 0 past row 0
  // (idx 1..3) are skipped; sequence 1's tile t costs 1 + (t + 1) = t + 2 µs.
  Workload w;
  w.q_lens = {1, 4};
  w.num_q_heads = w.num_kv_heads = 1;
  w.head_dim = 8;
  w.block_m = w.block_n = 1;
  w.num_ctas = 2;
  w.scheduler = SchedulerKind::Queued;
  const Trace t = sim::replay(w, flat_cost(1.0, 1.0, 1.0));
  // CTA 0: idx 0 at [0,2]. CTA 1: idx 1 invalid, fetches 2, 3 (invalid), 4 at time 0: [0,2].
  // At 2 both finish, CTA 0 first: idx 5 [2,5], CTA 1: idx 6 [2,6]; at 5 CTA 0: idx 7 [5,10].
  const std::vector<std::tuple<u32, u32, u32, double, double>> expected = {
      {0, 0, 0, 0, 2}, {0, 1, 5, 2, 5}, {0, 2, 7, 5, 10}, {1, 0, 4, 0, 2}, {1, 1, 6, 2, 6}};
  REQUIRE(t.events.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [cta, step, idx, start, end] = expected[i];
    CAPTURE(show(t.events[i]));
    CHECK(t.events[i].cta == cta);
    CHECK(t.events[i].step == step);
    CHECK(t.events[i].linear_idx == idx);
    CHECK(t.events[i].start_us == start);
    CHECK(t.events[i].end_us == end);
  }
}

TEST_CASE("queued replay is deterministic, covers every valid tile once, fetches in time order") {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  for_random_workloads(7, 200, SchedulerKind::Queued, [&](Workload& w, int) {
    const Trace a = sim::replay(w, cost);
    const Trace b = sim::replay(w, cost);
    REQUIRE(a.events.size() == b.events.size());
    for (std::size_t i = 0; i < a.events.size(); ++i)
      REQUIRE_MESSAGE(same_event(a.events[i], b.events[i]), show(a.events[i]));
    check_ordered_and_back_to_back(a);

    const u32 n = tiles_of(w);
    std::set<u32> expected, seen;
    for (u32 idx = 0; idx < n; ++idx)
      if (starts_inside(w, idx)) expected.insert(idx);
    for (const TraceEvent& e : a.events) {
      CHECK_MESSAGE(seen.insert(e.linear_idx).second, "tile processed twice: ", show(e));
      CHECK(e.cta < std::min(n, w.num_ctas));
    }
    CHECK(seen == expected);

    // Indices from the counter (everything but a CTA's own first index) are handed out in the
    // order CTAs ask: by (request time, CTA id).
    std::vector<TraceEvent> fetched;
    for (const TraceEvent& e : a.events)
      if (!(e.step == 0 && e.linear_idx == e.cta)) fetched.push_back(e);
    std::sort(fetched.begin(), fetched.end(), [](const TraceEvent& x, const TraceEvent& y) {
      return x.start_us != y.start_us ? x.start_us < y.start_us : x.cta < y.cta;
    });
    for (std::size_t i = 1; i < fetched.size(); ++i)
      CHECK_MESSAGE(fetched[i - 1].linear_idx < fetched[i].linear_idx, show(fetched[i - 1]),
                    show(fetched[i]));
  });
}

TEST_CASE("queued replay balances better than static striding on a ragged causal batch") {
  Workload w = sim::default_workload();
  // The same tile costs for both (the h200 table's queued kernel costs its own).
  sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  cost.by_scheduler.clear();
  const sim::Metrics tile = sim::compute_metrics(sim::replay(w, cost));
  w.scheduler = SchedulerKind::Queued;
  const sim::Metrics queued = sim::compute_metrics(sim::replay(w, cost));
  CHECK(queued.tile_count == tile.tile_count);
  CHECK(queued.total_busy_us == doctest::Approx(tile.total_busy_us));
  CHECK(queued.makespan_us < tile.makespan_us);
  CHECK(queued.efficiency > 0.9);
}

TEST_CASE("per-tile cost follows SPEC §7 on hand-computed cases") {
  const sim::CostModel h200 = sim::CostModel::builtin("h200");
  const sim::CostCoefficients k = h200.coefficients(128);
  Workload w;
  w.num_q_heads = w.num_kv_heads = 1;
  w.head_dim = 128;
  w.num_ctas = 1;
  struct Case {
    std::vector<u32> q, kv;
    Mask mask;
    u32 prompt_offset, kv_blocks, masked;
  };
  const std::vector<Case> cases = {
      // causal, 1000 rows: first tile sees keys 0..127 (1 block, on the diagonal)
      {{1000}, {}, Mask::Causal, 0, 1, 1},
      // causal tile at 256: keys 0..383 -> 3 blocks, the last crosses the diagonal
      {{1000}, {}, Mask::Causal, 256, 3, 1},
      // causal last tile (104 rows at 896): keys 0..999 -> 8 blocks, diagonal block partial
      {{1000}, {}, Mask::Causal, 896, 8, 1},
      // no mask: every tile sees 8 blocks, the last one is a partial tail of 104 keys
      {{1000}, {}, Mask::None, 128, 8, 1},
      {{1024}, {}, Mask::None, 0, 8, 0},
      // causal with 200 cached keys (bottom-right aligned): rows see keys up to 200+r, so
      // blocks [0,128) full, [128,256) and [256,300) masked
      {{100}, {300}, Mask::Causal, 0, 3, 2},
  };
  for (const Case& c : cases) {
    w.q_lens = c.q;
    w.kv_lens = c.kv;
    w.mask = c.mask;
    const Trace t = sim::replay(w, h200);
    const auto it = std::find_if(t.events.begin(), t.events.end(), [&](const TraceEvent& e) {
      return e.prompt_offset == c.prompt_offset;
    });
    REQUIRE(it != t.events.end());
    CAPTURE(show(*it));
    CHECK(it->kv_blocks == c.kv_blocks);
    CHECK(it->end_us - it->start_us ==
          doctest::Approx(k.fixed_us + k.us_per_block * (c.kv_blocks - c.masked) +
                          k.us_per_masked_block * c.masked));
  }
}

TEST_CASE("faithful mode replays upstream's extra tiles, safe mode skips them") {
  // q_lens {100, 200, 50}, BM = 128, one CTA: T = 2; idx 1 (prompt 0 at 128) and idx 5
  // (prompt 2 at 128) start past their sequence.
  Workload w;
  w.q_lens = {100, 200, 50};
  w.num_q_heads = w.num_kv_heads = 1;
  w.num_ctas = 1;
  const Trace safe = sim::replay(w);
  w.ragged_mode = RaggedMode::Faithful;
  const Trace faithful = sim::replay(w);
  std::vector<u32> safe_idx, faithful_idx;
  for (const auto& e : safe.events) safe_idx.push_back(e.linear_idx);
  for (const auto& e : faithful.events) faithful_idx.push_back(e.linear_idx);
  CHECK(safe_idx == std::vector<u32>{0, 2, 3, 4});
  CHECK(faithful_idx == std::vector<u32>{0, 1, 2, 3, 4, 5});
  CHECK(faithful.events[1].query_rows == 128);  // upstream's wrapped min(seq_len - offset, BM)
  CHECK(faithful.events[5].query_rows == 128);
}

TEST_CASE("replay rejects an invalid workload with its validation message") {
  Workload w;
  w.q_lens = {10};
  w.num_q_heads = 6;
  w.num_kv_heads = 4;
  CHECK(contains(invalid_argument_text([&] { sim::replay(w); }), "multiple of KV heads"));
}

namespace {

// A device of `sms` SMs holding `per_sm` CTAs each, where k busy CTAs each progress at rates[k-2].
sim::CostModel shared_cost(u32 sms, u32 per_sm, std::vector<double> rates) {
  sim::CostModel m = flat_cost(1.0, 1.0, 1.0);
  m.multiprocessors = sms;
  m.sharing_by_head_dim[1] = sim::SmSharing{per_sm, rates};
  m.sharing_by_head_dim[1024] = m.sharing_by_head_dim[1];
  return m;
}

// Two sequences of one query row over 1 and 3 keys, one head, BM = BN = 1: tile 0 costs
// 1 + 1 = 2 µs alone, tile 1 costs 1 + 3 = 4 µs.
Workload two_tiles() {
  Workload w;
  w.q_lens = {1, 1};
  w.kv_lens = {1, 3};
  w.num_q_heads = w.num_kv_heads = 1;
  w.head_dim = 8;
  w.block_m = w.block_n = 1;
  w.mask = Mask::None;
  w.num_ctas = 2;
  return w;
}

}  // namespace

TEST_CASE("co-resident CTAs share their SM: hand-computed processor sharing") {
  // One SM holding both CTAs, each at half speed while both are busy: tile 0 (2 µs of work) ends
  // at 4; tile 1 has done 2 of its 4 µs by then and finishes the rest alone, at 6.
  const Trace t = sim::replay(two_tiles(), shared_cost(1, 2, {0.5}));
  REQUIRE(t.events.size() == 2);
  CHECK(t.workload.resident_ctas == 2);
  CHECK(t.events[0].start_us == 0);
  CHECK(t.events[0].end_us == doctest::Approx(4.0));
  CHECK(t.events[1].start_us == 0);
  CHECK(t.events[1].end_us == doctest::Approx(6.0));
  CHECK(t.events[0].sm_id == 0);
  CHECK(t.events[1].sm_id == 0);
  // At 0.75 of full speed each: tile 0 ends at 2 / 0.75, tile 1 then has 2 µs left alone.
  const Trace faster = sim::replay(two_tiles(), shared_cost(1, 2, {0.75}));
  CHECK(faster.events[0].end_us == doctest::Approx(8.0 / 3.0));
  CHECK(faster.events[1].end_us == doctest::Approx(8.0 / 3.0 + 2.0));
  // Two SMs: the CTAs spread one per SM before sharing one, and take their solo times exactly.
  const Trace spread = sim::replay(two_tiles(), shared_cost(2, 2, {0.5}));
  CHECK(spread.events[0].sm_id == 0);
  CHECK(spread.events[1].sm_id == 1);
  CHECK(spread.events[0].end_us == 2.0);
  CHECK(spread.events[1].end_us == 4.0);
}

TEST_CASE("a grid beyond the resident slots runs in waves, each CTA in a slot freed before it") {
  // One SM, one slot: CTA 1 starts when CTA 0 exits.
  const Trace t = sim::replay(two_tiles(), shared_cost(1, 1, {}));
  REQUIRE(t.events.size() == 2);
  CHECK(t.workload.resident_ctas == 1);
  CHECK(t.events[0].end_us == 2.0);
  CHECK(t.events[1].start_us == 2.0);
  CHECK(t.events[1].end_us == 6.0);
  // The workload's resident_ctas overrides the profile: two slots on the 2-SM device.
  Workload w = two_tiles();
  w.resident_ctas = 2;
  const Trace both = sim::replay(w, shared_cost(2, 1, {}));
  CHECK(both.events[1].start_us == 0.0);
}

TEST_CASE("a CTA that takes a freed slot starts the profile's launch time after the exit") {
  sim::CostModel cost = shared_cost(1, 1, {});
  cost.cta_launch_us_by_head_dim[8] = 0.5;
  // One slot: CTA 1 starts 0.5 µs after CTA 0 exits; the first CTA starts at 0.
  const Trace t = sim::replay(two_tiles(), cost);
  REQUIRE(t.events.size() == 2);
  CHECK(t.events[0].start_us == 0.0);
  CHECK(t.events[1].start_us == 2.5);
  CHECK(t.events[1].end_us == 6.5);
  // Two slots: both CTAs start at once, no slot is refilled, the launch changes nothing.
  sim::CostModel two = shared_cost(2, 1, {});
  two.cta_launch_us_by_head_dim[8] = 0.5;
  const Trace both = sim::replay(two_tiles(), two);
  CHECK(both.events[1].start_us == 0.0);
  CHECK(both.events[1].end_us == 4.0);

  // A transient grid whose CTA 1 has no tile (sequence 0 has one row, T = 2): it holds the slot
  // for its launch and exits. Tiles: 1 + 1 = 2 µs (sequence 0), 1 + 2 = 3 µs (sequence 1).
  Workload w = two_tiles();
  w.q_lens = {1, 2};
  w.kv_lens.clear();
  w.scheduler = SchedulerKind::Transient;
  const Trace transient = sim::replay(w, cost);
  REQUIRE(transient.events.size() == 3);
  CHECK(transient.launched_ctas == 4);
  CHECK(transient.events[0].end_us == 2.0);
  CHECK(transient.events[1].cta == 2);
  CHECK(transient.events[1].start_us == 3.0);  // CTA 1: 2.5 .. 2.5; CTA 2 launched by 3.0
  CHECK(transient.events[2].start_us == 6.5);
  CHECK(sim::compute_metrics(transient).makespan_us == 9.5);
}

TEST_CASE("the CTA launch slows transient grids and leaves a persistent grid within its slots") {
  // Non-causal sequences of equal length: every tile costs the same, c. On S slots a transient
  // grid of N = k S CTAs runs k tiles and k - 1 launches per slot.
  sim::CostModel cost = flat_cost(1.0, 0.5, 0.5);
  cost.multiprocessors = 16;
  Workload w;
  w.q_lens = {512, 512};
  w.num_q_heads = 16;
  w.num_kv_heads = 4;
  w.mask = Mask::None;
  w.num_ctas = 16;
  w.scheduler = SchedulerKind::Transient;
  const double c = 1.0 + 0.5 * 4;  // 4 KV blocks of 128
  const u32 k = (4 * 16 * 2) / 16;
  const double without = sim::compute_metrics(sim::replay(w, cost)).makespan_us;
  CHECK(without == doctest::Approx(k * c));
  sim::CostModel launching = cost;
  launching.cta_launch_us_by_head_dim[128] = 1.25;
  CHECK(sim::compute_metrics(sim::replay(w, launching)).makespan_us ==
        doctest::Approx(k * c + (k - 1) * 1.25));
  // Persistent grids of C = slots: no CTA waits for a slot, the trace is the same.
  for (const SchedulerKind kind : {SchedulerKind::Tile, SchedulerKind::Queued}) {
    w.scheduler = kind;
    const Trace a = sim::replay(w, cost), b = sim::replay(w, launching);
    REQUIRE(a.events.size() == b.events.size());
    for (std::size_t i = 0; i < a.events.size(); ++i)
      REQUIRE_MESSAGE(same_event(a.events[i], b.events[i]), show(a.events[i]));
  }
}

TEST_CASE("placement: every tile's progress adds up to its solo cost, never more CTAs than slots") {
  // A small device where sharing happens everywhere: 3 SMs x 3 CTAs, rates 0.6 and 0.45.
  const sim::CostModel cost = shared_cost(3, 3, {0.6, 0.45});
  const sim::SmSharing sharing = cost.sharing(64);
  for (const SchedulerKind kind :
       {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::Transient}) {
    for_random_workloads(31, 60, kind, [&](Workload& w, int iter) {
      // Now and then a resident count of the workload's own (up to 4 per SM here).
      w.resident_ctas = iter % 3 == 0 ? u32(5 + iter % 8) : Workload::kResidentFromDevice;
      const Trace t = sim::replay(w, cost);
      CHECK(t.workload.resident_ctas == (w.resident_ctas ? w.resident_ctas : 9u));
      CHECK(sim::max_busy_per_sm(t) <= (t.workload.resident_ctas + 2) / 3);
      const auto by_busy = sim::time_by_busy_ctas(t);
      for (std::size_t i = 0; i < t.events.size(); ++i) {
        const TraceEvent& e = t.events[i];
        CAPTURE(show(e));
        CHECK(e.sm_id >= 0);
        CHECK(e.sm_id < 3);
        double progress = 0;
        for (std::size_t k = 0; k < by_busy[i].size(); ++k)
          progress += sharing.rate(u32(k + 1)) * by_busy[i][k];
        const double solo = cost.tile_time_us(t.workload, sim::event_tile_cost(t.workload, e));
        CHECK(progress == doctest::Approx(solo).epsilon(1e-9));
      }
      // Same inputs, same trace.
      const Trace again = sim::replay(w, cost);
      REQUIRE(again.events.size() == t.events.size());
      for (std::size_t i = 0; i < t.events.size(); ++i)
        REQUIRE_MESSAGE(same_event(t.events[i], again.events[i]), show(t.events[i]));
    });
  }
}

TEST_CASE("the replay fits each profile's CTAs per SM on an SM, and waits for a slot beyond") {
  Workload w = sim::default_workload();
  w.num_ctas = 264;
  // The shipped kernel on the H200: one CTA per SM at every head dim.
  const sim::CostModel shipped = sim::CostModel::builtin("h200");
  for (const u32 d : {64u, 128u, 256u}) {
    CAPTURE(d);
    w.head_dim = d;
    const Trace t = sim::replay(w);
    CHECK(t.workload.resident_ctas == shipped.resident_ctas(d));
    CHECK(sim::max_busy_per_sm(t) == shipped.sharing(d).ctas_per_sm);
  }
  // The mma.sync kernel: two CTAs per SM at d = 128, one at d = 256.
  const sim::CostModel mma_sync = sim::CostModel::builtin("h200_mma_sync");
  w.head_dim = 128;
  const Trace d128 = sim::replay(w, mma_sync);
  CHECK(d128.workload.resident_ctas == 264);
  CHECK(sim::max_busy_per_sm(d128) == 2);
  w.head_dim = 256;
  const Trace d256 = sim::replay(w, mma_sync);
  CHECK(d256.workload.resident_ctas == 132);
  CHECK(sim::max_busy_per_sm(d256) == 1);
  // 264 CTAs on 132 slots: the second half waits for the first half's CTAs to exit.
  std::set<u32> started_late;
  for (const TraceEvent& e : d256.events)
    if (e.step == 0 && e.start_us > 0) started_late.insert(e.cta);
  CHECK(started_late.size() == 132);
  CHECK(*started_late.begin() == 132);
}

TEST_CASE("replayed_tile_count predicts every replay's event count exactly, without replaying") {
  for (const auto& row : kSchedulerKindNames) {
    const SchedulerKind kind = row.value;
    for (const RaggedMode mode : {RaggedMode::Safe, RaggedMode::Faithful}) {
      const std::string kind_name = to_string(kind), mode_name = to_string(mode);
      CAPTURE(kind_name);
      CAPTURE(mode_name);
      for_random_workloads(77, 150, kind, [&](Workload& w, int) {
        w.ragged_mode = mode;
        const Trace t = sim::replay(w);
        CAPTURE(sim::workload_to_json(w).dump());
        CHECK(t.events.size() == sim::replayed_tile_count(w));
        // Reserved exactly: the events take their own size and no more.
        CHECK(t.events.capacity() == t.events.size());
        // Sorted in place into (cta, step) order.
        for (std::size_t i = 1; i < t.events.size(); ++i) {
          const TraceEvent &p = t.events[i - 1], &e = t.events[i];
          REQUIRE_MESSAGE((p.cta < e.cta || (p.cta == e.cta && p.step + 1 == e.step)), show(p),
                          show(e));
        }
        // The same batch decoding: one new token per sequence against its keys, tiles per KV head.
        Workload decode = w;
        decode.decoding = true;
        decode.ragged_mode = RaggedMode::Safe;
        decode.kv_lens.clear();
        for (u32 b = 0; b < w.batch_size(); ++b)
          decode.kv_lens.push_back(std::max<u32>(w.key_len(b), 1));
        decode.q_lens.assign(w.q_lens.size(), 1);
        if (!decode.validate().empty()) return;
        const Trace decoded = sim::replay(decode);
        CHECK(decoded.events.size() == sim::replayed_tile_count(decode));
        CHECK(decoded.events.capacity() == decoded.events.size());
      });
    }
  }
  for (const auto& row : kSchedulerKindNames) {
    Workload w;
    w.scheduler = row.value;
    CHECK(sim::replay_bytes_per_tile(w) <= 64);
  }
}
