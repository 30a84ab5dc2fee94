// compare: all six strategies, each really run under its own scheduler, ranked best first.
#include <doctest/doctest.h>

#include <set>

#include "cli/strategies.hpp"
#include "test_support.hpp"
#include "tilesched/sim/cost_model.hpp"

using namespace tilesched;

TEST_CASE("every strategy is run once, on the same problem, best makespan first") {
  const Workload base = test::small_workload();
  const auto results = cli::compare_strategies(base, sim::CostModel::builtin("h200"));
  REQUIRE(results.size() == 6);
  std::set<std::string> names;
  for (const auto& r : results) names.insert(r.name);
  CHECK(names == std::set<std::string>{"tile/default", "tile/prompt_rotate", "queued/default",
                                       "queued/prompt_rotate", "transient", "transient/flip"});
  for (std::size_t i = 1; i < results.size(); ++i)
    CHECK(results[i - 1].metrics.makespan_us <= results[i].metrics.makespan_us);
  for (const auto& r : results) {
    CAPTURE(r.name);
    CHECK(strategy_name(r.trace.workload) == r.name);  // the trace was made with that strategy
    CHECK(r.trace.workload.q_lens == base.q_lens);
    CHECK(r.trace.workload.num_ctas == base.num_ctas);
    CHECK(r.metrics.tile_count == r.trace.events.size());
  }
}

TEST_CASE("all_strategies keeps every other field of the workload") {
  Workload base = test::small_workload();
  base.mask = Mask::None;
  base.head_dim = 128;
  for (const Workload& w : cli::all_strategies(base)) {
    CHECK(w.mask == Mask::None);
    CHECK(w.head_dim == 128);
    CHECK(w.q_lens == base.q_lens);
  }
}
