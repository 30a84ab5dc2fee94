#include "cli/cost_fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/value_limits.hpp"

namespace tilesched::cli {

namespace {

// The sharing of one head_dim: fitted where its traces show CTAs sharing SMs, the base's rates
// kept beyond the busiest SM seen (and for the occupancy the base allows beyond it).
HeadDimSharing fit_head_dim_sharing(const std::vector<Trace>& traces, u32 head_dim, u32 block_m,
                                    const sim::CostCoefficients& solo, const sim::SmSharing& base) {
  HeadDimSharing s;
  s.head_dim = head_dim;
  s.model = base;
  try {
    s.fit = sim::fit_sharing(traces, head_dim, solo, block_m);
  } catch (const std::invalid_argument& e) {
    s.undetermined = e.what();
    return s;
  }
  s.fitted = true;
  s.model.ctas_per_sm = std::max(base.ctas_per_sm, s.fit.sharing.ctas_per_sm);
  s.model.shared_rates = s.fit.sharing.shared_rates;
  for (u32 k = s.fit.sharing.ctas_per_sm + 1; k <= s.model.ctas_per_sm; ++k)
    s.model.shared_rates.push_back(base.ctas_per_sm >= k ? base.rate(k) : s.fit.sharing.rate(k));
  return s;
}

// The CTA launch of one head_dim, fitted against the tile costs `solo` where its transient traces
// tell, else the base's.
// Only the traces of tile height `block_m` count (0: every height).
HeadDimLaunch fit_head_dim_launch(const std::vector<Trace>& traces, u32 head_dim, u32 block_m,
                                  const sim::CostCoefficients& solo, const sim::CostModel& base) {
  HeadDimLaunch l;
  l.head_dim = head_dim;
  l.model_us = base.cta_launch_us(head_dim);
  try {
    l.fit = sim::fit_cta_launch(traces, head_dim, solo, block_m);
  } catch (const std::invalid_argument& e) {
    l.undetermined = e.what();
    return l;
  }
  l.fitted = true;
  l.model_us = l.fit.cta_launch_us;
  return l;
}

// The tile height a head_dim's own entry describes: what the base records, else the smallest
// height of the traces that the base does not list among the head_dim's other heights (0: none).
u32 own_tile_height(const sim::CostModel& base, u32 head_dim, const std::set<u32>& heights) {
  const auto recorded = base.block_m_by_head_dim.find(head_dim);
  if (recorded != base.block_m_by_head_dim.end()) return recorded->second;
  const auto listed = base.by_tile_height.find(head_dim);
  for (const u32 bm : heights)
    if (listed == base.by_tile_height.end() || listed->second.count(bm) == 0) return bm;
  return 0;
}

// The tile costs of head_dim `d` at tile height `bm` (sim::fit_cost): nothing, with the reason in
// report.skipped, when the traces do not determine them; each negative coefficient is listed in
// report.negative_coefficients under `where`.
std::optional<sim::CostFit> fit_tile_costs(const std::vector<Trace>& traces, u32 d, u32 bm,
                                           const std::string& where, CostFitReport& report) {
  sim::CostFit fit;
  try {
    fit = sim::fit_cost(traces, d, bm);
  } catch (const std::invalid_argument& e) {
    report.skipped.push_back(e.what());
    return std::nullopt;
  }
  const auto negative = [&](const char* name, double value) {
    if (value < 0)
      report.negative_coefficients.push_back(fmt::format("{}: {} = {:.4g}", where, name, value));
  };
  negative("fixed_us", fit.coefficients.fixed_us);
  negative("us_per_block", fit.coefficients.us_per_block);
  negative("us_per_masked_block", fit.coefficients.us_per_masked_block);
  return fit;
}

// The head dims whose tile costs this fit gave (their own entry, not a scheduler kind's).
std::set<u32> fitted_tile_dims(const CostFitReport& report) {
  std::set<u32> dims;
  for (const HeadDimFit& f : report.fits)
    if (f.own_entry && !f.scheduler) dims.insert(f.head_dim);
  return dims;
}

// Of `dims`, those whose tile costs neither this fit (`fitted`) nor a named base gives: a term
// fitted against the tile costs (a paged factor, the streams' costs) cannot be fitted there.
std::set<u32> without_tile_costs(const std::set<u32>& dims, const std::set<u32>& fitted,
                                 bool base_named) {
  std::set<u32> out;
  if (!base_named)
    for (const u32 d : dims)
      if (fitted.count(d) == 0) out.insert(d);
  return out;
}

// A cost file holds a head dim's fitted terms (paged factors, saves) in its entry: a head dim
// the base interpolates gets an entry of the coefficients it had.
void give_entry(sim::CostModel& model, u32 head_dim) {
  if (model.by_head_dim.count(head_dim) == 0)
    model.by_head_dim[head_dim] = model.coefficients(head_dim);
}

// The paged factors of `traces`' paged ones (sim::fit_paged_factor), against report.model's
// per-block costs: the head dim's own fit where its contiguous traces gave one, else the base's
// when `base_named`. A (head dim, boxes) whose tiles cannot tell is listed in report.skipped.
void fit_paged_factors(const std::vector<Trace>& traces, bool base_named, CostFitReport& report) {
  const std::vector<std::pair<u32, u32>> groups = sim::paged_groups(traces);
  const std::set<u32> fitted_dims = fitted_tile_dims(report);
  std::set<u32> dims;
  for (const auto& [d, boxes] : groups) dims.insert(d);
  const std::set<u32> without_costs = without_tile_costs(dims, fitted_dims, base_named);
  if (!without_costs.empty())
    throw std::invalid_argument(fmt::format(
        "cannot fit the paged factor of head_dim{} {}: the factor scales the contiguous "
        "per-block costs, and no trace without pages of {} was fitted, nor a base table named "
        "(--base PROFILE or --base-model FILE) to take them from; add traces of the same kernel "
        "recorded without --page-size, or name the table fitted to them{}",
        without_costs.size() == 1 ? "" : "s", fmt::join(without_costs, ", "),
        without_costs.size() == 1 ? "it" : "them",
        report.skipped.empty() ? std::string()
                               : fmt::format(" ({})", fmt::join(report.skipped, "; "))));
  for (const auto& [d, boxes] : groups) {
    HeadDimPaged p;
    p.head_dim = d;
    p.boxes = boxes;
    p.contiguous_from_base = fitted_dims.count(d) == 0;
    try {
      p.fit = sim::fit_paged_factor(traces, d, boxes, report.model);
    } catch (const std::invalid_argument& e) {
      report.skipped.push_back(e.what());
      continue;
    }
    if (!sim::paged_factor_problem(p.fit.factor).empty())
      report.invalid_paged_factors.push_back(fmt::format("head_dim {}, {} box{}: factor = {:.4g}",
                                                         d, boxes, boxes == 1 ? "" : "es",
                                                         p.fit.factor));
    give_entry(report.model, d);
    report.model.paged_by_head_dim[d][boxes] = p.fit.factor;
    report.paged.push_back(p);
  }
}

// The HBM bandwidth and each head dim's us_per_saved_row (sim::fit_streams), from the traces'
// decode tiles and pieces, against report.model's tile costs: the head dim's own fit where its
// prefill traces gave one, else the base's when `base_named`. Nothing when the traces hold no
// decode tile or piece.
void fit_stream_costs(const std::vector<Trace>& traces, bool base_named, CostFitReport& report) {
  std::set<u32> dims;
  for (const Trace& t : traces)
    if (sim::has_streams_or_pieces(t)) dims.insert(t.workload.head_dim);
  if (dims.empty()) return;
  const std::set<u32> fitted_dims = fitted_tile_dims(report);
  const std::set<u32> without_costs = without_tile_costs(dims, fitted_dims, base_named);
  if (!without_costs.empty())
    throw std::invalid_argument(fmt::format(
        "cannot fit the HBM bandwidth and the pieces' saves of head_dim{} {}: they are measured "
        "against the tile costs, and no prefill trace of {} was fitted, nor a base table named "
        "(--base PROFILE or --base-model FILE) to take them from; add prefill traces of the same "
        "kernel, or name the table fitted to them",
        without_costs.size() == 1 ? "" : "s", fmt::join(without_costs, ", "),
        without_costs.size() == 1 ? "it" : "them"));
  StreamCosts costs;
  costs.tiles_from_base =
      std::any_of(dims.begin(), dims.end(), [&](u32 d) { return fitted_dims.count(d) == 0; });
  try {
    costs.fit = sim::fit_streams(traces, report.model, report.model.hbm_bytes_per_us);
  } catch (const std::invalid_argument& e) {
    report.skipped.push_back(e.what());
    return;
  }
  if (costs.fit.bound_tiles > 0) {
    const double gbps = costs.fit.hbm_bytes_per_us / 1e3;  // GB/s = 1e3 bytes per us
    if (!sim::hbm_bandwidth_problem(gbps).empty())
      report.invalid_streams.push_back(fmt::format("hbm_gbps = {:.4g}", gbps));
    report.model.hbm_bytes_per_us = costs.fit.hbm_bytes_per_us;
  }
  costs.model_hbm_bytes_per_us = report.model.hbm_bytes_per_us;
  for (const auto& [d, us] : costs.fit.saved_row_us) {
    if (!sim::saved_row_problem(us).empty())
      report.invalid_streams.push_back(
          fmt::format("head_dim {}: us_per_saved_row = {:.4g}", d, us));
    give_entry(report.model, d);
    report.model.saved_row_us_by_head_dim[d] = us;
  }
  report.streams = costs;
}

}  // namespace

CostFitReport fit_cost_model(const std::vector<LabelledTrace>& traces, const sim::CostModel& base,
                             const std::string& device, FitScope scope, SchedulerKind kind,
                             bool base_named) {
  if (traces.empty()) throw std::invalid_argument("cannot fit a cost model: no traces given");
  if (scope != FitScope::Everything)
    for (const LabelledTrace& t : traces)
      if (t.trace.workload.page_size != 0)
        throw std::invalid_argument(fmt::format(
            "'{}' ran a paged KV cache (page_size {}): {} fits contiguous traces only; fit paged "
            "traces without it, against the per-block costs of the table it writes",
            t.label, t.trace.workload.page_size,
            scope == FitScope::LaunchOnly ? "--launch-only" : "--scheduler"));
  if (scope == FitScope::Scheduler) {
    for (const LabelledTrace& t : traces) {
      const Workload& w = t.trace.workload;
      if (w.scheduler != kind)
        throw std::invalid_argument(fmt::format(
            "'{}' ran the {} scheduler: a fit of the {} kernel's costs takes its traces only",
            t.label, to_string(w.scheduler), to_string(kind)));
      const auto own = base.block_m_by_head_dim.find(w.head_dim);
      if (own != base.block_m_by_head_dim.end() && own->second != w.block_m)
        throw std::invalid_argument(fmt::format(
            "'{}' ran BM {} at head_dim {}, whose entry in the base is of BM {}: a scheduler's "
            "coefficients are of the entry's own tile height",
            t.label, w.block_m, w.head_dim, own->second));
    }
  }
  std::vector<Trace> plain;
  std::vector<std::string> labels;
  std::map<u32, std::set<u32>> heights;  // head_dim -> the tile heights its traces ran
  for (const LabelledTrace& t : traces) {
    plain.push_back(t.trace);
    labels.push_back(t.label);
    if (t.trace.workload.page_size == 0 && !t.trace.workload.decoding)
      heights[t.trace.workload.head_dim].insert(t.trace.workload.block_m);
  }
  // One block size throughout the written table: the traces' (all alike, or refused). A base of
  // another size has its per-block costs rescaled to it, as the replay would cost them.
  const u32 block_n = sim::traces_block_n(plain, labels);

  CostFitReport report;
  report.model = base.with_block_n(block_n);
  report.model.device = device;
  if (base.block_n != 0 && base.block_n != block_n)
    report.base_block_n_rescaled_from = base.block_n;
  // Every head_dim of the traces gets an entry of its own, so that its launch is written even
  // where the base interpolates its tile costs.
  const auto record_launch = [&](const HeadDimLaunch& launch) {
    report.launches.push_back(launch);
    if (launch.fitted && launch.model_us < 0)
      report.negative_launches.push_back(
          fmt::format("head_dim {}: cta_launch_us = {:.4g}", launch.head_dim, launch.model_us));
    report.model.cta_launch_us_by_head_dim[launch.head_dim] = launch.model_us;
  };
  if (scope == FitScope::LaunchOnly) {
    std::vector<std::string> reasons;
    for (const auto& [d, bms] : heights) {
      const auto recorded = base.block_m_by_head_dim.find(d);
      const u32 own = recorded == base.block_m_by_head_dim.end() ? 0 : recorded->second;
      record_launch(fit_head_dim_launch(plain, d, own, base.coefficients(d), base));
      if (!report.launches.back().fitted) reasons.push_back(report.launches.back().undetermined);
    }
    if (reasons.size() == heights.size())
      throw std::invalid_argument(
          fmt::format("no head_dim's CTA launch could be fitted: {}", fmt::join(reasons, "; ")));
  }
  for (const auto& [d, bms] :
       scope == FitScope::Scheduler ? heights : std::map<u32, std::set<u32>>{}) {
    const u32 bm = *bms.begin();  // one height per head_dim: checked above, or the base has none
    if (bms.size() > 1)
      throw std::invalid_argument(fmt::format(
          "the traces of head_dim {} ran several tile heights ({}) and the base records none: a "
          "scheduler's coefficients are of one",
          d, fmt::join(bms, ", ")));
    const std::optional<sim::CostFit> fit =
        fit_tile_costs(plain, d, bm, fmt::format("head_dim {} {}", d, to_string(kind)), report);
    if (!fit) continue;
    report.fits.push_back(HeadDimFit{d, bm, true, kind, *fit});
    report.model.by_scheduler[d][kind] = fit->coefficients;
  }
  for (const auto& [d, bms] : scope == FitScope::Everything ? heights
                                                             : std::map<u32, std::set<u32>>{}) {
    const u32 own = own_tile_height(base, d, bms);
    for (const u32 bm : bms) {
      const bool own_entry = bm == own;
      const std::optional<sim::CostFit> found = fit_tile_costs(
          plain, d, bm,
          own_entry ? fmt::format("head_dim {}", d) : fmt::format("head_dim {} BM {}", d, bm),
          report);
      if (!found) continue;
      const sim::CostFit& fit = *found;
      report.fits.push_back(HeadDimFit{d, bm, own_entry, std::nullopt, fit});
      if (!own_entry) {
        report.model.by_tile_height[d][bm] = fit.coefficients;
        continue;
      }
      report.model.by_head_dim[d] = fit.coefficients;
      report.model.block_m_by_head_dim[d] = bm;
      report.sharing.push_back(
          fit_head_dim_sharing(plain, d, bm, fit.coefficients, base.sharing(d)));
      const HeadDimSharing& shared = report.sharing.back();
      report.model.sharing_by_head_dim[d] = shared.model;
      for (std::size_t k = 0; shared.fitted && k < shared.fit.sharing.shared_rates.size(); ++k) {
        const double r = shared.fit.sharing.shared_rates[k];
        if (!(r > 0 && r <= 1))
          report.invalid_rates.push_back(
              fmt::format("head_dim {}: rate({}) = {:.4g}", d, k + 2, r));
      }
      record_launch(fit_head_dim_launch(plain, d, bm, fit.coefficients, base));
    }
  }

  if (scope == FitScope::Everything) {
    fit_paged_factors(plain, base_named, report);
    fit_stream_costs(plain, base_named, report);
  }

  if (scope != FitScope::LaunchOnly && report.fits.empty() && report.paged.empty() &&
      !report.streams)
    throw std::invalid_argument(
        fmt::format("no head_dim could be fitted: {}", fmt::join(report.skipped, "; ")));

  // The per-tile fit can be good while the schedule's makespan is not (idle gaps, contention the
  // model does not know): replaying each workload shows how far the model carries.
  for (const LabelledTrace& t : traces) {
    MakespanComparison c;
    c.label = t.label;
    c.strategy = strategy_name(t.trace.workload);
    const Workload& w = t.trace.workload;
    c.fitted = scope == FitScope::LaunchOnly ||
               std::any_of(report.fits.begin(), report.fits.end(), [&](const HeadDimFit& f) {
                 return f.head_dim == w.head_dim && f.block_m == w.block_m;
               });
    if (w.page_size != 0)  // its cost is the paged factor's, on the entry's or the base's
      c.fitted = std::any_of(report.paged.begin(), report.paged.end(), [&](const HeadDimPaged& p) {
        return p.head_dim == w.head_dim && p.boxes == kv_block_boxes(w.page_size, w.block_n);
      });
    else if (w.decoding)  // its streams' and pieces' costs, on the entry's or the base's
      c.fitted = report.streams.has_value();
    c.measured_us = sim::compute_metrics(t.trace).makespan_us;
    const Trace replayed = sim::replay(t.trace.workload, report.model);
    c.predicted_us = sim::compute_metrics(replayed).makespan_us;
    // A GPU trace ends with the kernel's last tile: the combine of split tiles, a second kernel
    // after it, is not in its makespan (as `report` holds it).
    if (t.trace.source == "gpu") c.predicted_us -= replayed.combine_us;
    report.makespans.push_back(c);
  }
  return report;
}

namespace {

// A fit of one scheduler kind's entries (FitScope::Scheduler).
bool is_scheduler_fit(const CostFitReport& r) {
  return !r.fits.empty() && std::all_of(r.fits.begin(), r.fits.end(), [](const HeadDimFit& f) {
    return f.scheduler.has_value();
  });
}

std::string format_tile_costs(const CostFitReport& r) {
  std::string out = fmt::format("  {:>8} {:>14} {:>10} {:>12} {:>13} {:>12} {:>8} {:>9} {:>12}\n",
                                "head_dim", "BM", "fixed us", "us/block", "us/masked", "RMS res us",
                                "samples", "rel RMS %", "hand-off us");
  for (const HeadDimFit& f : r.fits) {
    const sim::CostCoefficients& k = f.fit.coefficients;
    out += fmt::format(
        "  {:>8} {:>14} {:>10.4f} {:>12.4f} {:>13.4f} {:>12.4f} {:>8} {:>9.2f} {:>12.4f}\n",
        f.head_dim,
        f.scheduler   ? fmt::format("{} {}", f.block_m, to_string(*f.scheduler))
        : f.own_entry ? fmt::format("{}", f.block_m)
                      : fmt::format("{} (h)", f.block_m),
        k.fixed_us, k.us_per_block, k.us_per_masked_block, f.fit.rms_residual_us, f.fit.samples,
        100.0 * f.fit.relative_rms_error, f.fit.handoff_us);
  }
  if (std::any_of(r.fits.begin(), r.fits.end(), [](const HeadDimFit& f) { return !f.own_entry; }))
    out += "\n  (h): another tile height of the head_dim (its tile_heights entry); sharing and\n"
           "  launch come from the traces of the entry's own BM\n";
  out += "\n  rel RMS = RMS of (predicted - measured) tile time / RMS of measured tile time\n";
  out += "  fixed includes the hand-off: the mean gap between a CTA's consecutive tiles\n";
  out += "  (tile costs from the traces that ran one CTA per SM)\n\n";
  out += "sharing an SM (rate(k): speed of each of k busy CTAs on one SM, relative to alone):\n";
  const bool scheduler_fit = is_scheduler_fit(r);
  if (scheduler_fit)
    out +=
        "  (a scheduler's entry: its tile costs only; sharing and launch kept from the base)\n\n";
  if (r.sharing.empty())
    out += scheduler_fit ? "  kept from the base\n"
                         : "  kept from the base: no trace ran an entry's own tile height\n";
  for (const HeadDimSharing& h : r.sharing) {
    std::string rates;
    for (u32 k = 2; k <= h.model.ctas_per_sm; ++k)
      rates += fmt::format(", rate({}) = {:.4f}", k, h.model.rate(k));
    if (h.fitted)
      out += fmt::format("  {:>8}: fitted: {} CTA{} per SM{} ({} shared tiles, rel RMS {:.2f} %)\n",
                         h.head_dim, h.model.ctas_per_sm, h.model.ctas_per_sm == 1 ? "" : "s",
                         rates, h.fit.samples, 100.0 * h.fit.relative_rms_error);
    else
      out += fmt::format("  {:>8}: kept from the base: {} CTA{} per SM{}\n            ({})\n",
                         h.head_dim, h.model.ctas_per_sm, h.model.ctas_per_sm == 1 ? "" : "s",
                         rates, h.undetermined);
  }
  return out;
}

}  // namespace
// The paged factors, one row per head dim and box count.
std::string format_paged_factors(const CostFitReport& r) {
  std::string out =
      "\npaged KV caches (factor on the per-block costs of blocks loaded as `boxes` TMA boxes):\n";
  out += fmt::format("  {:>8} {:>6} {:>8} {:>8} {:>7} {:>12} {:>9}  {}\n", "head_dim", "boxes",
                     "factor", "samples", "traces", "RMS res us", "rel RMS %", "per-block costs");
  for (const HeadDimPaged& p : r.paged)
    out += fmt::format("  {:>8} {:>6} {:>8.4f} {:>8} {:>7} {:>12.4f} {:>9.2f}  {}\n", p.head_dim,
                       p.boxes, p.fit.factor, p.fit.samples, p.fit.traces, p.fit.rms_residual_us,
                       100.0 * p.fit.relative_rms_error,
                       p.contiguous_from_base ? "the base's" : "this fit's");
  out +=
      "\n  (from the paged traces at one CTA per SM; time = fixed + factor x (per block x\n"
      "  unmasked + per masked x masked), with fixed and the per-block costs held)\n";
  return out;
}

// The HBM bandwidth and the pieces' saves fitted from decode tiles and pieces.
std::string format_stream_costs(const CostFitReport& r) {
  const StreamCosts& c = *r.streams;
  const sim::StreamFit& f = c.fit;
  std::string out =
      fmt::format("\ndecode streams and pieces of split tiles (against the tile costs of {}):\n",
                  c.tiles_from_base ? "the base" : "this fit");
  if (f.bound_tiles > 0)
    out += fmt::format(
        "  HBM bandwidth: fitted: {:.1f} GB/s ({} of the {} decode tiles and pieces of {} "
        "trace{} asked more)\n",
        f.hbm_bytes_per_us / 1e3, f.bound_tiles, f.decode_tiles, f.decoding_traces,
        f.decoding_traces == 1 ? "" : "s");
  else
    out += fmt::format(
        "  HBM bandwidth: kept from the base: {:.1f} GB/s ({})\n", c.model_hbm_bytes_per_us / 1e3,
        f.decode_tiles == 0
            ? "no decode tile in the traces"
            : fmt::format("none of the {} decode tiles and pieces asked more", f.decode_tiles));
  for (const auto& [d, us] : f.saved_row_us)
    out += fmt::format("  {:>8}: {:.4f} us per saved row ({} pieces)\n", d, us, f.pieces.at(d));
  if (f.saved_row_us.empty()) out += "  us per saved row: kept from the base (no piece)\n";
  out += fmt::format("\n  {:<42} {:>7} {:>8} {:>12} {:>12} {:>11} {:>11}\n", "tiles", "count",
                     "blocks", "measured us", "modelled us", "meas/model", "asked GB/s");
  for (const sim::StreamGroup& g : f.groups) {
    const char* part = g.part == sim::StreamGroup::Whole        ? "whole"
                       : g.part == sim::StreamGroup::FirstPiece ? "first piece"
                                                                : "later piece";
    const char* pressed = g.decode ? (g.pressed ? "past the bandwidth" : "within it")
                                   : (g.pressed ? "beside streams" : "no stream beside");
    const double n = double(g.tiles);
    out += fmt::format("  {:<42} {:>7} {:>8.1f} {:>12.2f} {:>12.2f} {:>11.3f} {:>11.1f}\n",
                       fmt::format("{}, {}, {}", g.decode ? "decode" : "prefill", part, pressed),
                       g.tiles, g.blocks / n, g.measured_us / n, g.modelled_us / n,
                       g.modelled_us > 0 ? g.measured_us / g.modelled_us : 0.0, g.asked / n / 1e3);
  }
  out += fmt::format(
      "\n  {} tiles weighed, RMS residual {:.4f} us, rel RMS {:.2f} %, {} round{}\n"
      "\n  (time = fixed + blocks' cost x max(1, asked / bandwidth) for a decode tile, + per\n"
      "  saved row x rows for a piece; asked: what the trace's decode tiles streaming beside it\n"
      "  asked, each its bytes over its blocks' cost; measured and modelled per tile, hand-off\n"
      "  included; from the traces at one CTA per SM, the tile costs held)\n",
      f.samples, f.rms_residual_us, 100.0 * f.relative_rms_error, f.iterations,
      f.iterations == 1 ? "" : "s");
  return out;
}

std::string format_cost_fit_report(const CostFitReport& r) {
  std::string out = fmt::format(
      "fitted cost model '{}' (time = fixed + per block * unmasked + "
      "per masked * masked KV blocks)\n\n",
      r.model.device);
  if (r.base_block_n_rescaled_from != 0)
    out += fmt::format(
        "  KV blocks of {} keys, as the traces count them; the base's per-block costs, per {} "
        "keys, rescaled to them\n\n",
        r.model.block_n, r.base_block_n_rescaled_from);
  out += !r.fits.empty()    ? format_tile_costs(r)
         : !r.paged.empty() ? "  tile costs and sharing: kept from the base (only paged traces)\n"
         : r.streams
             ? "  tile costs and sharing: kept from the base (only decoding traces and pieces)\n"
             : "  tile costs and sharing: kept from the base (only the launch fitted)\n";
  if (!r.paged.empty()) out += format_paged_factors(r);
  if (r.streams) out += format_stream_costs(r);
  out +=
      "\nCTA launch (from a slot's CTA exit to the next CTA's first tile, beyond the tile "
      "costs):\n";
  if (r.launches.empty())
    out += is_scheduler_fit(r) ? "  kept from the base\n"
                               : "  kept from the base: no trace ran an entry's own tile height\n";
  for (const HeadDimLaunch& l : r.launches) {
    if (l.fitted)
      out += fmt::format(
          "  {:>8}: fitted: {:.4f} us ({} transient trace{}, {} refilled tiles, {} CTAs without a "
          "tile; per-trace spread {:.4f} us RMS)\n",
          l.head_dim, l.model_us, l.fit.traces, l.fit.traces == 1 ? "" : "s", l.fit.refills,
          l.fit.tileless, l.fit.rms_spread_us);
    else
      out += fmt::format("  {:>8}: kept from the base: {:.4f} us\n            ({})\n", l.head_dim,
                         l.model_us, l.undetermined);
  }
  out += "\n";
  out += "makespan, measured vs replayed with the fitted model:\n";
  for (const MakespanComparison& c : r.makespans) {
    double error =
        c.measured_us > 0 ? 100.0 * (c.predicted_us - c.measured_us) / c.measured_us : 0.0;
    if (std::abs(error) < 0.05) error = 0;  // no "-0.0 %" for an exact replay

    out += fmt::format("  {}  ({})\n      measured {:.1f} us  predicted {:.1f} us  ({:+.1f} %){}\n",
                       c.label, c.strategy, c.measured_us, c.predicted_us, error,
                       c.fitted ? "" : "  (head_dim not fitted: base coefficients)");
  }
  return out;
}

}  // namespace tilesched::cli
