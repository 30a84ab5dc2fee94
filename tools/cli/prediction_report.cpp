#include "cli/prediction_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "cli/strategies.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "viz/report_pieces.hpp"
#include "viz/svg_html.hpp"
#include "viz/xml_escape.hpp"

namespace tilesched::cli {

double nearest_rank(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * double(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

namespace {

// The CTA-count labels a run counts under ("sms,sms*occ" is both).
std::vector<std::string> labels_of(const SuiteRunResult& run) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(run.ctas_label.find(',', begin), run.ctas_label.size());
    out.push_back(run.ctas_label.substr(begin, end - begin));
    if (end == run.ctas_label.size()) return out;
    begin = end + 1;
  }
}

bool lengths_vary(const Workload& w) {
  return std::adjacent_find(w.q_lens.begin(), w.q_lens.end(), std::not_equal_to<>()) !=
             w.q_lens.end() ||
         (!w.kv_lens.empty() && std::adjacent_find(w.kv_lens.begin(), w.kv_lens.end(),
                                                   std::not_equal_to<>()) != w.kv_lens.end());
}

std::vector<ErrorSummary> error_summaries(const std::vector<ReportRow>& rows) {
  std::vector<std::pair<std::string, std::string>> keys;  // (strategy, ctas), first seen first
  std::map<std::pair<std::string, std::string>, std::vector<double>> errors;
  for (const ReportRow& r : rows)
    for (const std::string& label : labels_of(*r.run)) {
      const auto key = std::make_pair(r.run->strategy, label);
      if (!errors.count(key)) keys.push_back(key);
      errors[key].push_back(std::abs(r.error));
    }
  std::vector<ErrorSummary> out;
  for (const auto& key : keys) {
    const std::vector<double>& e = errors[key];
    out.push_back(
        ErrorSummary{key.first, key.second, e.size(), sim::median(e), nearest_rank(e, 0.9)});
  }
  return out;
}

WorkloadVerdict judge(const std::string& name, const std::vector<const ReportRow*>& rows, u32 sms) {
  WorkloadVerdict v;
  v.workload = name;
  const Workload& w = rows.front()->run->workload;
  v.causal = w.mask == Mask::Causal;
  v.ragged = lengths_vary(w);
  for (const ReportRow* r : rows) {
    if (!v.measured_best || r->run->makespan_us < v.measured_best->run->makespan_us)
      v.measured_best = r;
    if (!v.recommended || r->predicted_us < v.recommended->predicted_us) v.recommended = r;
  }
  const double best = v.measured_best->run->makespan_us;
  const SuiteRunResult& rec = *v.recommended->run;
  v.recommended_is_best = rec.makespan_us <= best * (1 + kBestTolerance);
  double best_seed = 0, lowest_ideal = 0;
  for (const ReportRow* r : rows) {
    const SuiteRunResult& run = *r->run;
    if (run.strategy == kSeedDefaultStrategy && run.workload.num_ctas == sms)
      v.speedup_vs_default = run.makespan_us / rec.makespan_us;
    if (run.workload.num_ctas != rec.workload.num_ctas) continue;
    if (is_seed_strategy(run.strategy) && (best_seed == 0 || run.makespan_us < best_seed))
      best_seed = run.makespan_us;
    if (run.ideal_us() > 0 && (lowest_ideal == 0 || run.ideal_us() < lowest_ideal))
      lowest_ideal = run.ideal_us();
  }
  if (best_seed > 0) v.speedup_vs_best_seed = best_seed / rec.makespan_us;
  if (best_seed > 0 && lowest_ideal > 0) v.seed_headroom = best_seed / lowest_ideal;
  if (rec.ideal_us() > 0) v.over_ideal = rec.makespan_us / rec.ideal_us() - 1;
  return v;
}

}  // namespace

PredictionReport build_prediction_report(const SuiteResults& results, const sim::CostModel& cost) {
  PredictionReport report;
  report.device = results.device;
  report.source = results.source;
  report.created = results.created;
  report.cost_model = cost.device;
  report.sms = results.sms;
  report.notes = results.notes;
  for (const SuiteRunResult& run : results.runs) {
    ReportRow row;
    row.run = &run;
    const Trace predicted = sim::replay(run.workload, cost);
    row.predicted_us = sim::compute_metrics(predicted).makespan_us;
    // A GPU trace ends with the kernel's last tile: the combine of split tiles, a second kernel
    // after it, is not in its makespan, so the prediction it is held to leaves it out too.
    if (results.source == "gpu") row.predicted_us -= predicted.combine_us;
    row.error = (row.predicted_us - run.makespan_us) / run.makespan_us;
    report.rows.push_back(row);
  }
  report.errors = error_summaries(report.rows);
  std::vector<std::string> names;
  std::map<std::string, std::vector<const ReportRow*>> by_workload;
  for (const ReportRow& r : report.rows) {
    if (!by_workload.count(r.run->workload_name)) names.push_back(r.run->workload_name);
    by_workload[r.run->workload_name].push_back(&r);
  }
  for (const std::string& name : names)
    report.workloads.push_back(judge(name, by_workload[name], results.sms));
  return report;
}

namespace {

std::string pct(double x) {
  return fmt::format("{:+.1f} %", 100 * x);
}
std::string abs_pct(double x) {
  return fmt::format("{:.1f} %", 100 * x);
}
std::string times(double x) {
  return x > 0 ? fmt::format("{:.2f}x", x) : "-";
}
std::string config(const SuiteRunResult& r) {
  return fmt::format("{} @ {}", r.strategy, r.workload.num_ctas);
}
std::string checks(const SuiteRunResult& r) {
  if (r.unwritten_outputs) return fmt::format("{} outputs unwritten", r.unwritten_outputs);
  if (!r.schedule_problems.empty()) return "schedule differs";
  return "ok";
}

struct Section {
  std::string title, text;  // text: a paragraph above the table
  viz::Table table;
  std::vector<bool> numeric;
};

// Median of the speed-ups of the workloads `keep` selects (0 when none has the reference).
template <class Keep, class Get>
std::string median_of(const PredictionReport& r, Keep keep, Get get) {
  std::vector<double> xs;
  for (const WorkloadVerdict& v : r.workloads)
    if (keep(v) && get(v) > 0) xs.push_back(get(v));
  return xs.empty() ? "-" : fmt::format("{} ({} workloads)", times(sim::median(xs)), xs.size());
}

Section error_section(const PredictionReport& r) {
  Section errors{"Prediction error per strategy and CTA count",
                 "|predicted - measured| / measured makespan, over the workloads.",
                 {{"strategy", "C", "runs", "median |error|", "p90 |error|"}, {}},
                 {false, false, true, true, true}};
  for (const ErrorSummary& e : r.errors)
    errors.table.rows.push_back(
        {e.strategy, e.ctas, fmt::format("{}", e.runs), abs_pct(e.median_abs), abs_pct(e.p90_abs)});
  return errors;
}

Section best_section(const PredictionReport& r) {
  std::size_t matches = 0;
  for (const WorkloadVerdict& v : r.workloads) matches += v.recommended_is_best ? 1 : 0;
  Section best{
      "Predicted best against measured best",
      fmt::format("The predicted best (strategy @ C) is the measured best within {:g} % on "
                  "{} of {} workloads ({:.0f} %).",
                  100 * kBestTolerance, matches, r.workloads.size(),
                  r.workloads.empty() ? 0.0 : 100.0 * matches / r.workloads.size()),
      {{"workload", "measured best", "measured us", "predicted best", "its measured us",
        "within 2 %"},
       {}},
      {false, false, true, false, true, false}};
  for (const WorkloadVerdict& v : r.workloads)
    best.table.rows.push_back({v.workload, config(*v.measured_best->run),
                               fmt::format("{:.1f}", v.measured_best->run->makespan_us),
                               config(*v.recommended->run),
                               fmt::format("{:.1f}", v.recommended->run->makespan_us),
                               v.recommended_is_best ? "yes" : "no"});
  return best;
}

Section speed_section(const PredictionReport& r) {
  const auto all = [](const WorkloadVerdict&) { return true; };
  const auto causal = [](const WorkloadVerdict& v) { return v.causal; };
  const auto ragged = [](const WorkloadVerdict& v) { return v.ragged; };
  const auto vs_default = [](const WorkloadVerdict& v) { return v.speedup_vs_default; };
  const auto vs_seed = [](const WorkloadVerdict& v) { return v.speedup_vs_best_seed; };
  const auto headroom = [](const WorkloadVerdict& v) { return v.seed_headroom; };
  std::size_t room_for_1_1 = 0, with_headroom = 0;
  for (const WorkloadVerdict& v : r.workloads) {
    with_headroom += v.seed_headroom > 0 ? 1 : 0;
    room_for_1_1 += v.seed_headroom >= 1.1 ? 1 : 0;
  }
  Section speed{
      "Speed-up of the recommended strategy (measured)",
      fmt::format(
          "Recommended = the predicted best. Over the seed's DEFAULT ({} at C = {}), median: all "
          "{}, causal {}, ragged {}. Over the best seed strategy at the same C, median: all {}, "
          "causal {}, ragged {}. Ideal bound = the run's measured tile time / the slots that run "
          "at once. Headroom = the best seed strategy's time over the lowest ideal bound of the "
          "workload's runs at that C, the most any strategy could gain over it: median all {}, "
          "causal {}, ragged {}; {} of {} workloads have room for 1.1x.",
          kSeedDefaultStrategy, r.sms, median_of(r, all, vs_default),
          median_of(r, causal, vs_default), median_of(r, ragged, vs_default),
          median_of(r, all, vs_seed), median_of(r, causal, vs_seed), median_of(r, ragged, vs_seed),
          median_of(r, all, headroom), median_of(r, causal, headroom),
          median_of(r, ragged, headroom), room_for_1_1, with_headroom),
      {{"workload", "causal", "ragged", "recommended", fmt::format("vs DEFAULT @ {}", r.sms),
        "vs best seed, same C", "over ideal", "headroom over best seed"},
       {}},
      {false, false, false, false, true, true, true, true}};
  for (const WorkloadVerdict& v : r.workloads)
    speed.table.rows.push_back({v.workload, v.causal ? "yes" : "no", v.ragged ? "yes" : "no",
                                config(*v.recommended->run), times(v.speedup_vs_default),
                                times(v.speedup_vs_best_seed), pct(v.over_ideal),
                                times(v.seed_headroom)});
  return speed;
}

Section runs_section(const PredictionReport& r) {
  Section runs{
      "Every run",
      "Measured: the median of the repeats (trace makespan). C of a transient run: the "
      "resident CTAs.",
      {{"workload", "strategy", "C", "measured us", "predicted us", "error", "checks"}, {}},
      {false, false, true, true, true, true, false}};
  for (const ReportRow& row : r.rows)
    runs.table.rows.push_back(
        {row.run->workload_name, row.run->strategy, fmt::format("{}", row.run->workload.num_ctas),
         fmt::format("{:.1f}", row.run->makespan_us), fmt::format("{:.1f}", row.predicted_us),
         pct(row.error), checks(*row.run)});
  return runs;
}

std::vector<Section> sections(const PredictionReport& r) {
  return {error_section(r), best_section(r), speed_section(r), runs_section(r)};
}

std::string header_text(const PredictionReport& r) {
  std::string text = fmt::format(
      "Measured on {} ({} SMs, source \"{}\", {}); predicted with cost model '{}'. {} runs of {} "
      "workloads.",
      r.device, r.sms, r.source, r.created, r.cost_model, r.rows.size(), r.workloads.size());
  for (const std::string& note : r.notes) text += " Note: " + note + ".";
  return text;
}

}  // namespace

ReportFiles render_prediction_report(const PredictionReport& r) {
  std::vector<viz::ScatterPoint> points;
  for (const ReportRow& row : r.rows)
    points.push_back(
        {row.run->makespan_us, row.predicted_us, row.run->strategy,
         fmt::format("{} {} C = {}: measured {:.1f} us, predicted {:.1f} us ({})",
                     row.run->workload_name, row.run->strategy, row.run->workload.num_ctas,
                     row.run->makespan_us, row.predicted_us, pct(row.error))});
  ReportFiles files;
  files.svg = viz::render_scatter_svg(
      points, {"Makespan: measured against predicted", "measured us", "predicted us", 0.05});

  const std::vector<Section> parts = sections(r);
  files.markdown = "# Prediction report\n\n" + header_text(r) +
                   "\n\n![measured against predicted makespan](scatter.svg)\n";
  files.html = viz::html_page_start("tilesched prediction report") +
               "<h1>Prediction report</h1>\n<p>" + viz::xml_escape(header_text(r)) + "</p>\n" +
               files.svg;
  for (const Section& s : parts) {
    files.markdown += fmt::format("\n## {}\n\n{}\n\n{}", s.title, s.text,
                                  viz::markdown_table(s.table, s.numeric));
    files.html += fmt::format("<h2>{}</h2>\n<p>{}</p>\n{}", viz::xml_escape(s.title),
                              viz::xml_escape(s.text), viz::html_table(s.table, s.numeric));
  }
  files.html += "</body>\n</html>\n";
  return files;
}

}  // namespace tilesched::cli
