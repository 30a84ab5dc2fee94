// compare and recommend: every strategy at every candidate CTA count, each really run under its
// own scheduler, ranked best first; the recommendation and the seed's DEFAULT found in the ranking.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "cli/l2_search.hpp"
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
  // The kernel runs decode tiles of up to BM / 16 query heads per KV head.
  const cli::StrategyResult* fastest = cli::fastest_kernel_run(results);
  REQUIRE(fastest != nullptr);
  CHECK(fastest->trace.workload.decoding);
  // A group of 16 query heads per KV head is 256 rows: past every run's BM of 128.
  Workload wide = w;
  wide.num_q_heads = 16 * wide.num_kv_heads;
  const auto wide_results = cli::compare_strategies(wide, sim::CostModel::builtin("h200"));
  for (const auto& r : wide_results) CHECK_FALSE(cli::kernel_runs(r));
  CHECK(cli::fastest_kernel_run(wide_results) == nullptr);
}

TEST_CASE("recommend: a split schedule it names for a prefill batch is one the kernel runs") {
  // A short-query, long-KV batch of few tiles (12 sequences x 32 heads x 1-2 tiles, under
  // kSplitCandidateRounds rounds of C): the split schedules are ranked, and lead.
  Workload w;
  w.q_lens = {128, 128, 256, 128, 128, 128, 128, 128, 256, 128, 128, 128};
  w.kv_lens = {32768, 32768, 131072, 98304, 65536, 98304, 98304, 65536, 131072, 98304, 98304,
               131072};
  w.mask = Mask::Causal;
  const auto results = cli::compare_strategies(w, sim::CostModel::builtin("h200"));
  const auto& best = results.at(cli::recommended_index(results));
  CHECK(splits_tiles(best.trace.workload.scheduler));
  CHECK(cli::kernel_runs(best));
  for (const auto& r : results) CHECK(cli::kernel_runs(r));
  CHECK(cli::fastest_kernel_run(results) == &results.front());
}

namespace {

// A short-query, long-KV causal batch (a chunk of 128 or 256 new rows over 32k-128k cached keys
// per sequence): 448 tiles, about 3.4 per CTA, the longest (128k keys) four times the shortest.
// Each (sequence, KV head) unit reads 16-64 MiB of K and V, so the default L2 sections exceed
// their 25 MiB budget and are only as large as l2_min_rounds makes them; they hold the longest
// tiles back until the previous section's are handed out.
Workload short_query_long_kv() {
  Workload w;
  // 544 tiles: more than kSplitCandidateRounds rounds of C, so the split schedules are not
  // ranked and the choice is between the L2 sections of the schedules the kernel runs.
  w.q_lens = {128, 128, 256, 128, 128, 128, 128, 128, 256, 128, 128, 128, 128, 128, 128};
  w.kv_lens = {32768, 32768, 131072, 98304, 65536, 98304, 98304, 65536,
               131072, 98304, 98304, 131072, 32768, 65536, 32768};
  w.mask = Mask::Causal;
  return w;  // 32 query / 8 KV heads, d 128, C = 132, l2_bytes 50 MiB
}

}  // namespace

TEST_CASE("L2 sections: the search replays each size whose sections differ, and no others") {
  Workload w = short_query_long_kv();
  const std::vector<std::uint64_t> sizes = cli::l2_bytes_to_search(w);
  REQUIRE(!sizes.empty());
  CHECK(sizes.front() == w.l2_bytes);  // the workload's own first
  CHECK(std::find(sizes.begin(), sizes.end(), 0u) != sizes.end());
  // The default sections exceed their budget: three of them, at least two rounds each.
  const cli::L2SectionSizes own = cli::l2_section_sizes(w);
  CHECK(own.sections == 3);
  CHECK(own.budget_bytes == w.l2_bytes / 2);
  CHECK(own.over_budget == 3);
  CHECK(own.largest_bytes > own.budget_bytes);
  // A workload whose K and V all fit one section: every size gives that section, so only the
  // workload's own is replayed.
  const Workload small = test::small_workload();
  CHECK(cli::l2_bytes_to_search(small) == std::vector<std::uint64_t>{small.l2_bytes});
  // Already without sections: nothing else to try.
  w.l2_bytes = 0;
  CHECK(cli::l2_bytes_to_search(w) == std::vector<std::uint64_t>{0});
}

TEST_CASE("recommend turns L2 sections off where the workload's own only restrict the order") {
  const Workload w = short_query_long_kv();
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  const auto ranked = cli::compare_strategies(w, cost);
  const std::size_t chosen = cli::recommended_index(ranked);
  REQUIRE(chosen < ranked.size());
  const cli::StrategyResult& r = ranked[chosen];
  CHECK(r.name == "lpt_queued");
  CHECK(r.searched_l2);
  CHECK(r.trace.workload.l2_bytes == 0);
  CHECK(cli::run_name(r) == "lpt_queued --l2-bytes 0");
  // It reaches the ideal bound (the total tile time over C), where the best with the workload's
  // own sections stops about 10 % above it.
  CHECK(r.metrics.makespan_us <= r.metrics.bound_us * 1.01);
  const cli::StrategyResult& own = ranked[cli::recommended_own_l2_index(ranked)];
  CHECK(!own.searched_l2);
  CHECK(own.trace.workload.l2_bytes == w.l2_bytes);
  CHECK(own.metrics.makespan_us >= own.metrics.bound_us * 1.08);
}

TEST_CASE("a searched L2 size wins only by more than the tolerance") {
  auto result = [&](SchedulerKind kind, double makespan, bool searched_l2) {
    cli::StrategyResult r;
    r.name = to_string(kind);
    r.trace.workload.scheduler = kind;
    r.metrics.makespan_us = makespan;
    r.searched_l2 = searched_l2;
    return r;
  };
  // 0.5 % faster without sections: the replay cannot see what the sections save, so they stay.
  CHECK(cli::recommended_index({result(SchedulerKind::LptQueued, 99.5, true),
                                result(SchedulerKind::LptQueued, 100.0, false)}) == 1);
  // 5 % faster: the searched size.
  CHECK(cli::recommended_index({result(SchedulerKind::LptQueued, 95.0, true),
                                result(SchedulerKind::LptQueued, 100.0, false)}) == 0);
  // Among the searched runs, a counter scheduler within the tolerance is still preferred.
  CHECK(cli::recommended_index({result(SchedulerKind::Planned, 94.8, true),
                                result(SchedulerKind::LptQueued, 95.0, true),
                                result(SchedulerKind::LptQueued, 100.0, false)}) == 1);
}
