#include "cli/cost_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <set>
#include <stdexcept>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::cli {

CostFitReport fit_cost_model(const std::vector<LabelledTrace>& traces, const sim::CostModel& base,
                             const std::string& device) {
  if (traces.empty()) throw std::invalid_argument("cannot fit a cost model: no traces given");
  std::vector<Trace> plain;
  std::set<u32> head_dims;
  for (const LabelledTrace& t : traces) {
    plain.push_back(t.trace);
    head_dims.insert(t.trace.workload.head_dim);
  }

  CostFitReport report;
  report.model = base;
  report.model.device = device;
  for (const u32 d : head_dims) {
    const sim::CostFit fit = sim::fit_cost(plain, d);
    report.fits.push_back(HeadDimFit{d, fit});
    report.model.by_head_dim[d] = fit.coefficients;
    const auto negative = [&](const char* name, double value) {
      if (value < 0)
        report.negative_coefficients.push_back(
            fmt::format("head_dim {}: {} = {:.4g}", d, name, value));
    };
    negative("fixed_us", fit.coefficients.fixed_us);
    negative("us_per_block", fit.coefficients.us_per_block);
    negative("us_per_masked_block", fit.coefficients.us_per_masked_block);
  }

  // The per-tile fit can be good while the schedule's makespan is not (idle gaps, contention the
  // model does not know): replaying each workload shows how far the model carries.
  for (const LabelledTrace& t : traces) {
    MakespanComparison c;
    c.label = t.label;
    c.strategy = strategy_name(t.trace.workload);
    c.measured_us = sim::compute_metrics(t.trace).makespan_us;
    c.predicted_us = sim::compute_metrics(sim::replay(t.trace.workload, report.model)).makespan_us;
    report.makespans.push_back(c);
  }
  return report;
}

std::string format_cost_fit_report(const CostFitReport& r) {
  std::string out = fmt::format(
      "fitted cost model '{}' (time = fixed + per block * unmasked + "
      "per masked * masked KV blocks)\n\n",
      r.model.device);
  out += fmt::format("  {:>8} {:>10} {:>12} {:>13} {:>12} {:>8} {:>9}\n", "head_dim", "fixed us",
                     "us/block", "us/masked", "RMS res us", "samples", "rel RMS %");
  for (const HeadDimFit& f : r.fits) {
    const sim::CostCoefficients& k = f.fit.coefficients;
    out += fmt::format("  {:>8} {:>10.4f} {:>12.4f} {:>13.4f} {:>12.4f} {:>8} {:>9.2f}\n",
                       f.head_dim, k.fixed_us, k.us_per_block, k.us_per_masked_block,
                       f.fit.rms_residual_us, f.fit.samples, 100.0 * f.fit.relative_rms_error);
  }
  out += "\n  rel RMS = RMS of (predicted - measured) tile time / RMS of measured tile time\n\n";
  out += "makespan, measured vs replayed with the fitted model:\n";
  for (const MakespanComparison& c : r.makespans) {
    double error =
        c.measured_us > 0 ? 100.0 * (c.predicted_us - c.measured_us) / c.measured_us : 0.0;
    if (std::abs(error) < 0.05) error = 0;  // no "-0.0 %" for an exact replay

    out += fmt::format("  {}  ({})\n      measured {:.1f} us  predicted {:.1f} us  ({:+.1f} %)\n",
                       c.label, c.strategy, c.measured_us, c.predicted_us, error);
  }
  return out;
}

}  // namespace tilesched::cli
