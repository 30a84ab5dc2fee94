// `tilesched suite-run` (measure a suite on the GPU, or on the simulator as a dry run) and
// `tilesched report` (replay what was measured and write the prediction report).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/prediction_report.hpp"
#include "cli/run_size.hpp"
#include "cli/suite.hpp"
#include "cli/suite_runner.hpp"
#include "cli/typed_flags.hpp"
#include "tilesched/sim/io.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::cli {
namespace {

struct SuiteRunOptions {
  std::vector<std::string> suite;
  std::string out_dir = "suite-results";
  std::string strategies = "all";
  std::string ctas = "sms,sms*occ";
  int repeats = 3;
  std::size_t pack_mib = 15;
  std::size_t max_packs = 7;
  bool simulate = false;
  std::string cost_profile = "h200";
  std::string cost_model_file;
  std::uint64_t max_tiles = kDefaultMaxTiles;
};

sim::CostModel cost_model_of(const std::string& file, const std::string& profile) {
  return file.empty() ? sim::CostModel::builtin(profile) : sim::CostModel::load(file);
}

int run_suite_command(const SuiteRunOptions& o) {
  SuiteRunSettings settings;
  settings.strategies = o.strategies;
  try {
    settings.ctas = parse_cta_choices(o.ctas);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("--ctas: {}", e.what()));
  }
  settings.repeats = o.repeats;
  settings.out_dir = o.out_dir;
  settings.max_pack_bytes = o.pack_mib << 20;
  settings.max_packs = o.max_packs;
  settings.max_tiles = o.max_tiles;
  const std::vector<SuiteWorkload> suite = read_suite(o.suite);
  const std::unique_ptr<tools::SuiteDevice> device =
      o.simulate ? simulated_suite_device(cost_model_of(o.cost_model_file, o.cost_profile))
                 : tools::open_gpu_suite_device();
  std::vector<std::string> files;
  const SuiteResults results = run_suite(suite, *device, settings, stderr, &files);
  std::size_t failed = 0;
  for (const SuiteRunResult& r : results.runs)
    failed += r.unwritten_outputs || !r.schedule_problems.empty() ? 1 : 0;
  fmt::print("{} runs of {} workloads on {}; {} failed their checks\n", results.runs.size(),
             suite.size(), results.device, failed);
  for (const std::string& note : results.notes) fmt::print("note: {}\n", note);
  for (const std::string& f : files) fmt::print("wrote {}\n", f);
  return failed == 0 ? kExitOk : kExitFailure;
}

void add_suite_run_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<SuiteRunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "suite-run",
      "Measure every workload of a suite under every strategy at each CTA count on the GPU, "
      "with traces, in one process; write summary.json and trace packs for `report` and `fit`");
  cmd->add_option("suite", o->suite, "Workload JSON files, or directories of them")
      ->type_name("SUITE ...")
      ->required();
  add_output_dir_flag(*cmd, "--out", o->out_dir, "Directory for summary.json and traces-N.json",
                      "suite-results")
      ->capture_default_str();
  cmd->add_option("--strategies", o->strategies,
                  "all | seed (the six of the seed) | names, comma-separated (names may include split_kv and "
                  "stream_k, which all leaves out)")
      ->type_name("LIST")
      ->capture_default_str();
  cmd->add_option("--ctas", o->ctas,
                  "CTA counts: sms (one CTA per SM), sms*occ (every resident slot), numbers")
      ->type_name("LIST")
      ->capture_default_str();
  add_number_flag(*cmd, "--repeats", o->repeats, "Recorded launches per run (after one warm-up)",
                  /*min=*/1)
      ->capture_default_str();
  add_number_flag(*cmd, "--pack-mib", o->pack_mib, "Largest trace pack file, MiB", /*min=*/1)
      ->capture_default_str();
  add_number_flag(*cmd, "--max-packs", o->max_packs, "Trace pack files at most (then figures only)")
      ->capture_default_str();
  cmd->add_flag("--simulate", o->simulate,
                "Dry run: the simulator plays the device (with --cost-profile / --cost-model)");
  CLI::Option* profile = add_cost_profile_flag(*cmd, "--cost-profile", o->cost_profile,
                                               "With --simulate: built-in profile")
                             ->capture_default_str();
  cmd->add_option("--cost-model", o->cost_model_file, "With --simulate: a cost model file")
      ->type_name("FILE")
      ->excludes(profile);
  add_max_tiles_flag(*cmd, o->max_tiles);
  cmd->footer(
      "Progress on stderr, one line per run. Exit status: 0 success, 1 a file or the device "
      "failed or a run failed its checks (outputs never written, schedule differs from the "
      "simulator), 2 bad flags or a run of more tiles than --max-tiles.");
  cmd->callback([o, &action] { action = [o] { return run_suite_command(*o); }; });
}

struct ReportOptions {
  std::string results_dir;
  std::string out_dir = "report";
  std::string cost_profile = "h200";
  std::string cost_model_file;
  std::optional<u32> hbm_gbps;
  std::uint64_t max_tiles = kDefaultMaxTiles;
};

int run_report_command(const ReportOptions& o) {
  const SuiteResults results = read_suite_results(o.results_dir);
  if (results.runs.empty())
    throw std::runtime_error(fmt::format("'{}' holds no runs", o.results_dir));
  // The report replays every run, one at a time.
  for (std::size_t i = 0; i < results.runs.size(); ++i) {
    const SuiteRunResult& run = results.runs[i];
    check_run_size(run.workload, o.max_tiles, 1, nullptr,
                   fmt::format("run {} ({} {} at C = {})", i + 1, run.workload_name, run.strategy,
                               run.workload.num_ctas));
  }
  sim::CostModel cost = cost_model_of(o.cost_model_file, o.cost_profile);
  if (o.hbm_gbps) cost.hbm_bytes_per_us = double(*o.hbm_gbps) * 1e3;  // GB/s = 1e3 bytes per us
  const PredictionReport report = build_prediction_report(results, cost);
  const ReportFiles files = render_prediction_report(report);
  viz::ensure_directory(o.out_dir);
  const std::filesystem::path dir(o.out_dir);
  for (const auto& [name, text] :
       {std::pair{"report.md", &files.markdown}, std::pair{"report.html", &files.html},
        std::pair{"scatter.svg", &files.svg}}) {
    sim::write_file_atomically((dir / name).string(), *text);
    fmt::print("wrote {}\n", (dir / name).string());
  }
  std::size_t matches = 0;
  for (const WorkloadVerdict& v : report.workloads) matches += v.recommended_is_best ? 1 : 0;
  fmt::print("{} runs, {} workloads; predicted best = measured best on {}\n", report.rows.size(),
             report.workloads.size(), matches);
  for (const ErrorSummary& e : report.errors)
    fmt::print("  {:<24} C {:<12} median |error| {:5.1f} %  p90 {:5.1f} %\n", e.strategy, e.ctas,
               100 * e.median_abs, 100 * e.p90_abs);
  return kExitOk;
}

void add_report_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Replay a suite-run's measurements with the simulator: report.md, report.html and "
      "scatter.svg (prediction error, best strategy, speed-ups)");
  cmd->add_option("results", o->results_dir, "Directory written by `suite-run`")
      ->type_name("DIR")
      ->required();
  add_output_dir_flag(*cmd, "--out", o->out_dir, "Directory for the report files", "report")
      ->capture_default_str();
  CLI::Option* profile =
      add_cost_profile_flag(*cmd, "--cost-profile", o->cost_profile, "Built-in cost profile")
          ->capture_default_str();
  cmd->add_option("--cost-model", o->cost_model_file, "Cost model JSON file (from `fit`)")
      ->type_name("FILE")
      ->excludes(profile);
  add_number_flag(*cmd, "--hbm-gbps", o->hbm_gbps,
                  "HBM bandwidth of the device that ran the suite, GB/s, which the decode tiles "
                  "streaming at once share (default: the cost model's, which the h100 profile "
                  "fits to H100 traces; 4800, an H200's, where a table gives none)",
                  1, 100000);
  add_max_tiles_flag(*cmd, o->max_tiles);
  cmd->footer(
      "Exit status: 0 success, 1 a file could not be read or written, 2 bad flags or a run of "
      "more tiles than --max-tiles.");
  cmd->callback([o, &action] { action = [o] { return run_report_command(*o); }; });
}

}  // namespace

void add_suite_commands(CLI::App& app, Action& action) {
  add_suite_run_command(app, action);
  add_report_command(app, action);
}

}  // namespace tilesched::cli
