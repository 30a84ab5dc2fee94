// The prediction suite as an H200 measured it (tests/data/h200/suite, written by `tilesched
// suite-run` on the device, see docs/prediction-report.md): CI replays every kept trace against the
// simulator with the cost file the device run planned its schedules with, so a change to the
// schedulers or the replay that would no longer match the GPU fails here, without a GPU; and it
// holds the shipped sm90 profile to the prediction target on the measured makespans.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cli/prediction_report.hpp"
#include "cli/suite_results.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

using namespace tilesched;

namespace {
const std::string kShippedProfile = std::string(TILESCHED_SIM_DATA_DIR) + "/cost_h200_sm90.json";

// Each GPU trace against the simulator's replay of its workload under `planned_with`, by
// sim::schedule_differences' rule for its scheduler kind, and as many tiles.
void check_replays(const std::vector<cli::SuiteTrace>& traces, const sim::CostModel& planned_with) {
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
}  // namespace

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
  check_replays(traces, planned_with);

  // The shipped sm90 profile's CTA launch is what `fit --launch-only` derives from these traces
  // against its tile costs (docs/sim-cost-model.md), to the 4 decimals the file keeps.
  const sim::CostModel shipped = sim::CostModel::load(kShippedProfile);
  std::vector<Trace> measured;
  for (const cli::SuiteTrace& t : traces) measured.push_back(t.trace);
  for (const u32 d : {64u, 128u, 256u}) {
    CAPTURE(d);
    const sim::LaunchFit fit = sim::fit_cta_launch(measured, d, shipped.coefficients(d));
    CHECK(fit.traces == 2 * (d == 256 ? 14 : 15));  // transient and transient/flip per workload
    CHECK(shipped.cta_launch_us(d) == doctest::Approx(fit.cta_launch_us).epsilon(1e-4));
  }
}

namespace {

// |error| of the predicted makespan per strategy (over the workloads), by the report's rule.
std::map<std::string, cli::ErrorSummary> errors_by_strategy(const cli::SuiteResults& results,
                                                            const sim::CostModel& cost) {
  std::map<std::string, cli::ErrorSummary> out;
  for (const cli::ErrorSummary& e : cli::build_prediction_report(results, cost).errors)
    out[e.strategy] = e;
  return out;
}

}  // namespace

TEST_CASE("the H200 suite: the shipped sm90 profile predicts every strategy within the target") {
  // The target of the prediction report (docs/prediction-report.md): median |error| <= 3 % and
  // p90 <= 8 % for every strategy. Transient grids meet it only with the CTA launch: without it
  // the replay starts each one-tile CTA the moment a slot frees and predicts them too fast.
  const cli::SuiteResults results = cli::read_suite_results(TILESCHED_SUITE_DATA_DIR);
  const sim::CostModel shipped = sim::CostModel::load(kShippedProfile);
  const auto errors = errors_by_strategy(results, shipped);
  REQUIRE(errors.size() == 10);
  for (const auto& [strategy, e] : errors) {
    CAPTURE(strategy);
    CHECK(e.runs == 44);
    CHECK(e.median_abs <= 0.03);
    CHECK(e.p90_abs <= 0.08);
  }

  sim::CostModel no_launch = shipped;
  no_launch.cta_launch_us_by_head_dim.clear();
  const cli::PredictionReport with = cli::build_prediction_report(results, shipped);
  const cli::PredictionReport without = cli::build_prediction_report(results, no_launch);
  REQUIRE(with.rows.size() == without.rows.size());
  for (std::size_t i = 0; i < with.rows.size(); ++i) {
    const cli::SuiteRunResult& run = *with.rows[i].run;
    CAPTURE(run.workload_name);
    CAPTURE(run.strategy);
    if (run.workload.scheduler == SchedulerKind::Transient)
      CHECK(with.rows[i].predicted_us > without.rows[i].predicted_us);  // slower, as measured
    else
      CHECK(with.rows[i].predicted_us == without.rows[i].predicted_us);  // C = slots: no refill
  }
  const auto before = errors_by_strategy(results, no_launch);
  CHECK(before.at("transient").p90_abs > 0.08);
  CHECK(before.at("transient/flip").p90_abs > 0.08);
}

// The serving suite (decode, speculative verify and mixed batches in the kernel's decode tiles) as
// an H100 measured it (tests/data/h100/serving, docs/prediction-report.md): every traced launch,
// split_kv's and stream_k's pieces included, replays to its schedule under the cost profile the
// device planned with (the built-in h200), so that CI holds the decode path's scheduling to the GPU.
TEST_CASE("the H100 serving suite: decode tiles and their pieces replay to their schedule") {
  const std::string dir = TILESCHED_SERVING_DATA_DIR;
  const cli::SuiteResults results = cli::read_suite_results(dir);
  CHECK(results.source == "gpu");
  REQUIRE(results.runs.size() == 24);
  std::map<SchedulerKind, int> kinds;
  for (const cli::SuiteRunResult& r : results.runs) {
    CAPTURE(r.workload_name);
    CAPTURE(r.strategy);
    CHECK(r.workload.decoding);
    CHECK(r.schedule_problems.empty());
    CHECK(r.unwritten_outputs == 0);
    ++kinds[r.workload.scheduler];
  }
  CHECK(kinds[SchedulerKind::SplitKv] == 6);
  CHECK(kinds[SchedulerKind::StreamK] == 6);
  const sim::CostModel planned_with = sim::CostModel::builtin("h200");
  const std::vector<cli::SuiteTrace> traces = cli::read_suite_traces(dir, results);
  REQUIRE(traces.size() == 24);
  check_replays(traces, planned_with);
}

// The decode tiles share the bandwidth of the device that ran (`report --hbm-gbps`): the H100's
// 3.35 TB/s predicts its decode makespans far better than the profile's H200 4.8 TB/s
// (docs/prediction-report.md, "The serving suite on an H100").
TEST_CASE("the H100 serving suite: decode tiles share the H100's bandwidth") {
  const cli::SuiteResults results = cli::read_suite_results(TILESCHED_SERVING_DATA_DIR);
  sim::CostModel cost = sim::CostModel::builtin("h200");
  const auto at_h200 = errors_by_strategy(results, cost);
  cost.hbm_bytes_per_us = 3.35e6;
  const auto at_h100 = errors_by_strategy(results, cost);
  for (const char* strategy : {"tile/default", "lpt_queued", "split_kv", "stream_k"}) {
    CAPTURE(strategy);
    CHECK(at_h100.at(strategy).median_abs < at_h200.at(strategy).median_abs);
  }
  CHECK(at_h200.at("stream_k").median_abs > 0.3);
  CHECK(at_h100.at("stream_k").median_abs < 0.20);
  CHECK(at_h100.at("lpt_queued").median_abs < 0.10);
}

// The h100 table's HBM bandwidth and d = 128 save per row are what `fit` derives from these
// traces against the table's own tile costs (docs/sim-cost-model.md, "The H100 table"), and with
// them the splitting kinds meet the prediction target of issue 45 (median |error| within 5 %) but
// stream_k, whose mixed batches' prefill tiles run beside the decode streams
// (docs/prediction-report.md, "The serving suite on an H100").
TEST_CASE("the H100 serving suite: the h100 table's bandwidth and save are fitted to it") {
  const std::string dir = TILESCHED_SERVING_DATA_DIR;
  const cli::SuiteResults results = cli::read_suite_results(dir);
  std::vector<Trace> measured;
  for (cli::SuiteTrace& t : cli::read_suite_traces(dir, results)) measured.push_back(t.trace);
  const sim::CostModel h100 = sim::CostModel::builtin("h100");
  const sim::StreamFit fit =
      sim::fit_streams(measured, h100, sim::CostModel::kDefaultHbmBytesPerUs);
  CHECK(fit.decoding_traces == 24);
  CHECK(fit.iterations < 50);
  CHECK(h100.hbm_bytes_per_us == doctest::Approx(fit.hbm_bytes_per_us).epsilon(1e-5));
  REQUIRE(fit.saved_row_us.count(128) == 1);
  CHECK(std::abs(h100.saved_row_us(128) - fit.saved_row_us.at(128)) <= 6e-5);
  // What the H100 streams, all its SMs reading at once: below its nominal 3.35 TB/s.
  CHECK(fit.hbm_bytes_per_us < 3.35e6);
  CHECK(fit.hbm_bytes_per_us > 3.0e6);

  const auto errors = errors_by_strategy(results, h100);
  CHECK(errors.at("split_kv").median_abs <= 0.05);
  CHECK(errors.at("lpt_queued").median_abs <= 0.05);
  CHECK(errors.at("tile/default").median_abs <= 0.05);
  CHECK(errors.at("stream_k").median_abs > 0.05);
  // Without the save (pieces costed as tiles of their blocks) split_kv misses the target.
  sim::CostModel no_save = h100;
  no_save.saved_row_us_by_head_dim.clear();
  CHECK(errors_by_strategy(results, no_save).at("split_kv").median_abs > 0.05);
}
