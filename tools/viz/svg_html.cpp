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
table { border-collapse: collapse; font-size: 13px; margin: 0 0 12px 0; }
td, th { padding: 2px 10px 2px 0; text-align: left; }
td.num { text-align: right; }
)";

// Where everything of one chart goes, decided before drawing.
struct ChartLayout {
  double extent = 1;  // µs at the right end of the time axis
  double scale = 1;   // px per µs
  u32 rows = 1;       // CTA rows
  double row_h = 1;
  std::map<u32, std::size_t> categories;  // colour category -> tiles, for the legend
  std::size_t per_legend_row = 1;
  double plot_top = 0, plot_height = 0;
  double width = 0, height = 0;

  double x_of(double us) const { return kLeft + us * scale; }
};

constexpr double kTitleY = 18;
constexpr double kLegendTop = 30;

ChartLayout chart_layout(const Trace& trace, const ChartOptions& options) {
  ChartLayout l;
  l.extent = options.time_extent_us > 0 ? options.time_extent_us : makespan_of(trace);
  // An empty trace still gets an axis; a non-finite time (hand-edited file) must not hang the
  // tick loop.
  if (!(l.extent > 0) || !std::isfinite(l.extent)) l.extent = 1;
  l.scale = kPlotWidth / l.extent;
  l.rows = row_count(trace);
  l.row_h = row_height(l.rows);
  for (const TraceEvent& e : trace.events) ++l.categories[color_key(e, options.color_by)];
  l.per_legend_row = static_cast<std::size_t>((kLeft + kPlotWidth) / kLegendItemWidth);
  // The legend's entries: a swatch per category up to kMaxLegendItems, then "+N more".
  const std::size_t legend_entries = std::min(l.categories.size(), kMaxLegendItems + 1);
  const std::size_t legend_rows = (legend_entries + l.per_legend_row - 1) / l.per_legend_row;
  l.plot_top = kLegendTop + legend_rows * kLegendRowHeight + 28;
  l.plot_height = l.rows * l.row_h;
  l.width = kLeft + kPlotWidth + kRight;
  l.height = l.plot_top + l.plot_height + 44;
  return l;
}

void draw_header(std::string& svg, const ChartLayout& l, const std::string& title) {
  svg += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" )"
                     R"(viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="11">)",
                     l.width, l.height, l.width, l.height);
  svg += '\n';
  // Thin white outlines separate back-to-back tiles; on hair-thin rows they would hide the fill.
  svg += fmt::format(
      "<style>.tile{{stroke:#ffffff;stroke-width:{}}} .tile:hover{{stroke:#000000;"
      "stroke-width:1}} .axis{{stroke:#555555;stroke-width:1}} .grid{{stroke:#dddddd;"
      "stroke-width:1}} .row{{fill:#f4f4f4}} .tick{{fill:#444444}} "
      ".label{{fill:#333333}}</style>\n",
      l.row_h >= 4 ? "0.5" : "0");
  svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}" font-size="14" )"
                     R"(font-weight="bold">{}</text>)",
                     kLeft, kTitleY, xml_escape(title));
  svg += '\n';
}

// One swatch per category, then "+N more" when there are too many to tell apart.
void draw_legend(std::string& svg, const ChartLayout& l, ColorBy color_by) {
  const auto at = [&](std::size_t item) {
    return std::make_pair(8 + (item % l.per_legend_row) * kLegendItemWidth,
                          kLegendTop + (item / l.per_legend_row) * kLegendRowHeight);
  };
  std::size_t item = 0;
  for (const auto& [key, count] : l.categories) {
    if (item == kMaxLegendItems) break;
    const auto [x, y] = at(item++);
    svg += fmt::format(
        R"(<rect class="legend" x="{:.0f}" y="{:.0f}" width="10" height="10" fill="{}">)"
        R"(<title>{} {}: {} tiles</title></rect>)"
        R"(<text class="label" x="{:.0f}" y="{:.0f}">{} {}</text>)"
        "\n",
        x, y, to_hex(category_color(key)), category_name(color_by), key, count, x + 14, y + 9,
        category_name(color_by), key);
  }
  if (l.categories.size() > kMaxLegendItems) {
    const auto [x, y] = at(item);
    svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}">+{} more</text>)"
                       "\n",
                       x, y + 9, l.categories.size() - kMaxLegendItems);
  }
}

// Alternate row shading, vertical grid lines and CTA labels.
void draw_background(std::string& svg, const ChartLayout& l) {
  if (l.row_h >= 3) {
    for (std::uint64_t r = 1; r < l.rows; r += 2)
      svg +=
          fmt::format(R"(<rect class="row" x="{:.0f}" y="{:.2f}" width="{:.0f}" height="{:.2f}"/>)"
                      "\n",
                      kLeft, l.plot_top + r * l.row_h, l.extent * l.scale, l.row_h);
  }
  const double step = tick_step(l.extent, 10);
  for (double t = step; t <= l.extent * (1 + 1e-9); t += step)
    svg += fmt::format(R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
                       "\n",
                       l.x_of(t), l.plot_top, l.x_of(t), l.plot_top + l.plot_height);
  const std::uint64_t every = label_every(l.row_h);
  for (std::uint64_t r = 0; r < l.rows; r += every)
    svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.2f}" text-anchor="end" )"
                       R"(dominant-baseline="middle">CTA {}</text>)"
                       "\n",
                       kLeft - 6, l.plot_top + (r + 0.5) * l.row_h, r);
}

// One <rect class="tile"> per event, its tooltip describing the tile. A zero-length tile (no
// rows to write) still gets a sliver so it can be found.
void draw_tiles(std::string& svg, const Trace& trace, const ChartLayout& l, ColorBy color_by) {
  const double pad = l.row_h >= 6 ? 1.0 : 0.0;
  svg += "<g>\n";
  for (const TraceEvent& e : trace.events) {
    svg += fmt::format(
        R"(<rect class="tile" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}">)"
        "<title>{}</title></rect>\n",
        l.x_of(e.start_us), l.plot_top + e.cta * l.row_h + pad,
        std::max((e.end_us - e.start_us) * l.scale, 0.6), std::max(l.row_h - 2 * pad, 0.2),
        to_hex(category_color(color_key(e, color_by))), xml_escape(describe_event(e)));
  }
  svg += "</g>\n";
}

// At the bottom, and repeated on top when the chart is too tall to see both ends at once.
void draw_time_axes(std::string& svg, const ChartLayout& l) {
  if (l.rows > 40) draw_axis(svg, l.plot_top - 2, l.extent, l.scale, true);
  draw_axis(svg, l.plot_top + l.plot_height + 2, l.extent, l.scale, false);
  svg += fmt::format(R"(<text class="label" x="{:.0f}" y="{:.0f}" text-anchor="middle">)"
                     "time (µs)</text>\n",
                     kLeft + kPlotWidth / 2, l.plot_top + l.plot_height + 36);
}

}  // namespace

std::string render_gantt_svg(const Trace& trace, const ChartOptions& options) {
  const ChartLayout layout = chart_layout(trace, options);
  std::string svg;
  svg.reserve(256 * trace.events.size() + 4096);
  draw_header(svg, layout, options.title.empty() ? describe_trace(trace) : options.title);
  draw_legend(svg, layout, options.color_by);
  draw_background(svg, layout);
  draw_tiles(svg, trace, layout, options.color_by);
  draw_time_axes(svg, layout);
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

const char* kHoverNote =
    "<p class=\"note\">One row per CTA, one box per tile, time left to right. Hover a box for the "
    "tile's index, prompt, head, offset, KV blocks and times.</p>\n";

}  // namespace

std::string html_page_start(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n"
      "<style>{}</style>\n</head>\n<body>\n",
      xml_escape(title), kPageStyle);
}

std::string render_schedule_html(const Trace& trace, const sim::Metrics& metrics,
                                 const ChartOptions& options) {
  const std::string strategy = strategy_name(trace.workload);
  std::string html = html_page_start(fmt::format("tilesched: {}", strategy));
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
  std::string html = html_page_start("tilesched: strategy comparison");
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
