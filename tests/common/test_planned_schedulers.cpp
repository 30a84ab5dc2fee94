// Property tests of the planned schedulers (lpt, lpt_queued, planned, ragged_queued) and their
// host builders, over seeded random problems: every valid tile exactly once and nothing else,
// the grid, determinism, the orders and the planner's balance.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "random_problem.hpp"
#include "scheduler_walk.hpp"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/schedule_plan.hpp"

using namespace tilesched;
using tilesched::testing::flatten_sorted;
using tilesched::testing::hand_off;
using tilesched::testing::random_problem;
using tilesched::testing::RandomProblem;
using tilesched::testing::SplitMix64;
using tilesched::testing::walk_all;
using tilesched::testing::walk_interleaved;

namespace {

constexpr int kProblems = 3000;

// A tile cost that grows with the KV blocks and charges masked blocks extra, as the fitted model
// does.
double test_cost(const TileCost& c) {
  return 1.5 + 2.0 * double(c.kv_blocks - c.masked_blocks) + 2.5 * double(c.masked_blocks);
}

// The random problem as a workload (one KV head per `group` query heads, a random mask and L2).
Workload workload_of(const RandomProblem& p, SplitMix64& rng) {
  Workload w;
  w.padded = p.offsets.empty();
  if (w.padded) {
    w.q_lens.assign(p.batch_size, p.max_seq_len);
  } else {
    for (std::size_t b = 0; b + 1 < p.offsets.size(); ++b)
      w.q_lens.push_back(p.offsets[b + 1] - p.offsets[b]);
  }
  w.num_q_heads = p.num_heads;
  w.num_kv_heads = p.num_heads % 2 == 0 && rng.chance(50) ? p.num_heads / 2 : p.num_heads;
  w.head_dim = 64;
  w.block_m = p.tile_shape;
  w.block_n = rng.uniform(1, 160);
  w.mask = rng.chance(70) ? Mask::Causal : Mask::None;
  w.num_ctas = p.num_ctas;
  w.schedule = p.schedule;
  // From one unit per section to everything in one.
  const std::uint64_t l2[] = {0, 1, 4096, 65536, kDefaultL2Bytes};
  w.l2_bytes = l2[rng.uniform(0, 4)];
  return w;
}

// (prompt, head, prompt_offset) of a processed index, checking it is a tile worth processing.
using Coords = std::tuple<u32, u32, u32>;

template <class Scheduler>
std::vector<Coords> coords_of(const Scheduler& sched, const TileSummary& summary,
                              const std::vector<u32>& indices) {
  std::vector<Coords> out;
  for (const u32 idx : indices) {
    const SeqInfo s = sched.unsafe_seq_info(summary, idx);
    REQUIRE_MESSAGE(s.is_valid(), "index ", idx, " names a tile past its sequence");
    out.emplace_back(s.prompt_idx, s.head_idx, s.prompt_offset);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every tile that starts inside its sequence, by coordinates.
std::vector<Coords> valid_coords(const Workload& w) {
  std::vector<Coords> out;
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 h = 0; h < w.scheduled_heads(); ++h)
      for (u32 off = 0; off < w.q_lens[b]; off += w.tile_shape()) out.emplace_back(b, h, off);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<u32> iota_to(u32 n) {
  std::vector<u32> v(n);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

// Calls f(scheduler, summary, plan, counter_value) with w's scheduler over its plan (built with
// test_cost) and a host counter that starts at 0.
template <class F>
void with_planned_scheduler(const Workload& w, F&& f) {
  const SchedulePlan plan = build_schedule_plan(w, test_cost);
  const std::vector<u32> q_offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(q_offsets.data());
  u32 counter_value = 0;
  with_scheduler(w, SchedulerInputs{AtomicCounter{&counter_value}, plan.arrays()},
                 [&](const auto& sched) { f(sched, summary, plan, counter_value); });
}

// The checks every planned scheduler must pass on one workload: grid, own indices 0..M-1 each
// exactly once, and those indices naming exactly the valid tiles.
template <class Walk>
void check_covers_valid_tiles(const Workload& w, Walk&& walk) {
  with_planned_scheduler(w, [&](const auto& sched, const TileSummary& summary,
                                const SchedulePlan& plan, u32& counter_value) {
    const u32 M = static_cast<u32>(w.valid_tile_count());
    REQUIRE(plan.tile_count == M);
    REQUIRE(sched.grid_dim(summary).x == std::min(w.num_ctas, M));
    if constexpr (takes_from_counter(std::decay_t<decltype(sched)>::kind))
      counter_value = sched.counter_start();
    const auto per_cta = walk(sched, summary);
    const std::vector<u32> all = flatten_sorted(per_cta);
    REQUIRE(all == iota_to(M));
    REQUIRE(coords_of(sched, summary, all) == valid_coords(w));
  });
}

void for_random_workloads(std::uint64_t seed, SchedulerKind kind,
                          const std::function<void(const Workload&, SplitMix64&)>& check) {
  SplitMix64 rng(seed);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    Workload w = workload_of(p, rng);
    w.scheduler = kind;
    INFO("problem ", n, ": ", p.describe(), " l2 ", w.l2_bytes, " ", to_string(w.mask));
    REQUIRE_MESSAGE(w.validate().empty(), w.validate());
    check(w, rng);
  }
}

}  // namespace

TEST_CASE("static planned schedulers: every valid tile exactly once, nothing else") {
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::Planned}) {
    CAPTURE(std::string(to_string(kind)));
    for_random_workloads(0x91a0001, kind, [](const Workload& w, SplitMix64&) {
      check_covers_valid_tiles(
          w, [](const auto& s, const TileSummary& sum) { return walk_all(s, sum); });
    });
  }
}

TEST_CASE("counter planned schedulers: any fetch interleaving, every valid tile exactly once") {
  for (const SchedulerKind kind : {SchedulerKind::LptQueued, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    for_random_workloads(0x91a0002, kind, [](const Workload& w, SplitMix64& rng) {
      check_covers_valid_tiles(w, [&](const auto& s, const TileSummary& sum) {
        const auto per_cta = walk_interleaved(s, sum, rng);
        // Counter order: after its static first index, a CTA's indices increase.
        for (const auto& seq : per_cta) REQUIRE(std::is_sorted(seq.begin(), seq.end()));
        return per_cta;
      });
    });
  }
}

TEST_CASE("lpt: the order is longest first within L2 sections, walked in a snake") {
  for_random_workloads(0x91a0003, SchedulerKind::Lpt, [](const Workload& w, SplitMix64&) {
    const std::vector<PlannedTile> tiles = longest_first_tiles(w, test_cost);
    const std::vector<PlannedTile> in_default_order = valid_tiles(w, test_cost);
    const std::vector<u32> sections = l2_sections(w, in_default_order, l2_section_budget(w));
    std::map<u32, u32> section;  // tile id -> section
    for (std::size_t i = 0; i < sections.size(); ++i) section[in_default_order[i].id] = sections[i];
    REQUIRE(tiles.size() == in_default_order.size());
    for (std::size_t i = 1; i < tiles.size(); ++i) {
      const PlannedTile &a = tiles[i - 1], &b = tiles[i];
      const u32 sa = section.at(a.id), sb = section.at(b.id);
      REQUIRE(sa <= sb);
      if (sa == sb) REQUIRE(a.cost >= b.cost);
      if (sa == sb && a.cost == b.cost) REQUIRE(a.id < b.id);  // ties keep DEFAULT order
    }
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    const runtime::LptScheduler sched(w.mapping(), w.num_ctas, plan.order.data(), plan.tile_count);
    const std::vector<u32> q_offsets = w.q_row_offsets();
    const auto per_cta = walk_all(sched, w.summary(q_offsets.data()));
    const std::uint64_t C = w.num_ctas, M = plan.tile_count;
    for (u32 c = 0; c < per_cta.size(); ++c) {
      std::vector<u32> snake;  // round r: place c (r even) or C-1-c (r odd)
      for (std::uint64_t r = 0; r * C < M; ++r) {
        const std::uint64_t pos = r * C + (r % 2 ? C - 1 - c : c);
        if (pos < M) snake.push_back(u32(pos));
      }
      REQUIRE(per_cta[c] == snake);
    }
  });
}

TEST_CASE("planned: the CTA lists are the greedy plan, within total / C + the longest tile") {
  for_random_workloads(0x91a0004, SchedulerKind::Planned, [](const Workload& w, SplitMix64&) {
    const TileLists lists = balanced_lists(w, test_cost);
    const std::vector<PlannedTile> tiles = valid_tiles(w, test_cost);
    std::map<u32, double> cost_of;
    double total = 0, longest = 0;
    for (const PlannedTile& t : tiles) {
      cost_of[t.id] = t.cost;
      total += t.cost;
      longest = std::max(longest, t.cost);
    }
    REQUIRE(lists.offsets.size() == std::min<std::size_t>(w.num_ctas, tiles.size()) + 1);
    REQUIRE(lists.offsets.back() == tiles.size());
    double makespan = 0;
    for (std::size_t c = 0; c + 1 < lists.offsets.size(); ++c) {
      double load = 0;
      for (u32 i = lists.offsets[c]; i < lists.offsets[c + 1]; ++i)
        load += cost_of.at(lists.tiles[i]);
      CHECK(load == doctest::Approx(lists.loads[c]));
      makespan = std::max(makespan, load);
    }
    CHECK(makespan <= total / double(lists.offsets.size() - 1) + longest + 1e-9);
    // The scheduler walks exactly these lists.
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    const runtime::PlannedListScheduler sched(w.mapping(), w.num_ctas, plan.list_offsets.data(),
                                              plan.list_tiles.data(), plan.tile_count);
    const std::vector<u32> q_offsets = w.q_row_offsets();
    const auto per_cta = walk_all(sched, w.summary(q_offsets.data()));
    for (std::size_t c = 0; c < per_cta.size(); ++c) {
      const std::vector<u32> own(lists.tiles.begin() + lists.offsets[c],
                                 lists.tiles.begin() + lists.offsets[c + 1]);
      std::vector<u32> ids;
      for (u32 idx : per_cta[c]) ids.push_back(plan.list_tiles[idx]);
      REQUIRE(ids == own);
    }
  });
}

// The best makespan of `costs` on `ctas` machines, by trying every assignment.
double brute_force_optimum(const std::vector<double>& costs, u32 ctas) {
  double best = INFINITY;
  std::vector<u32> assign(costs.size(), 0);
  for (;;) {
    std::vector<double> load(ctas, 0.0);
    for (std::size_t i = 0; i < costs.size(); ++i) load[assign[i]] += costs[i];
    best = std::min(best, *std::max_element(load.begin(), load.end()));
    std::size_t i = 0;
    while (i < assign.size() && ++assign[i] == ctas) assign[i++] = 0;
    if (i == assign.size()) return best;
  }
}

TEST_CASE("planned without sections is Graham's LPT: within 4/3 - 1/(3C) of the optimum") {
  SplitMix64 rng(0x91a0005);
  int checked = 0;
  for (int n = 0; n < 2000; ++n) {
    Workload w;
    w.block_m = w.block_n = 16;
    for (u32 b = rng.uniform(1, 3); b > 0; --b) w.q_lens.push_back(rng.uniform(1, 64));
    w.num_q_heads = w.num_kv_heads = rng.uniform(1, 2);
    w.mask = Mask::Causal;
    w.num_ctas = rng.uniform(2, 3);
    w.l2_bytes = 0;
    w.scheduler = SchedulerKind::Planned;
    const std::vector<PlannedTile> tiles = valid_tiles(w, test_cost);
    if (tiles.size() > 9 || tiles.size() <= w.num_ctas) continue;
    ++checked;
    std::vector<double> costs;
    for (const PlannedTile& t : tiles) costs.push_back(t.cost);
    const TileLists lists = balanced_lists(w, test_cost);
    const double makespan = *std::max_element(lists.loads.begin(), lists.loads.end());
    const double optimum = brute_force_optimum(costs, w.num_ctas);
    INFO("problem ", n, ": ", w.q_lens.size(), " sequences, C ", w.num_ctas);
    CHECK(makespan <= (4.0 / 3.0 - 1.0 / (3.0 * w.num_ctas)) * optimum + 1e-9);
  }
  CHECK(checked > 200);
}

TEST_CASE("ragged_queued processes the queued scheduler's tiles, without its wasted fetches") {
  SplitMix64 rng(0x91a0006);
  for (int n = 0; n < kProblems; ++n) {
    const RandomProblem p = random_problem(rng);
    Workload w = workload_of(p, rng);
    INFO("problem ", n, ": ", p.describe());
    const std::vector<u32> q_offsets = w.q_row_offsets();
    const TileSummary summary = w.summary(q_offsets.data());
    u32 counter_value = 0;
    const runtime::QueuedTileScheduler queued(w.mapping(), w.num_ctas,
                                              AtomicCounter{&counter_value});
    counter_value = queued.counter_start();
    const auto queued_tiles =
        coords_of(queued, summary, flatten_sorted(walk_interleaved(queued, summary, rng)));
    const u32 queued_fetches = counter_value;
    w.scheduler = SchedulerKind::RaggedQueued;
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    const runtime::RaggedQueuedScheduler ragged(w.mapping(), w.num_ctas, plan.sequence_tiles.data(),
                                                plan.tile_count, AtomicCounter{&counter_value});
    counter_value = ragged.counter_start();
    const auto ragged_tiles =
        coords_of(ragged, summary, flatten_sorted(walk_interleaved(ragged, summary, rng)));
    REQUIRE(ragged_tiles == queued_tiles);
    // One fetch per tile past the static ones, plus one per CTA that runs off the end.
    CHECK(counter_value ==
          std::max(plan.tile_count, w.num_ctas) + std::min(plan.tile_count, w.num_ctas));
    CHECK(counter_value <= queued_fetches);
  }
}

TEST_CASE("ragged_queued: a claim finds its sequence past empty ones; rotate reverses odd heads") {
  Workload w;
  w.q_lens = {0, 300, 0, 0, 100, 0};  // tiles 3 and 1 at BM 128
  w.num_q_heads = w.num_kv_heads = 2;
  w.num_ctas = 4;
  w.scheduler = SchedulerKind::RaggedQueued;
  const SchedulePlan plan = build_schedule_plan(w, test_cost);
  CHECK(plan.sequence_tiles == std::vector<u32>{0, 0, 3, 3, 3, 4, 4});
  const std::vector<u32> q_offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(q_offsets.data());
  const auto coords = [&](Schedule order) {
    w.schedule = order;
    const runtime::RaggedQueuedScheduler s(w.mapping(), w.num_ctas, plan.sequence_tiles.data(),
                                           plan.tile_count, AtomicCounter{});
    std::vector<Coords> out;
    for (u32 j = 0; j < plan.tile_count; ++j) {
      const WorkInfo t = s.tile_work(summary, j);
      out.emplace_back(t.prompt_idx, t.head_idx, t.prompt_offset);
    }
    return out;
  };
  CHECK(coords(Schedule::Default) == std::vector<Coords>{{1, 0, 0},
                                                         {1, 0, 128},
                                                         {1, 0, 256},
                                                         {1, 1, 0},
                                                         {1, 1, 128},
                                                         {1, 1, 256},
                                                         {4, 0, 0},
                                                         {4, 1, 0}});
  CHECK(coords(Schedule::PromptRotate) == std::vector<Coords>{{1, 0, 0},
                                                              {1, 0, 128},
                                                              {1, 0, 256},
                                                              {1, 1, 256},
                                                              {1, 1, 128},
                                                              {1, 1, 0},
                                                              {4, 0, 0},
                                                              {4, 1, 0}});
}

TEST_CASE("L2 sections: runs of at least l2_min_rounds whole rounds, more while their units fit") {
  Workload w;
  w.q_lens = {1000, 200, 4000, 100};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.head_dim = 64;  // a unit's K+V: 256 bytes per key
  w.mask = Mask::None;
  w.block_m = 100;  // tiles per head: 10, 2, 40, 1 (212 in all)
  w.num_ctas = 4;
  CHECK(w.l2_min_rounds == kDefaultL2MinRounds);
  const std::vector<PlannedTile> tiles = valid_tiles(w, test_cost);
  REQUIRE(tiles.size() == 212);
  // Budget: 1000 keys' worth. Units of sequence 0 (1000 keys) fill it alone; rounds of C = 4
  // tiles go 10 per head, so a round can straddle two units of sequence 0.
  for (const u32 min_rounds : {1u, 2u, 3u}) {
    CAPTURE(min_rounds);
    w.l2_min_rounds = min_rounds;
    const std::vector<u32> s = l2_sections(w, tiles, 256 * 1000);
    std::vector<u32> first_of_section;  // tile positions where a section starts
    for (std::size_t i = 0; i < s.size(); ++i)
      if (i == 0 || s[i] != s[i - 1]) first_of_section.push_back(u32(i));
    for (std::size_t k = 0; k < first_of_section.size(); ++k) {
      CAPTURE(k);
      const u32 begin = first_of_section[k];
      const u32 end = k + 1 < first_of_section.size() ? first_of_section[k + 1] : u32(s.size());
      CHECK(begin % w.num_ctas == 0);  // sections start on round boundaries
      CHECK(s[begin] == k);            // numbered in order
      std::set<std::pair<u32, u32>> units;
      for (u32 i = begin; i < end; ++i) units.insert({tiles[i].prompt, tiles[i].head / 2});
      std::uint64_t bytes = 0;
      for (const auto& unit : units) bytes += kv_unit_bytes(w, unit.first);
      // At least l2_min_rounds rounds (all but the last section: the tiles may run out).
      const u32 rounds = (end - begin + w.num_ctas - 1) / w.num_ctas;
      if (end < s.size()) CHECK(rounds >= min_rounds);
      // Within the budget, unless the section has only its l2_min_rounds rounds.
      if (rounds > min_rounds) CHECK(bytes <= 256 * 1000);
      // Maximal: the next round would not have fitted.
      if (end < s.size()) {
        std::set<std::pair<u32, u32>> more = units;
        for (u32 i = end; i < std::min<u32>(end + w.num_ctas, u32(s.size())); ++i)
          more.insert({tiles[i].prompt, tiles[i].head / 2});
        std::uint64_t more_bytes = 0;
        for (const auto& unit : more) more_bytes += kv_unit_bytes(w, unit.first);
        CHECK(more_bytes > 256 * 1000);
      }
    }
    // More rounds per section, fewer sections: 53 rounds in all.
    CHECK(first_of_section.size() > 4);
    CHECK(first_of_section.size() <= (53 + min_rounds - 1) / min_rounds);
    CHECK(l2_sections(w, tiles, 0) == std::vector<u32>(tiles.size(), 0));
    CHECK(l2_sections(w, tiles, 1ull << 40) == std::vector<u32>(tiles.size(), 0));
  }
}

TEST_CASE("decoding: KV heads are the scheduled heads, one tile each per sequence") {
  Workload w;
  w.decoding = true;
  w.q_lens = {1, 1, 1, 1, 1};
  w.kv_lens = {4000, 17, 900, 1, 65000};
  w.num_q_heads = 32;
  w.num_kv_heads = 4;
  w.num_ctas = 6;
  REQUIRE(w.validate().empty());
  CHECK(w.valid_tile_count() == 5 * 4);
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                   SchedulerKind::Planned, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    w.scheduler = kind;
    SplitMix64 rng(3);
    check_covers_valid_tiles(
        w, [&](const auto& s, const TileSummary& sum) { return walk_interleaved(s, sum, rng); });
  }
  // A mixed batch: sequence 1 becomes a prefill chunk of 40 new tokens, 3 tiles per KV head.
  Workload mixed = w;
  mixed.q_lens[1] = 40;
  mixed.kv_lens[1] = 900;
  REQUIRE(mixed.validate().empty());
  CHECK(mixed.valid_tile_count() == (4 + 3) * 4);
  CHECK(mixed.summary(nullptr).max_idx(mixed.scheduled_heads()) == 5 * 4 * 3);
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                   SchedulerKind::Planned, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    mixed.scheduler = kind;
    SplitMix64 rng(4);
    check_covers_valid_tiles(mixed, [&](const auto& s, const TileSummary& sum) {
      return walk_interleaved(s, sum, rng);
    });
  }
  // The longest first: sequence 4's KV heads (65000 keys), then sequence 0's.
  w.l2_bytes = 0;
  const std::vector<PlannedTile> tiles = longest_first_tiles(w, test_cost);
  for (u32 i = 0; i < 4; ++i) CHECK(tiles[i].prompt == 4);
  for (u32 i = 4; i < 8; ++i) CHECK(tiles[i].prompt == 0);
}

TEST_CASE("with_scheduler refuses a planned scheduler without its plan") {
  Workload w;
  w.q_lens = {100};
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                   SchedulerKind::Planned, SchedulerKind::RaggedQueued}) {
    w.scheduler = kind;
    CAPTURE(std::string(to_string(kind)));
    CHECK_THROWS_WITH_AS(with_scheduler(w, AtomicCounter{}, [](const auto&) { return 0; }),
                         doctest::Contains("walks a schedule plan"), std::invalid_argument);
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    CHECK(with_scheduler(w, SchedulerInputs{AtomicCounter{}, plan.arrays()},
                         [](const auto& s) { return s.kind; }) == kind);
  }
}

TEST_CASE("a schedule plan built for another workload is named as not fitting") {
  Workload w;
  w.q_lens = {300, 40, 129};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.num_ctas = 5;
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                   SchedulerKind::Planned, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    w.scheduler = kind;
    CHECK(schedule_plan_mismatch(w, build_schedule_plan(w, test_cost)).empty());
    // One more sequence: more tiles (and B+1 prefix sums) than the plan has.
    Workload longer = w;
    longer.q_lens.push_back(200);
    CHECK_MESSAGE(schedule_plan_mismatch(longer, build_schedule_plan(w, test_cost))
                          .find("does not fit the workload") != std::string::npos,
                  "a plan for fewer tiles must not fit");
    // Same tiles, other sizes of the arrays the kind walks.
    SchedulePlan plan = build_schedule_plan(w, test_cost);
    if (kind == SchedulerKind::Planned) {
      Workload fewer_ctas = w;
      fewer_ctas.num_ctas = 3;  // its lists are 4 offsets, the plan has 6
      CHECK(schedule_plan_mismatch(fewer_ctas, plan) ==
            "the planned scheduler's plan does not fit the workload: list_offsets has 6 entries, "
            "not 4");
    } else if (kind == SchedulerKind::RaggedQueued) {
      plan.sequence_tiles.pop_back();
      CHECK(schedule_plan_mismatch(w, plan).find("sequence_tiles has 3 entries, not 4") !=
            std::string::npos);
    } else {
      plan.order.pop_back();
      CHECK(schedule_plan_mismatch(w, plan).find("the order has") != std::string::npos);
    }
  }
  // The seed's schedulers walk no plan: any plan fits.
  w.scheduler = SchedulerKind::Queued;
  CHECK(schedule_plan_mismatch(w, SchedulePlan{}).empty());
}

TEST_CASE("planned schedulers are deterministic: the same plan and walk twice") {
  for_random_workloads(0x91a0007, SchedulerKind::Planned, [](const Workload& w, SplitMix64&) {
    for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::Planned}) {
      Workload v = w;
      v.scheduler = kind;
      const SchedulePlan a = build_schedule_plan(v, test_cost),
                         b = build_schedule_plan(v, test_cost);
      CHECK(a.order == b.order);
      CHECK(a.list_offsets == b.list_offsets);
      CHECK(a.list_tiles == b.list_tiles);
    }
  });
}

TEST_CASE("AnyScheduler holds each planned scheduler call for call, producer hand-off included") {
  for (const SchedulerKind kind : {SchedulerKind::Lpt, SchedulerKind::LptQueued,
                                   SchedulerKind::Planned, SchedulerKind::RaggedQueued}) {
    CAPTURE(std::string(to_string(kind)));
    for_random_workloads(0x91a0008, kind, [&](const Workload& w, SplitMix64&) {
      with_planned_scheduler(w, [&](const auto& sched, const TileSummary& summary,
                                    const SchedulePlan& plan, u32& counter_value) {
        const runtime::AnyScheduler any(sched);
        REQUIRE(any.kind == kind);
        CHECK(any.may_advance());
        CHECK(any.grid_dim(summary).x == sched.grid_dim(summary).x);
        CHECK(any.counter_start() == (takes_from_counter(kind) ? w.num_ctas : 0u));
        counter_value = any.counter_start();
        const auto direct = walk_all(sched, summary);
        counter_value = any.counter_start();
        CHECK(walk_all(any, summary) == direct);
        // The kernel's hand-off, CTA after CTA: every tile once.
        counter_value = any.counter_start();
        std::vector<std::vector<u32>> handed;
        for (u32 c = 0; c < any.grid_dim(summary).x; ++c)
          handed.push_back(hand_off(any, summary, BlockIndex{c, 0, 0}));
        CHECK(flatten_sorted(handed) == iota_to(plan.tile_count));
      });
    });
  }
}
