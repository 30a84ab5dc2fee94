// The prediction suite: its workload files, the run plan, compact traces, suite-run's loop on a
// simulated device, and the report's figures from "measured" traces whose errors are known.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "cli/errors.hpp"
#include "cli/prediction_report.hpp"
#include "cli/strategies.hpp"
#include "cli/suite.hpp"
#include "cli/suite_runner.hpp"
#include "test_support.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/workload_io.hpp"
#include "xml_check.hpp"

using namespace tilesched;

namespace {

// A device of 132 SMs that holds two CTAs per SM up to d = 128 and one above, as the H200 ran the
// mma.sync kernel: the suite's CTA choices sms and sms*occ differ at d 128 and meet at d 256.
const cli::DeviceShape kTwoPerSmToD128{
    132, [](const Workload& w) { return w.head_dim <= 128 ? 2u : 1u; }};

// The built-in profile of that device.
sim::CostModel two_per_sm_profile() {
  return sim::CostModel::builtin("h200_mma_sync");
}

// A profile whose every tile takes `factor` times two_per_sm_profile()'s (same device otherwise).
sim::CostModel slowed(double factor) {
  sim::CostModel m = two_per_sm_profile();
  m.device = "h200-slowed";
  for (auto& [d, k] : m.by_head_dim)
    k = sim::CostCoefficients{k.fixed_us * factor, k.us_per_block * factor,
                              k.us_per_masked_block * factor};
  return m;
}

// Two small workloads of the suite's shape: d 128 (two CTAs per SM) and d 256 (one).
std::vector<cli::SuiteWorkload> small_suite() {
  Workload a = test::small_workload();
  a.head_dim = 128;
  a.block_n = 128;
  a.q_lens = {3000, 700, 1500, 256};
  Workload b = a;
  b.head_dim = 256;
  b.mask = Mask::None;
  b.q_lens = {1024, 1024};
  return {{"a_d128", a}, {"b_d256", b}};
}

}  // namespace

TEST_CASE("the suite files: at least 40 valid workloads covering the patterns, dims and masks") {
  const std::vector<cli::SuiteWorkload> suite = cli::read_suite({TILESCHED_SUITE_DIR});
  CHECK(suite.size() >= 40);
  std::set<u32> dims;
  std::set<std::string> patterns;
  std::size_t causal = 0, dense = 0, long_kv = 0;
  for (const cli::SuiteWorkload& s : suite) {
    CAPTURE(s.name);
    CHECK(s.workload.validate().empty());
    // num_ctas and the scheduler are suite-run's to choose.
    CHECK_FALSE(sim::read_workload_file(std::string(TILESCHED_SUITE_DIR) + "/" + s.name + ".json")
                    .sets_num_ctas);
    dims.insert(s.workload.head_dim);
    for (const char* p : {"constant", "uniform", "wide", "longtail", "bimodal", "skewed", "shortq"})
      if (s.name.find(p) != std::string::npos) patterns.insert(p);
    (s.workload.mask == Mask::Causal ? causal : dense) += 1;
    for (u32 b = 0; b < s.workload.batch_size(); ++b)
      if (s.workload.key_len(b) > 4 * s.workload.q_lens[b]) {
        ++long_kv;
        break;
      }
    // Sized for the kernel: ~0.5-20 ms at every CTA count (the profile is fitted to it).
    for (const u32 c : {132u, 264u}) {
      Workload w = s.workload;
      w.num_ctas = c;
      const double ms = sim::compute_metrics(sim::replay(w)).makespan_us / 1000;
      CHECK(ms > 0.5);
      CHECK(ms < 20);
    }
  }
  CHECK(dims == std::set<u32>{64, 128, 256});
  CHECK(patterns.size() == 7);
  CHECK(causal >= 15);
  CHECK(dense >= 15);
  CHECK(long_kv >= 3);
}

TEST_CASE("the serving workloads: decode, verify and mixed batches that every scheduler covers") {
  const std::vector<cli::SuiteWorkload> serving = cli::read_suite({TILESCHED_SERVING_DIR});
  CHECK(serving.size() >= 6);
  std::size_t mixed = 0;
  for (const cli::SuiteWorkload& s : serving) {
    CAPTURE(s.name);
    REQUIRE(s.workload.validate().empty());
    CHECK(s.workload.decoding);
    CHECK(s.workload.mixed() == (s.name.rfind("mixed", 0) == 0));
    mixed += s.workload.mixed() ? 1 : 0;
    for (const SchedulerKind kind : {SchedulerKind::Tile, SchedulerKind::Queued,
                                     SchedulerKind::LptQueued, SchedulerKind::SplitKv,
                                     SchedulerKind::StreamK}) {
      CAPTURE(std::string(to_string(kind)));
      Workload w = s.workload;
      w.scheduler = kind;
      REQUIRE(w.validate().empty());
      const Trace t = sim::replay(w);
      CHECK(t.events.size() == sim::replayed_tile_count(w));
    }
  }
  CHECK(mixed >= 2);
}

TEST_CASE("CTA choices: sms, sms*occ and numbers; anything else is named") {
  const auto c = cli::parse_cta_choices("sms, sms*occ,100");
  REQUIRE(c.size() == 3);
  CHECK(c[0].kind == cli::CtaChoice::Kind::Sms);
  CHECK(c[1].kind == cli::CtaChoice::Kind::Resident);
  CHECK(c[2].kind == cli::CtaChoice::Kind::Fixed);
  CHECK(c[2].fixed == 100);
  CHECK(c[2].label() == "100");
  CHECK_THROWS_WITH_AS(cli::parse_cta_choices("sms,twice"),
                       doctest::Contains("'twice' is not sms, sms*occ or a CTA count"),
                       std::invalid_argument);
  CHECK_THROWS_AS(cli::parse_cta_choices("0"), std::invalid_argument);
}

TEST_CASE("the plan: every strategy at each distinct C, transient once at the resident count") {
  const std::vector<cli::SuiteRun> plan =
      cli::plan_suite(small_suite(), "all", cli::parse_cta_choices("sms,sms*occ"), kTwoPerSmToD128);
  // d 128: 8 persistent strategies x {132, 264} + 2 transient; d 256: 132 = 132 x 1 once.
  REQUIRE(plan.size() == 18 + 10);
  std::size_t at_264 = 0;
  for (const cli::SuiteRun& r : plan) {
    INFO(r.workload_name, " ", r.strategy, " ", r.ctas_label);
    CHECK(r.strategy == strategy_name(r.workload));
    if (r.workload.scheduler == SchedulerKind::Transient) {
      CHECK(r.ctas_label == "resident");
      CHECK(r.workload.num_ctas == (r.workload.head_dim == 128 ? 264u : 132u));
    } else if (r.workload.head_dim == 256) {
      CHECK(r.ctas_label == "sms,sms*occ");
      CHECK(r.workload.num_ctas == 132);
    } else {
      CHECK(r.ctas_label == (r.workload.num_ctas == 132 ? "sms" : "sms*occ"));
      at_264 += r.workload.num_ctas == 264;
    }
  }
  CHECK(at_264 == 8);
  CHECK(cli::plan_suite(small_suite(), "seed", {{cli::CtaChoice::Kind::Sms, 0}}, kTwoPerSmToD128)
            .size() == 12);
  CHECK(cli::plan_suite(small_suite(), "tile/default,transient", {{cli::CtaChoice::Kind::Sms, 0}},
                        kTwoPerSmToD128)
            .size() == 4);
  CHECK_THROWS_WITH_AS(
      cli::plan_suite(small_suite(), "tile/fastest", {{cli::CtaChoice::Kind::Sms, 0}},
                      kTwoPerSmToD128),
      doctest::Contains("unknown strategy 'tile/fastest' (known: all, seed, tile/default"),
      cli::UsageError);
}

TEST_CASE("the plan: the split schedules run where named, never under all") {
  const std::vector<cli::SuiteRun> plan = cli::plan_suite(
      small_suite(), "split_kv,stream_k,tile/default", {{cli::CtaChoice::Kind::Sms, 0}},
      kTwoPerSmToD128);
  REQUIRE(plan.size() == 6);
  for (const cli::SuiteRun& r : plan) {
    INFO(r.workload_name, " ", r.strategy);
    CHECK(r.strategy == strategy_name(r.workload));
    CHECK(r.workload.validate().empty());
  }
  CHECK(plan[0].workload.scheduler == SchedulerKind::SplitKv);
  CHECK(plan[1].workload.scheduler == SchedulerKind::StreamK);
  CHECK(plan[2].workload.scheduler == SchedulerKind::Tile);
  // In the kernel's K/V block: 80 keys at d = 256 (the workload's 128 elsewhere).
  CHECK(plan[3].workload.block_n == 80);
  CHECK(plan[5].workload.block_n == 128);
  for (const cli::SuiteRun& r :
       cli::plan_suite(small_suite(), "all", {{cli::CtaChoice::Kind::Sms, 0}}, kTwoPerSmToD128))
    CHECK((r.workload.scheduler != SchedulerKind::SplitKv && r.workload.scheduler != SchedulerKind::StreamK));
  // A workload the split schedules refuse is named with the reason.
  std::vector<cli::SuiteWorkload> odd = small_suite();
  odd[1].workload.split_kv_blocks = 0;
  CHECK_THROWS_WITH_AS(
      cli::plan_suite(odd, "split_kv", {{cli::CtaChoice::Kind::Sms, 0}}, kTwoPerSmToD128),
      doctest::Contains("suite workload 'b_d256' at C = 132"), std::invalid_argument);
}

TEST_CASE("compact traces read back as the trace, times to the nanosecond") {
  for (const SchedulerKind kind :
       {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::Transient}) {
    CAPTURE(to_string(kind));
    Workload w = small_suite()[0].workload;
    w.scheduler = kind;
    w.schedule = Schedule::PromptRotate;
    Trace t = sim::replay(w);
    t.source = "gpu";
    t.created = "2026-11-30T00:00:00Z";
    // Measured traces have gaps between a CTA's tiles.
    for (std::size_t i = 0; i < t.events.size(); ++i) t.events[i].start_us += 0.3 * double(i % 3);
    const nlohmann::json j = cli::trace_to_columns(t);
    CHECK_FALSE(j.contains("tiles"));  // every tile is what the index map gives
    CHECK(j.contains("cta_sm"));
    const Trace back = cli::trace_from_columns(j);
    CHECK(back.source == "gpu");
    CHECK(back.created == t.created);
    CHECK(back.launched_ctas == t.launched_ctas);
    CHECK(sim::workload_to_json(back.workload) == sim::workload_to_json(t.workload));
    REQUIRE(back.events.size() == t.events.size());
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const TraceEvent &a = t.events[i], &b = back.events[i];
      CHECK(a.cta == b.cta);
      CHECK(a.step == b.step);
      CHECK(a.linear_idx == b.linear_idx);
      CHECK(a.prompt_offset == b.prompt_offset);
      CHECK(a.head_idx == b.head_idx);
      CHECK(a.prompt_idx == b.prompt_idx);
      CHECK(a.query_rows == b.query_rows);
      CHECK(a.kv_blocks == b.kv_blocks);
      CHECK(a.sm_id == b.sm_id);
      // Rounded to the nearest nanosecond: half of one off at most, plus the double's rounding.
      CHECK(std::abs(a.start_us - b.start_us) <= 0.0005 + 1e-9);
      CHECK(std::abs(a.end_us - b.end_us) <= 0.0005 + 1e-9);
    }
  }
  // A trace whose tiles are not what the index map gives keeps them as columns; a CTA that moved
  // SM keeps an SM per tile. Both read back exactly.
  Trace odd = sim::replay(small_suite()[0].workload);
  odd.events[3].kv_blocks += 1;
  odd.events[1].sm_id = 77;
  const nlohmann::json j = cli::trace_to_columns(odd);
  CHECK(j.contains("tiles"));
  CHECK(j.contains("sm_id"));
  const Trace back = cli::trace_from_columns(j);
  CHECK(back.events[3].kv_blocks == odd.events[3].kv_blocks);
  CHECK(back.events[1].sm_id == 77);
  // split_tail's pieces keep their first KV blocks.
  Workload split = small_suite()[0].workload;
  split.scheduler = SchedulerKind::SplitTail;
  split.mask = Mask::None;
  split.q_lens.assign(split.q_lens.size(), 300);
  split.kv_lens.clear();
  split.num_ctas = 5;
  REQUIRE_MESSAGE(split.validate().empty(), split.validate());
  const Trace pieces = sim::replay(split);
  const nlohmann::json pj = cli::trace_to_columns(pieces);
  REQUIRE(pj.contains("tiles"));
  CHECK(pj["tiles"].contains("kv_block_begin"));
  const Trace pieces_back = cli::trace_from_columns(pj);
  REQUIRE(pieces_back.events.size() == pieces.events.size());
  std::size_t moved = 0;
  for (std::size_t i = 0; i < pieces.events.size(); ++i) {
    CHECK(pieces_back.events[i].kv_block_begin == pieces.events[i].kv_block_begin);
    CHECK(pieces_back.events[i].kv_blocks == pieces.events[i].kv_blocks);
    moved += pieces.events[i].kv_block_begin != 0 ? 1 : 0;
  }
  CHECK(moved > 0);
  // Damaged columns are refused with a message.
  nlohmann::json bad = j;
  bad["gap_ns"].erase(0);
  CHECK_THROWS_WITH_AS(cli::trace_from_columns(bad), doctest::Contains("different lengths"),
                       std::invalid_argument);
}

namespace {

// suite-run of the small suite on a simulated device 10 % slower than two_per_sm_profile().
struct SlowedRun {
  test::ScratchDir dir{"suite"};
  std::vector<std::string> files;
  cli::SuiteResults results;
  SlowedRun() {
    const auto device = cli::simulated_suite_device(slowed(1.1));
    cli::SuiteRunSettings settings;
    settings.out_dir = dir.str();
    settings.repeats = 2;
    results = cli::run_suite(small_suite(), *device, settings, nullptr, &files);
  }
};

// A verdict's speed-ups and distance to the ideal bound, recomputed from the runs by hand.
void check_verdict(const cli::WorkloadVerdict& v, const cli::SuiteResults& results) {
  CAPTURE(v.workload);
  CHECK(v.recommended_is_best);  // a uniform slow-down keeps the ranking
  CHECK(v.measured_best->run == v.recommended->run);
  double dflt = 0, best_seed = 0;
  for (const cli::SuiteRunResult& r : results.runs) {
    if (r.workload_name != v.workload) continue;
    if (r.strategy == "tile/default" && r.workload.num_ctas == 132) dflt = r.makespan_us;
    if (r.workload.num_ctas == v.recommended->run->workload.num_ctas &&
        (best_seed == 0 || r.makespan_us < best_seed))
      best_seed = r.makespan_us;
  }
  CHECK(v.speedup_vs_default == doctest::Approx(dflt / v.recommended->run->makespan_us));
  CHECK(v.speedup_vs_best_seed == doctest::Approx(best_seed / v.recommended->run->makespan_us));
  CHECK(v.speedup_vs_default >= 1.0);
  const cli::SuiteRunResult& rec = *v.recommended->run;
  CHECK(v.over_ideal ==
        doctest::Approx(rec.makespan_us * rec.concurrent_ctas / rec.total_busy_us - 1));
  CHECK(v.over_ideal >= 0);
  // Headroom: the best seed strategy over the lowest ideal bound, both at the recommended C.
  double best_of_seed = 0, lowest_ideal = 0;
  for (const cli::SuiteRunResult& r : results.runs) {
    if (r.workload_name != v.workload || r.workload.num_ctas != rec.workload.num_ctas) continue;
    const double ideal = r.total_busy_us / double(r.concurrent_ctas);
    if (lowest_ideal == 0 || ideal < lowest_ideal) lowest_ideal = ideal;
    if (cli::is_seed_strategy(r.strategy) && (best_of_seed == 0 || r.makespan_us < best_of_seed))
      best_of_seed = r.makespan_us;
  }
  CHECK(v.seed_headroom == doctest::Approx(best_of_seed / lowest_ideal));
  CHECK(v.seed_headroom >= 1.0);
}

}  // namespace

TEST_CASE("suite-run on a simulated device: every run measured, checked and traced") {
  const SlowedRun s;
  const cli::SuiteResults& results = s.results;
  CHECK(s.files.size() == 2);  // summary.json and one pack
  CHECK(results.source == "sim");
  CHECK(results.device == "h200-slowed");
  CHECK(results.sms == 132);
  REQUIRE(results.runs.size() == 28);
  for (const cli::SuiteRunResult& r : results.runs) {
    INFO(r.workload_name, " ", r.strategy, " ", r.workload.num_ctas);
    CHECK(r.makespans_us.size() == 2);
    CHECK(r.schedule_problems.empty());
    CHECK(r.unwritten_outputs == 0);
    CHECK(r.workload.resident_ctas == (r.workload.head_dim == 128 ? 264u : 132u));
    CHECK_FALSE(r.trace_file.empty());
  }
  // The kept traces are the device's, and `fit` can read them.
  const std::vector<cli::SuiteTrace> traces = cli::read_suite_traces(s.dir.str(), results);
  REQUIRE(traces.size() == 28);
  const Trace direct = sim::replay(traces[5].run->workload, slowed(1.1));
  CHECK(traces[5].trace.events.size() == direct.events.size());
  CHECK(sim::compute_metrics(traces[5].trace).makespan_us ==
        doctest::Approx(traces[5].run->makespan_us).epsilon(1e-6));
}

TEST_CASE("the report of a device 10 % slower than predicted: errors, verdicts, files") {
  const SlowedRun s;
  // Every tile 10 % slower than the profile says, at every C: each makespan is 1.1x the
  // prediction (order and placement do not change), so every error is 1/1.1 - 1.
  const cli::PredictionReport report =
      cli::build_prediction_report(s.results, two_per_sm_profile());
  const double expected = 1 / 1.1 - 1;
  for (const cli::ReportRow& row : report.rows) CHECK(row.error == doctest::Approx(expected));
  REQUIRE(report.errors.size() == 18);  // 8 strategies x {sms, sms*occ} + 2 transient
  for (const cli::ErrorSummary& e : report.errors) {
    CHECK(e.median_abs == doctest::Approx(-expected));
    CHECK(e.p90_abs == doctest::Approx(-expected));
    CHECK(e.runs == 2);  // one per workload (d 256's C = 132 is both sms and sms*occ)
  }
  REQUIRE(report.workloads.size() == 2);
  for (const cli::WorkloadVerdict& v : report.workloads) check_verdict(v, s.results);
  CHECK(report.workloads[0].causal);
  CHECK(report.workloads[0].ragged);
  CHECK_FALSE(report.workloads[1].causal);
  CHECK_FALSE(report.workloads[1].ragged);

  // The files: Markdown with every section, HTML and SVG that parse, one point per run.
  const cli::ReportFiles out = cli::render_prediction_report(report);
  for (const char* heading :
       {"## Prediction error per strategy and CTA count", "## Predicted best against measured best",
        "## Speed-up of the recommended strategy (measured)", "## Every run",
        "on 2 of 2 workloads (100 %)", "| a_d128 | tile/default | 132 |", "-9.1 %",
        "workloads have room for 1.1x", "headroom over best seed"})
    CHECK_MESSAGE(out.markdown.find(heading) != std::string::npos, heading);
  CHECK(test::xml_problem(out.svg).empty());
  CHECK(test::xml_problem(out.html).empty());
  CHECK(test::count_elements(out.svg, "circle", "point", "title") == 28);
}

TEST_CASE("suite-run keeps traces only within the byte budget and says so") {
  test::ScratchDir dir("suite-budget");
  const auto device = cli::simulated_suite_device(sim::CostModel::builtin("h200"));
  cli::SuiteRunSettings settings;
  settings.out_dir = dir.str();
  settings.repeats = 1;
  // First every trace in one pack, then packs a third of its size: two of them hold about two
  // thirds of the traces.
  std::vector<std::string> files;
  cli::run_suite(small_suite(), *device, settings, nullptr, &files);
  REQUIRE(files.size() == 2);
  std::uintmax_t all_traces = 0;
  for (const std::string& f : files)
    if (f.find("traces-") != std::string::npos) all_traces = std::filesystem::file_size(f);
  REQUIRE(all_traces > 0);
  settings.max_pack_bytes = all_traces / 3;
  settings.max_packs = 2;
  files.clear();
  const cli::SuiteResults results =
      cli::run_suite(small_suite(), *device, settings, nullptr, &files);
  CHECK(files.size() == 3);  // summary and the two packs
  std::size_t kept = 0;
  for (const cli::SuiteRunResult& r : results.runs) kept += r.trace_file.empty() ? 0 : 1;
  CHECK(kept > 0);
  CHECK(kept < results.runs.size());
  REQUIRE(results.notes.size() == 1);
  CHECK(results.notes[0].find("trace budget reached") != std::string::npos);
  for (const std::string& f : files)
    CHECK(std::filesystem::file_size(f) <= settings.max_pack_bytes);
  CHECK(cli::read_suite_traces(dir.str(), results).size() == kept);
}

TEST_CASE("nearest-rank percentiles") {
  CHECK(cli::nearest_rank({}, 0.9) == 0);
  CHECK(cli::nearest_rank({5}, 0.9) == 5);
  CHECK(cli::nearest_rank({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 0.9) == 9);
  CHECK(cli::nearest_rank({10, 1, 9, 2, 8, 3, 7, 4, 6, 5, 11}, 0.9) == 10);
  CHECK(cli::nearest_rank({3, 1, 2}, 0.5) == 2);
}
