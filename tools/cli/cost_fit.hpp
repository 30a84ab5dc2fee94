// `tilesched fit`: the cost model's coefficients fitted to measured traces, with what a user needs
// to judge the fit (residuals per head_dim, predicted vs measured makespan per trace).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::cli {

struct LabelledTrace {
  std::string label;  // the file it came from, for the report
  Trace trace;
};

// The tile costs of one head_dim at one tile height.
struct HeadDimFit {
  u32 head_dim = 0;
  u32 block_m = 0;  // the tile height of the traces it came from
  // true: the head_dim's own entry (by_head_dim, its block_m); false: one of its other tile
  // heights (by_tile_height).
  bool own_entry = true;
  // FitScope::Scheduler: the scheduler kind whose entry (by_scheduler) this is.
  std::optional<SchedulerKind> scheduler;
  sim::CostFit fit;
};

// How a head_dim's CTAs share an SM: fitted from traces where they did, else kept from the base
// profile with the reason the traces could not tell.
struct HeadDimSharing {
  u32 head_dim = 0;
  bool fitted = false;
  sim::SharingFit fit;       // when fitted
  std::string undetermined;  // when not: why (sim::fit_sharing's message)
  sim::SmSharing model;      // what the written profile holds for this head_dim
};

// How long a head_dim's CTAs take to start in a freed slot: fitted from its transient traces, else
// kept from the base profile with the reason the traces could not tell.
struct HeadDimLaunch {
  u32 head_dim = 0;
  bool fitted = false;
  sim::LaunchFit fit;        // when fitted
  std::string undetermined;  // when not: why (sim::fit_cta_launch's message)
  double model_us = 0;       // what the written profile holds for this head_dim
};

// The paged factor of one head_dim and box count (sim::fit_paged_factor), from its paged traces.
struct HeadDimPaged {
  u32 head_dim = 0;
  u32 boxes = 0;  // TMA boxes per K/V block (kv_block_boxes)
  // true: the per-block costs it scales are the base's (no contiguous trace of the head dim was
  // fitted); false: this fit's.
  bool contiguous_from_base = false;
  sim::PagedFit fit;
};

// What decode tiles' streams and pieces' saves take beyond the tile costs (sim::fit_streams),
// from the traces with decode tiles or pieces of split tiles.
struct StreamCosts {
  // true: the tile costs they are measured against are the base's (no trace of their head dims
  // fitted tile costs); false: this fit's.
  bool tiles_from_base = false;
  sim::StreamFit fit;
  double model_hbm_bytes_per_us = 0;  // what the written table holds: the fit's, else the base's
};

// What `fit` fits: everything the traces determine; only the CTA launch against the base's tile
// costs (to add it to a profile whose tile costs were fitted elsewhere); or the tile costs of one
// scheduler kind's kernel (its `schedulers` entry at each head_dim's own tile height), the rest
// kept from the base.
enum class FitScope { Everything, LaunchOnly, Scheduler };

// One trace replayed with the fitted model: how well the fitted tile costs add up to the kernel.
struct MakespanComparison {
  std::string label;
  std::string strategy;
  bool fitted = true;  // false: its head_dim kept the base model's coefficients
  double measured_us = 0;
  // A GPU trace's without the combine of split tiles, which the trace does not see.
  double predicted_us = 0;
};

struct CostFitReport {
  // `base` with every head_dim found in the traces replaced by its fit; the others kept.
  sim::CostModel model;
  std::vector<HeadDimFit> fits;         // ascending head_dim, then tile height
  std::vector<HeadDimSharing> sharing;  // ascending head_dim, one per fitted head_dim
  std::vector<HeadDimLaunch> launches;  // ascending head_dim, one per head_dim of the traces
  std::vector<MakespanComparison> makespans;
  // "head_dim 128: us_per_block = -0.41", one per negative fitted coefficient. A negative cost is
  // physically meaningless and cost files reject it, so the caller must not write such a model.
  std::vector<std::string> negative_coefficients;
  // "head_dim 128: rate(2) = 1.07", one per fitted sharing rate outside (0, 1]: a CTA cannot run
  // faster beside another than alone, nor stop, so the traces do not fit the model.
  std::vector<std::string> invalid_rates;
  // "head_dim 256: cta_launch_us = -0.54", one per negative fitted launch: the tile costs predict
  // the transient tiles slower than they ran, so the launch cannot be told from them.
  std::vector<std::string> negative_launches;
  std::vector<HeadDimPaged> paged;  // ascending head_dim, then boxes
  // "head_dim 128, 8 boxes: factor = 140", one per fitted paged factor outside (0, 100]: cost
  // files reject it, and the contiguous costs it scales are not of the same kernel.
  std::vector<std::string> invalid_paged_factors;
  // Fitted where the traces have decode tiles or pieces of split tiles (FitScope::Everything).
  std::optional<StreamCosts> streams;
  // "hbm_gbps = 0.5", "head_dim 128: us_per_saved_row = -0.3": fitted values a cost file cannot
  // hold (the tile costs they are measured against are not of the traces' kernel or device).
  std::vector<std::string> invalid_streams;
  // "cannot fit head_dim 64: ...", one per head_dim the traces do not determine. Those keep the
  // base model's coefficients; the others are still fitted.
  std::vector<std::string> skipped;
  // The base's block_n when it differs from the traces' (0 otherwise): the base's per-block
  // costs were rescaled to the traces' blocks (model.block_n), so that one table costs one size.
  u32 base_block_n_rescaled_from = 0;
};

// Fits every head_dim present in `traces`: tile costs from the traces that ran one CTA per SM
// (sim::fit_cost), how CTAs share an SM from those where they did not (sim::fit_sharing), and the
// CTA launch from the transient ones, against the fitted tile costs (sim::fit_cta_launch); where
// the traces cannot tell the sharing or the launch, the base's are kept and the reason reported.
// Tile heights: a head_dim's entry holds the tile height the base records for it (block_m), or,
// where the base records none, the smallest height of its traces; the traces of every other
// height fit a by_tile_height entry of their own. Sharing and launch come from the traces of the
// entry's own height. Then replays each trace's workload with the result. A head_dim whose tiles do
// not determine the coefficients (sim::fit_cost's std::invalid_argument names the head_dim and what
// its tiles lack) is listed in `skipped`; when no head_dim can be fitted, that is a
// std::invalid_argument listing every reason. Also thrown when `traces` is empty.
// FitScope::LaunchOnly keeps the base's tile costs and sharing and fits only the launch, against
// the base's tile costs; std::invalid_argument when no head_dim's launch can be fitted.
// FitScope::Scheduler fits the traces of scheduler `kind` (every trace must be one: a
// std::invalid_argument names the first that is not) at each head_dim's own tile height (the
// base's block_m; traces at another height are refused alike) into by_scheduler[d][kind], and
// keeps everything else from the base.
// Traces of decoding workloads take no part in the tile costs, sharing or launch either (their
// tiles stream their K and V from HBM, or run beside tiles that do), nor do pieces of split
// tiles: with FitScope::Everything, the traces' decode tiles and pieces fit the HBM bandwidth and
// each head dim's us_per_saved_row (sim::fit_streams) against the tile costs fitted here, or the
// base's for head dims without prefill traces when `base_named` (else std::invalid_argument names
// the head dims), starting from the base's bandwidth; a bandwidth no decode tile ran past keeps
// the base's.
// Paged traces (page_size != 0) take no part in the tile costs, sharing or launch: with
// FitScope::Everything they fit paged_by_head_dim[d][boxes] (sim::fit_paged_factor), one per
// head_dim and TMA boxes per K/V block, against the per-block costs fitted from the head_dim's
// contiguous traces, or, for a head_dim without any, the base's when `base_named` (the caller
// chose the base; the default profile may be another kernel or device); otherwise a
// std::invalid_argument names the head dims. The other scopes refuse paged traces.
CostFitReport fit_cost_model(const std::vector<LabelledTrace>& traces, const sim::CostModel& base,
                             const std::string& device, FitScope scope = FitScope::Everything,
                             SchedulerKind kind = SchedulerKind::Tile, bool base_named = true);

// The table per head_dim and the makespan comparison, as printed by `tilesched fit`.
std::string format_cost_fit_report(const CostFitReport& report);

}  // namespace tilesched::cli
