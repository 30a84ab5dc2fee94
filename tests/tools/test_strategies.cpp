// compare and recommend: every strategy at every candidate CTA count, each really run under its
// own scheduler, ranked best first; the recommendation and the seed's DEFAULT found in the ranking.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "cli/strategies.hpp"
#include "test_support.hpp"
#include "tilesched/sim/cost_model.hpp"

using namespace tilesched;

TEST_CASE("every strategy is run once per CTA count, on the same problem, best makespan first") {
  const Workload base = test::small_workload();
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  // C = the workload's 5, the profile's SMs and its resident slots at this head dim.
  std::vector<u32> counts = {5, cost.multiprocessors, cost.resident_ctas(base.head_dim)};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  CHECK(cli::candidate_cta_counts(base, cost) == counts);
  const auto results = cli::compare_strategies(base, cost);
  // The split schedules where the small workload's 52 tiles are fewer than 4 rounds of C.
  const std::size_t split_counts =
      std::count_if(counts.begin(), counts.end(), [](u32 c) { return 52 < 4 * c; });
  CHECK(base.valid_tile_count() == 52);
  REQUIRE(results.size() == counts.size() * 10 + split_counts * 2);
  std::set<std::pair<std::string, u32>> runs;
  for (const auto& r : results) runs.insert({r.name, r.num_ctas});
  CHECK(runs.size() == results.size());
  for (const u32 ctas : counts)
    for (const char* name :
         {"tile/default", "tile/prompt_rotate", "queued/default", "queued/prompt_rotate",
          "transient", "transient/flip", "lpt", "lpt_queued", "planned", "ragged_queued/default",
          "split_kv", "stream_k"}) {
      const bool split = std::string(name) == "split_kv" || std::string(name) == "stream_k";
      CHECK_MESSAGE(runs.count({name, ctas}) == (split && 52 >= 4 * ctas ? 0u : 1u), name,
                    " at C = ", ctas);
    }
  for (std::size_t i = 1; i < results.size(); ++i)
    CHECK(results[i - 1].metrics.makespan_us <= results[i].metrics.makespan_us);
  for (const auto& r : results) {
    CAPTURE(r.name);
    CHECK(strategy_name(r.trace.workload) == r.name);  // the trace was made with that strategy
    CHECK(r.trace.workload.q_lens == base.q_lens);
    CHECK(r.trace.workload.num_ctas == r.num_ctas);
    CHECK(r.trace.workload.resident_ctas == r.num_ctas);
    CHECK(r.metrics.tile_count == r.trace.events.size());
  }
}

TEST_CASE("all_strategies keeps every other field of the workload") {
  Workload base = test::small_workload();
  base.mask = Mask::None;
  base.head_dim = 128;
  base.decoding = false;
  for (const Workload& w : cli::all_strategies(base)) {
    CHECK(w.mask == Mask::None);
    CHECK(w.head_dim == 128);
    CHECK(w.q_lens == base.q_lens);
    CHECK(w.num_ctas == base.num_ctas);
  }
}

TEST_CASE("the seed's strategies are the first six of the list") {
  for (const char* name : {"tile/default", "tile/prompt_rotate", "queued/default",
                           "queued/prompt_rotate", "transient", "transient/flip"})
    CHECK_MESSAGE(cli::is_seed_strategy(name), name);
  for (const char* name : {"lpt", "lpt_queued", "planned", "ragged_queued/default",
                           "ragged_queued/prompt_rotate", "tile/default/faithful", "nonsense"})
    CHECK_MESSAGE(!cli::is_seed_strategy(name), name);
}

TEST_CASE("the recommendation: the fastest, or a counter scheduler within the tolerance of it") {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  std::vector<cli::StrategyResult> ranked = cli::compare_strategies(test::small_workload(), cost);
  const std::size_t chosen = cli::recommended_index(ranked);
  REQUIRE(chosen < ranked.size());
  CHECK(ranked[chosen].metrics.makespan_us <=
        ranked.front().metrics.makespan_us * (1 + cli::kRecommendTolerance));
  if (chosen > 0) CHECK(takes_from_counter(ranked[chosen].trace.workload.scheduler));
  // A static plan first and a counter scheduler 0.5 % behind: the counter scheduler is chosen;
  // 5 % behind, the static plan stays.
  auto result = [&](SchedulerKind kind, double makespan) {
    cli::StrategyResult r;
    r.name = to_string(kind);
    r.trace.workload.scheduler = kind;
    r.metrics.makespan_us = makespan;
    return r;
  };
  CHECK(cli::recommended_index(
            {result(SchedulerKind::Planned, 100.0), result(SchedulerKind::LptQueued, 100.5)}) == 1);
  CHECK(cli::recommended_index(
            {result(SchedulerKind::Planned, 100.0), result(SchedulerKind::LptQueued, 105.0)}) == 0);
  // The seed's DEFAULT is tile/default at one CTA per SM.
  const cli::StrategyResult* seed = cli::seed_default(ranked, 132);
  REQUIRE(seed != nullptr);
  CHECK(seed->name == "tile/default");
  CHECK(seed->num_ctas == 132);
}

TEST_CASE("compare runs decode workloads too") {
  Workload w = test::small_workload();
  w.decoding = true;
  w.kv_lens = w.q_lens;
  w.q_lens.assign(w.kv_lens.size(), 1);
  const auto results = cli::compare_strategies(w, sim::CostModel::builtin("h200"));
  std::set<std::string> names;
  for (const auto& r : results) {
    CAPTURE(r.name);
    names.insert(r.name);
    // One tile per (sequence, KV head); the split schedules hand out pieces of them.
    if (splits_tiles(r.trace.workload.scheduler))
      CHECK(r.metrics.tile_count >= w.batch_size() * w.num_kv_heads);
    else
      CHECK(r.metrics.tile_count == w.batch_size() * w.num_kv_heads);
  }
  CHECK(names.count("split_kv") == 1);
  CHECK(names.count("stream_k") == 1);
}
