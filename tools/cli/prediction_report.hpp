// `tilesched report`: every measured run of a suite replayed by the simulator, and what that says
// about the simulator and about the strategies: prediction error per strategy and CTA count,
// whether the predicted best is the measured best, and what the recommended strategy (the
// predicted best) gains over the seed's strategies and how far it stays from the ideal bound.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cli/suite_results.hpp"
#include "tilesched/sim/cost_model.hpp"

namespace tilesched::cli {

// A prediction is "the best" when its measured time is within this of the measured best.
inline constexpr double kBestTolerance = 0.02;

struct ReportRow {
  const SuiteRunResult* run = nullptr;
  double predicted_us = 0;
  double error = 0;  // (predicted - measured) / measured
};

// |error| over the runs of one strategy at one CTA count (by ctas label: "sms", "sms*occ", ...;
// a run that is both counts at once counts in both).
struct ErrorSummary {
  std::string strategy;
  std::string ctas;
  std::size_t runs = 0;
  double median_abs = 0;
  double p90_abs = 0;  // nearest rank: the ceil(0.9 n)-th smallest
};

struct WorkloadVerdict {
  std::string workload;
  bool causal = false;
  bool ragged = false;  // sequence lengths not all equal
  const ReportRow* measured_best = nullptr;
  const ReportRow* recommended = nullptr;  // the predicted best
  bool recommended_is_best = false;        // its measured time within kBestTolerance of the best
  // Measured speed-ups of the recommended run (0 when the reference was not run): over the seed's
  // DEFAULT (tile/default at C = SMs) and over the best seed strategy at the recommended C.
  double speedup_vs_default = 0;
  double speedup_vs_best_seed = 0;
  double over_ideal = 0;  // recommended measured time / its ideal bound - 1
  // The most any strategy could gain over the best seed strategy: its measured time at the
  // recommended C over the lowest ideal bound among the workload's runs at that C (0 when the
  // seed's strategies were not run).
  double seed_headroom = 0;
};

struct PredictionReport {
  std::string device, source, created, cost_model;
  u32 sms = 0;
  std::vector<std::string> notes;
  std::vector<ReportRow> rows;  // in the results' order
  std::vector<ErrorSummary> errors;
  std::vector<WorkloadVerdict> workloads;  // in the results' order
};

// Replays every run's workload (as run: strategy, C and resident CTAs) with `cost`.
PredictionReport build_prediction_report(const SuiteResults& results, const sim::CostModel& cost);

// The nearest-rank percentile (q in (0, 1]) of `values`; 0 for none.
double nearest_rank(std::vector<double> values, double q);

// The files `tilesched report` writes.
struct ReportFiles {
  std::string markdown;  // report.md
  std::string html;      // report.html (the scatter plot inline)
  std::string svg;       // scatter.svg
};
ReportFiles render_prediction_report(const PredictionReport& report);

}  // namespace tilesched::cli
