// The prediction suite as an H200 measured it (tests/data/h200_suite, written by `tilesched
// suite-run` on the device, see docs/prediction-report.md): CI replays every kept trace against the
// simulator with the cost file the device run planned its schedules with, so a change to the
// schedulers or the replay that would no longer match the GPU fails here, without a GPU.
#include <doctest/doctest.h>

#include <string>

#include "cli/suite_results.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

using namespace tilesched;

TEST_CASE("the H200 suite: every run passed its checks, every kept trace replays to its schedule") {
  const std::string dir = TILESCHED_SUITE_DATA_DIR;
  const cli::SuiteResults results = cli::read_suite_results(dir);
  CHECK(results.source == "gpu");
  REQUIRE(results.runs.size() >= 40);
  for (const cli::SuiteRunResult& r : results.runs) {
    CAPTURE(r.workload_name);
    CAPTURE(r.strategy);
    CHECK(r.schedule_problems.empty());
    CHECK(r.unwritten_outputs == 0);
  }
  const sim::CostModel planned_with = sim::CostModel::load(dir + "/cost_at_recording.json");
  const std::vector<cli::SuiteTrace> traces = cli::read_suite_traces(dir, results);
  REQUIRE(traces.size() >= 40);
  for (const cli::SuiteTrace& t : traces) {
    CAPTURE(t.run->workload_name);
    CAPTURE(t.run->strategy);
    CHECK(t.trace.source == "gpu");
    const Trace model = sim::replay(t.trace.workload, planned_with);
    const std::vector<std::string> problems = sim::schedule_differences(model, t.trace);
    INFO((problems.empty() ? std::string() : problems.front()));
    CHECK(problems.empty());
    CHECK(sim::compute_metrics(t.trace).tile_count == model.events.size());
  }
}
