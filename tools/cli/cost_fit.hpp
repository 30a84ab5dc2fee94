// `tilesched fit`: the cost model's coefficients fitted to measured traces, with what a user needs
// to judge the fit (residuals per head_dim, predicted vs measured makespan per trace).
#pragma once

#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::cli {

struct LabelledTrace {
  std::string label;  // the file it came from, for the report
  Trace trace;
};

struct HeadDimFit {
  u32 head_dim = 0;
  sim::CostFit fit;
};

// One trace replayed with the fitted model: how well the fitted tile costs add up to the kernel.
struct MakespanComparison {
  std::string label;
  std::string strategy;
  double measured_us = 0;
  double predicted_us = 0;
};

struct CostFitReport {
  // `base` with every head_dim found in the traces replaced by its fit; the others kept.
  sim::CostModel model;
  std::vector<HeadDimFit> fits;  // ascending head_dim
  std::vector<MakespanComparison> makespans;
  // "head_dim 128: us_per_block = -0.41", one per negative fitted coefficient. A negative cost is
  // physically meaningless and cost files reject it, so the caller must not write such a model.
  std::vector<std::string> negative_coefficients;
};

// Fits every head_dim present in `traces` (sim::fit_cost; its std::invalid_argument names the
// head_dim and the coefficient the tiles leave undetermined) and replays each trace's workload
// with the result. Throws std::invalid_argument when `traces` is empty.
CostFitReport fit_cost_model(const std::vector<LabelledTrace>& traces, const sim::CostModel& base,
                             const std::string& device);

// The table per head_dim and the makespan comparison, as printed by `tilesched fit`.
std::string format_cost_fit_report(const CostFitReport& report);

}  // namespace tilesched::cli
