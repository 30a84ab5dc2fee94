#include "viz/svg_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "viz/describe.hpp"
#include "viz/metrics_table.hpp"
#include "viz/xml_escape.hpp"

namespace tilesched::viz {
namespace {

// Geometry of one chart, in SVG pixels.
constexpr double kLeft = 76;  // room for "CTA 131" labels
constexpr double kRight = 28;
constexpr double kPlotWidth = 1120;  // wide enough that a 1% difference is a visible pixel step
constexpr double kLegendItemWidth = 84;
constexpr double kLegendRowHeight = 16;
constexpr std::size_t kMaxLegendItems = 48;  // more categories than this are not told apart anyway
constexpr double kMinLabelSpacing = 11;      // px between CTA labels so text never overlaps

double makespan_of(const Trace& t) {
  double m = 0;
  for (const TraceEvent& e : t.events) m = std::max(m, e.end_us);
  return m;
}

u32 row_count(const Trace& t) {
  u32 rows = t.launched_ctas;
  for (const TraceEvent& e : t.events) rows = std::max(rows, e.cta + 1);
  return std::max(rows, 1u);
}

// Row height: comfortable for a few CTAs, 132 CTAs in about 900 px, and very large transient
// grids capped at about 2400 px (rows then get thinner than a pixel but stay visible as a band).
double row_height(u32 rows) {
  const double fit = 900.0 / rows;
  const double floor = std::min(6.0, 2400.0 / rows);
  return std::clamp(fit, floor, 18.0);
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks.
double tick_step(double extent, int target) {
  if (extent <= 0) return 1;
  const double raw = extent / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / power;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * power;
}

// Label every k-th CTA row, k in 1, 2, 5, 10, 20, 50, ... so labels never overlap.
std::uint64_t label_every(double row_h) {
  for (std::uint64_t base = 1; base < (1ull << 40); base *= 10)
    for (const std::uint64_t m : {1u, 2u, 5u})
      if (double(base * m) * row_h >= kMinLabelSpacing) return base * m;
  return 1ull << 40;
}

std::string tick_label(double us, double step) {
  if (step >= 1) return fmt::format("{:.0f}", us);
  if (step >= 0.1) return fmt::format("{:.1f}", us);
  return fmt::format("{:.2f}", us);
}

void draw_axis(std::string& svg, double y, double extent, double scale, bool labels_above) {
  const double step = tick_step(extent, 10);
  svg += fmt::format(R"(<line class="axis" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                     kLeft, y, kLeft + extent * scale, y);
  svg += '\n';
  for (double t = 0; t <= extent * (1 + 1e-9); t += step) {
    const double x = kLeft + t * scale;
    const double tick_end = labels_above ? y - 4 : y + 4;
    const double text_y = labels_above ? y - 7 : y + 15;
    svg += fmt::format(R"(<line class="axis" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
                       R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
                       x, y, x, tick_end, x, text_y, tick_label(t, step));
    svg += '\n';
  }
}

const char* kPageStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px 0; }
h2 { font-size: 16px; margin: 28px 0 4px 0; }
p.workload { margin: 0 0 12px 0; color: #555; }
table.metrics { border-collapse: collapse; margin: 0 0 16px 0; font-size: 13px; }
table.metrics td, table.metrics th { padding: 2px 12px 2px 0; text-align: left; }
table.metrics th { color: #555; font-weight: normal; }
p.note { color: #777; font-size: 12px; }
)";

}  // namespace

std::string render_gantt_svg(const Trace& trace, const ChartOptions& options) {
  const double makespan = makespan_of(trace);
  double extent = options.time_extent_us > 0 ? options.time_extent_us : makespan;
  // An empty trace still gets an axis; a non-finite time (hand-edited file) must not hang the
  // tick loop.
  if (!(extent > 0) || !std::isfinite(extent)) extent = 1;
  const double scale = kPlotWidth / extent;
  const u32 rows = row_count(trace);
  const double row_h = row_height(rows);

  // Categories actually present, for the legend.
  std::map<u32, std::size_t> categories;
  for (const TraceEvent& e : trace.events) ++categories[color_key(e, options.color_by)];
  const std::size_t legend_items = std::min(categories.size(), kMaxLegendItems);
  const auto per_legend_row = static_cast<std::size_t>((kLeft + kPlotWidth) / kLegendItemWidth);
  const std::size_t legend_rows =
      (legend_items + (categories.size() > kMaxLegendItems ? 1 : 0) + per_legend_row - 1) /
      per_legend_row;

  const double title_y = 18;
  const double legend_top = 30;
  const double plot_top = legend_top + legend_rows * kLegendRowHeight + 28;
  const double plot_height = rows * row_h;
  const double width = kLeft + kPlotWidth + kRight;
  const double height = plot_top + plot_height + 44;

  std::string svg;
  svg.reserve(256 * trace.events.size() + 4096);
  svg += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" )"
                     R"(viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="11">)",
                     width, height, width, height);
  svg += '\n';
  // Thin white outlines separate back-to-back tiles; on hair-thin rows they would hide the fill.
  svg += fmt::format(
      "<style>.tile{{stroke:#ffffff;stroke-width:{}}} .tile:hover{{stroke:#000000;"
      "stroke-width:1}} .axis{{stroke:#555555;stroke-width:1}} .grid{{stroke:#dddddd;"
      "stroke-width:1}} .row{{fill:#f4f4f4}} .tick{{fill:#444444}} "
      ".label{{fill:#333333}}</style>\n",
      row_h >= 4 ? "0.5" : "0");
  const std::string title = options.title.empty() ? describe_trace(trace) : options.title;
  svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}" font-size="14" )"
                     R"(font-weight="bold">{}</text>)",
                     kLeft, title_y, xml_escape(title));
  svg += '\n';

  // Legend: one swatch per category.
  std::size_t item = 0;
  for (const auto& [key, count] : categories) {
    if (item == kMaxLegendItems) break;
    const double x = 8 + (item % per_legend_row) * kLegendItemWidth;
    const double y = legend_top + (item / per_legend_row) * kLegendRowHeight;
    svg += fmt::format(
        R"(<rect class="legend" x="{:.0f}" y="{:.0f}" width="10" height="10" fill="{}">)"
        R"(<title>{} {}: {} tiles</title></rect>)"
        R"(<text class="label" x="{:.0f}" y="{:.0f}">{} {}</text>)",
        x, y, to_hex(category_color(key)), category_name(options.color_by), key, count, x + 14,
        y + 9, category_name(options.color_by), key);
    svg += '\n';
    ++item;
  }
  if (categories.size() > kMaxLegendItems) {
    const double x = 8 + (item % per_legend_row) * kLegendItemWidth;
    const double y = legend_top + (item / per_legend_row) * kLegendRowHeight;
    svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}">+{} more</text>)", x, y + 9,
                       categories.size() - kMaxLegendItems);
    svg += '\n';
  }

  // Alternate row shading, vertical grid lines and CTA labels.
  if (row_h >= 3) {
    for (std::uint64_t r = 1; r < rows; r += 2)
      svg +=
          fmt::format(R"(<rect class="row" x="{:.0f}" y="{:.2f}" width="{:.0f}" height="{:.2f}"/>)"
                      "\n",
                      kLeft, plot_top + r * row_h, extent * scale, row_h);
  }
  const double step = tick_step(extent, 10);
  for (double t = step; t <= extent * (1 + 1e-9); t += step)
    svg += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
                       "\n",
                       kLeft + t * scale, plot_top, kLeft + t * scale, plot_top + plot_height);
  const std::uint64_t every = label_every(row_h);
  for (std::uint64_t r = 0; r < rows; r += every)
    svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.2f}" text-anchor="end" )"
                       R"(dominant-baseline="middle">CTA {}</text>)"
                       "\n",
                       kLeft - 6, plot_top + (r + 0.5) * row_h, r);

  // The tiles. A zero-length tile (no rows to write) still gets a sliver so it can be found.
  const double pad = row_h >= 6 ? 1.0 : 0.0;
  svg += "<g>\n";
  for (const TraceEvent& e : trace.events) {
    const double x = kLeft + e.start_us * scale;
    const double w = std::max((e.end_us - e.start_us) * scale, 0.6);
    const double y = plot_top + e.cta * row_h + pad;
    svg += fmt::format(
        R"(<rect class="tile" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">)"
        "<title>{}</title></rect>\n",
        x, y, w, std::max(row_h - 2 * pad, 0.2),
        to_hex(category_color(color_key(e, options.color_by))), xml_escape(describe_event(e)));
  }
  svg += "</g>\n";

  // Axes: at the bottom, and repeated on top when the chart is too tall to see both ends at once.
  if (rows > 40) draw_axis(svg, plot_top - 2, extent, scale, true);
  draw_axis(svg, plot_top + plot_height + 2, extent, scale, false);
  svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}" text-anchor="middle">)"
                     "time (µs)</text>\n",
                     kLeft + kPlotWidth / 2, plot_top + plot_height + 36);
  svg += "</svg>\n";
  return svg;
}

namespace {

std::string metrics_html(const sim::Metrics& metrics) {
  std::string html = "<table class=\"metrics\">\n";
  for (const auto& [name, value] : metric_rows(metrics))
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(name), xml_escape(value));
  html += "</table>\n";
  return html;
}

std::string page_start(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n"
      "<style>{}</style>\n</head>\n<body>\n",
      xml_escape(title), kPageStyle);
}

const char* kHoverNote =
    "<p class=\"note\">One row per CTA, one box per tile, time left to right. Hover a box for the "
    "tile's index, prompt, head, offset, KV blocks and times.</p>\n";

}  // namespace

std::string render_schedule_html(const Trace& trace, const sim::Metrics& metrics,
                                 const ChartOptions& options) {
  const std::string strategy = strategy_name(trace.workload);
  std::string html = page_start(fmt::format("tilesched: {}", strategy));
  html += fmt::format("<h1>tilesched schedule: {}</h1>\n", xml_escape(strategy));
  html +=
      fmt::format("<p class=\"workload\">{}<br/>{}</p>\n",
                  xml_escape(describe_workload(trace.workload)), xml_escape(describe_trace(trace)));
  html += metrics_html(metrics);
  html += kHoverNote;
  html += render_gantt_svg(trace, options);
  html += "</body>\n</html>\n";
  return html;
}

std::string render_comparison_html(const std::vector<ChartSection>& sections, ColorBy color_by) {
  double extent = 0;
  for (const ChartSection& s : sections)
    if (s.trace) extent = std::max(extent, makespan_of(*s.trace));
  std::string html = page_start("tilesched: strategy comparison");
  html += "<h1>tilesched: every strategy on one workload</h1>\n";
  if (!sections.empty() && sections.front().trace)
    html += fmt::format("<p class=\"workload\">{}</p>\n",
                        xml_escape(describe_workload(sections.front().trace->workload)));
  html += "<p class=\"note\">All charts share one time axis.</p>\n";
  html += kHoverNote;
  for (const ChartSection& s : sections) {
    if (!s.trace) continue;
    html += fmt::format("<h2>{}</h2>\n", xml_escape(s.name));
    html += metrics_html(s.metrics);
    ChartOptions options;
    options.color_by = color_by;
    options.time_extent_us = extent;
    options.title = describe_trace(*s.trace);
    html += render_gantt_svg(*s.trace, options);
  }
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace tilesched::viz
