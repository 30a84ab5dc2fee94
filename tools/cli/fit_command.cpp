// `tilesched fit`: fit the simulator's cost model to traces measured on a GPU.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/cost_fit.hpp"
#include "cli/errors.hpp"
#include "cli/suite_results.hpp"
#include "cli/typed_flags.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/value_limits.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::cli {
namespace {

struct FitOptions {
  std::vector<std::string> trace_files;
  std::string device;
  std::string out_file = "cost.json";
  std::string base = "h200";
  std::string base_model_file;  // a cost file as the base instead of a built-in profile
  // --base or --base-model was given: the paged factor of a head dim without contiguous traces
  // may scale the base's per-block costs (the default profile may be another kernel or device).
  bool base_named = false;
  bool launch_only = false;
  std::optional<SchedulerKind> scheduler;  // fit this kind's `schedulers` entries only
  bool allow_sim = false;
};

// The device name the traces agree on, else "fitted".
std::string common_device(const std::vector<LabelledTrace>& traces) {
  std::string device;
  for (const LabelledTrace& t : traces) {
    if (t.trace.device.empty() || (!device.empty() && t.trace.device != device)) return "fitted";
    device = t.trace.device;
  }
  return device.empty() ? "fitted" : device;
}

// Every trace named on the command line (a suite-run directory gives all its kept traces); a
// simulated trace is refused unless --allow-sim asks for it.
std::vector<LabelledTrace> read_fit_traces(const FitOptions& o) {
  std::vector<LabelledTrace> traces;
  for (const std::string& path : o.trace_files) {
    const std::size_t first = traces.size();
    if (std::filesystem::is_directory(path)) {  // a suite-run's results: every kept trace
      if (!holds_suite_results(path))
        throw std::runtime_error(fmt::format(
            "'{}' is a folder without {}: fit takes trace files (TRACE.json or TRACE.json.gz) or "
            "a folder that `tilesched suite-run` wrote; to fit the traces in a folder, name them "
            "(e.g. {}/*.json)",
            path, kSuiteSummaryFile, path));
      const SuiteResults results = read_suite_results(path);
      for (SuiteTrace& t : read_suite_traces(path, results))
        traces.push_back(LabelledTrace{fmt::format("{}: {} {} C = {}", path, t.run->workload_name,
                                                   t.run->strategy, t.trace.workload.num_ctas),
                                       std::move(t.trace)});
    } else {
      traces.push_back(LabelledTrace{path, sim::read_trace(path)});
    }
    std::size_t simulated = 0;
    for (std::size_t i = first; i < traces.size(); ++i)
      simulated += traces[i].trace.source != "gpu";
    if (simulated == 0) continue;
    const Trace& t = traces[first].trace;
    // Fitting a simulated trace only recovers the model that produced it: almost always a
    // mistake, so it needs asking for.
    if (!o.allow_sim)
      throw std::invalid_argument(fmt::format(
          "'{}' was not measured on a GPU (source \"{}\"); fitting it recovers the model that "
          "made it (pass --allow-sim to fit it anyway)",
          path, t.source));
    fmt::print(stderr, "tilesched fit: warning: '{}' has source \"{}\", not \"gpu\"{}\n", path,
               t.source, simulated > 1 ? fmt::format(" ({} traces)", simulated) : std::string());
  }

  return traces;
}

// Refuses a fit the cost files cannot hold, or the traces do not support.
void check_fit_report(const CostFitReport& report, const std::string& out_file) {
  if (!report.negative_launches.empty()) {
    // The base's tile costs run the transient tiles slower than they were measured: a launch
    // cannot take negative time, so the tile costs do not describe these traces.
    throw std::runtime_error(fmt::format(
        "negative fitted CTA launch ({}): not writing '{}'; the tile costs predict these "
        "transient tiles slower than they ran: fit the tile costs to the same kernel first",
        fmt::join(report.negative_launches, "; "), out_file));
  }

  if (!report.negative_coefficients.empty()) {
    // Cost files reject negative costs; clamping would hide that the traces do not support the
    // model's shape (e.g. too few distinct block counts, or noise larger than a block's cost).
    throw std::runtime_error(fmt::format(
        "negative fitted coefficients ({}): not writing '{}'; measure tiles with a wider range "
        "of KV lengths, causal and not",
        fmt::join(report.negative_coefficients, "; "), out_file));
  }

  if (!report.invalid_paged_factors.empty()) {
    // The paged tiles ran far from the contiguous costs they scale: those are of another kernel
    // or device (a --base that does not match the traces), not a paged cost worth writing.
    throw std::runtime_error(fmt::format(
        "fitted paged factors outside (0, {:g}] ({}): not writing '{}'; fit the paged traces "
        "against contiguous costs of the same kernel and device (traces without --page-size "
        "beside them, or the --base fitted to those)",
        sim::kMaxPagedFactor, fmt::join(report.invalid_paged_factors, "; "), out_file));
  }

  if (!report.invalid_streams.empty()) {
    // The decode tiles ran at a bandwidth no HBM has, or pieces faster than tiles of their
    // blocks: the tile costs they are measured against are of another kernel or device.
    throw std::runtime_error(fmt::format(
        "fitted stream costs a cost file cannot hold ({}): not writing '{}'; fit the decoding "
        "traces and pieces against tile costs of the same kernel and device (prefill traces "
        "beside them, or the --base fitted to those)",
        fmt::join(report.invalid_streams, "; "), out_file));
  }

  if (!report.invalid_rates.empty()) {
    // A rate above 1 says a CTA ran faster beside another than alone: the solo costs or the
    // shared traces are off (a kernel change between them, clocks), not a model worth writing.
    throw std::runtime_error(fmt::format(
        "fitted sharing rates outside (0, 1] ({}): not writing '{}'; record the traces at one "
        "and at two CTAs per SM with the same kernel, one after the other on the same device",
        fmt::join(report.invalid_rates, "; "), out_file));
  }
}

int run_fit(const FitOptions& o) {
  if (o.trace_files.empty()) throw UsageError("no traces given: name at least one TRACE.json");
  const sim::CostModel base = o.base_model_file.empty()
                                  ? sim::CostModel::builtin(o.base)  // checked while parsing
                                  : sim::CostModel::load(o.base_model_file);
  const std::string base_name = o.base_model_file.empty() ? o.base : o.base_model_file;
  const std::vector<LabelledTrace> traces = read_fit_traces(o);
  const std::string device = !o.device.empty() ? o.device
                             : o.launch_only   ? base.device
                                               : common_device(traces);
  const FitScope scope = o.launch_only ? FitScope::LaunchOnly
                         : o.scheduler ? FitScope::Scheduler
                                       : FitScope::Everything;
  const CostFitReport report = fit_cost_model(
      traces, base, device, scope, o.scheduler.value_or(SchedulerKind::Tile), o.base_named);
  for (const std::string& reason : report.skipped)
    fmt::print(stderr, "tilesched fit: warning: skipped: {}; its coefficients come from '{}'\n",
               reason, base_name);
  fmt::print("{}", format_cost_fit_report(report));
  check_fit_report(report, o.out_file);

  nlohmann::json j = report.model.to_json();
  std::vector<std::string> fitted_dims;
  for (const HeadDimFit& f : report.fits)
    fitted_dims.push_back(f.own_entry ? fmt::format("{} (BM {})", f.head_dim, f.block_m)
                                      : fmt::format("{} at BM {}", f.head_dim, f.block_m));
  std::vector<u32> launch_dims;
  for (const HeadDimLaunch& l : report.launches)
    if (l.fitted) launch_dims.push_back(l.head_dim);
  const std::string launch_note = launch_dims.empty() ? std::string()
                                                      : fmt::format(" (CTA launch: head_dims {})",
                                                                    fmt::join(launch_dims, ", "));
  std::vector<std::string> paged;
  for (const HeadDimPaged& p : report.paged)
    paged.push_back(fmt::format("{} at {} box{}", p.head_dim, p.boxes, p.boxes == 1 ? "" : "es"));
  const std::string paged_note =
      paged.empty() ? std::string()
                    : fmt::format("; paged factors of head_dims {}", fmt::join(paged, ", "));
  std::string streams_note;
  if (report.streams) {
    std::vector<std::string> fitted;
    if (report.streams->fit.bound_tiles > 0) fitted.push_back("the HBM bandwidth");
    for (const auto& [d, us] : report.streams->fit.saved_row_us)
      fitted.push_back(fmt::format("head_dim {}'s us_per_saved_row", d));
    if (!fitted.empty())
      streams_note =
          fmt::format("{} fitted to the decode tiles and pieces", fmt::join(fitted, ", "));
  }
  j["note"] =
      o.scheduler ? fmt::format(
                        "the {} scheduler's coefficients of head_dims {} fitted by "
                        "`tilesched fit --scheduler {}` to {} trace(s); everything else "
                        "from '{}'",
                        to_string(*o.scheduler), fmt::join(fitted_dims, ", "),
                        to_string(*o.scheduler), traces.size(), base_name)
      : o.launch_only
          ? fmt::format(
                "cta_launch_us of head_dims {} fitted by `tilesched fit --launch-only` to "
                "{} trace(s); everything else from '{}'",
                fmt::join(launch_dims, ", "), traces.size(), base_name)
      : fitted_dims.empty() && !streams_note.empty()
          ? fmt::format(
                "{} of {} trace(s) by `tilesched fit`, against the tile costs of '{}'{}; "
                "everything else from it",
                streams_note, traces.size(), base_name, paged_note)
      : fitted_dims.empty()
          ? fmt::format(
                "paged factors of head_dims {} fitted by `tilesched fit` to {} "
                "paged trace(s) against the per-block costs of '{}'; everything "
                "else from it",
                fmt::join(paged, ", "), traces.size(), base_name)
          : fmt::format(
                "head_dims {} fitted by `tilesched fit` to {} trace(s){}{}{}; others "
                "from '{}'",
                fmt::join(fitted_dims, ", "), traces.size(), launch_note, paged_note,
                streams_note.empty() ? std::string() : "; " + streams_note, base_name);
  // Write only what `--cost-model` reads back: the reader holds the ranges (value_limits.hpp).
  try {
    sim::CostModel::from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(
        fmt::format("not writing '{}': the fitted table is not a cost file the tool can read: {}",
                    o.out_file, e.what()));
  }
  // Like `sim --out DIR`, the place to write is created if missing.
  viz::ensure_parent_directory(o.out_file);
  sim::write_file_atomically(o.out_file, j.dump(2) + "\n");
  fmt::print("\nwrote {} (use it with `tilesched sim --cost-model {}`)\n", o.out_file, o.out_file);
  return kExitOk;
}

}  // namespace

void add_fit_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<FitOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fit", "Fit the cost model (per head_dim) to measured GPU traces and write a cost file");
  cmd->add_option("traces", options->trace_files,
                  "Trace JSON files measured with `run`, or `suite-run` output directories")
      ->type_name("TRACE.json|DIR ...");
  cmd->add_option("--device", options->device,
                  "Device name in the cost file (default: the traces' device)")
      ->type_name("NAME");
  add_output_file_flag(*cmd, "--out", options->out_file,
                       "Cost model JSON to write (for --cost-model)", "cost.json")
      ->capture_default_str();
  CLI::Option* base =
      add_cost_profile_flag(*cmd, "--base", options->base,
                            "Built-in profile whose head_dims are kept where the traces have none")
          ->type_name("PROFILE")
          ->capture_default_str();
  CLI::Option* base_model = cmd->add_option("--base-model", options->base_model_file,
                                            "A cost file as the base instead of a built-in profile")
                                ->type_name("FILE")
                                ->excludes(base);
  CLI::Option* launch_only =
      cmd->add_flag("--launch-only", options->launch_only,
                    "Keep the base's tile costs and sharing; fit only the CTA launch "
                    "(cta_launch_us) from the transient traces, against the base's tile costs");
  add_choice_flag(*cmd, "--scheduler", options->scheduler,
                  "Fit the tile costs of this scheduler kind's own kernel (its `schedulers` "
                  "entry at each head_dim's own BM; every trace must have run it) and keep "
                  "everything else from the base")
      ->type_name("KIND")
      ->excludes(launch_only);
  cmd->add_flag("--allow-sim", options->allow_sim,
                "Accept traces that were not measured on a GPU (with a warning)");
  cmd->footer(
      "Each head_dim is fitted per tile height (BM): traces at the entry's own block_m (where "
      "the base records none, the traces' smallest BM) refit the entry, traces at any other BM "
      "its tile_heights. A head_dim whose traces do not determine the coefficients is skipped "
      "with a warning (it keeps --base's coefficients). With --scheduler KIND only the tile "
      "costs of that kind's kernel are fitted, into each head_dim's `schedulers` entry: "
      "every trace must have run KIND at its head_dim's own BM. Traces of a paged KV cache "
      "(`run --page-size N`) fit the paged factor per head_dim and TMA boxes per K/V block "
      "against the contiguous per-block costs: those of the same head_dim's traces without pages "
      "given beside them, else those of a --base or --base-model named explicitly (refused "
      "otherwise). Traces of decoding workloads (decode tiles, which stream their K and V from "
      "HBM) and pieces of split tiles take no part in the tile costs: they fit the HBM bandwidth "
      "the decode tiles share (hbm_gbps) and what a piece saves per row (us_per_saved_row), "
      "against the tile costs fitted beside them or those of a --base or --base-model named "
      "explicitly. Exit status: 0 success, 1 a trace could not be read or is not from a GPU, no "
      "head_dim could be fitted, or a fit gave coefficients a cost file cannot hold (negative, "
      "or above one second), sharing rates outside (0, 1], a negative CTA launch, paged "
      "factors outside (0, 100], or a bandwidth or save a cost file cannot hold (nothing is "
      "written then), 2 bad flags.");
  cmd->callback([options, base, base_model, &action] {
    options->base_named = base->count() > 0 || base_model->count() > 0;
    action = [options] { return run_fit(*options); };
  });
}

}  // namespace tilesched::cli
