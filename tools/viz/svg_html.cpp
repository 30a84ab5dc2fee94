#include "viz/svg_html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "tilesched/sim/cost_model.hpp"
#include "viz/descriptions.hpp"
#include "viz/metrics_table.hpp"
#include "viz/ranking.hpp"
#include "viz/xml_escape.hpp"

namespace tilesched::viz {
namespace {

using sim::print_to;
using sim::TextSink;

// Geometry of one chart, in SVG pixels.
constexpr double kLeft = 76;  // room for "CTA 131" labels
constexpr double kRight = 28;
constexpr double kPlotWidth = 1120;  // wide enough that a 1% difference is a visible pixel step
constexpr double kLegendItemWidth = 84;
constexpr double kLegendRowHeight = 16;
constexpr std::size_t kMaxLegendItems = 48;  // more categories than this are not told apart anyway
constexpr double kMinLabelSpacing = 11;      // px between row labels so text never overlaps
constexpr double kTitleY = 18;
constexpr double kLegendTop = 30;
// Rows beyond this are grouped into bands of several units each: a 16384-CTA transient trace
// without SM ids still fits in about 2400 px, and the shading grid stays bounded.
constexpr std::uint64_t kMaxDrawnRows = 1200;
// Shading cells (rows x columns) at most: above it the columns widen from one pixel to 2, 4, ...
// With kMaxBoxes this keeps a page under about 20 MB whatever the trace.
constexpr std::uint64_t kMaxShadeCells = 300000;
constexpr int kShadeLevels = 8;  // busy fraction in eighths
const char* const kShadeColor = "#2f4b7c";

double makespan_of(const Trace& t) {
  double m = 0;
  for (const TraceEvent& e : t.events) m = std::max(m, e.end_us);
  return m;
}

// The combine that finishes a splitting schedule's tiles after the kernel (Trace::combine_us),
// when it is a finite positive time; 0 otherwise.
double combine_of(const Trace& t) {
  return std::isfinite(t.combine_us) && t.combine_us > 0 ? t.combine_us : 0.0;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `target` ticks.
double tick_step(double extent, int target) {
  if (extent <= 0) return 1;
  const double raw = extent / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double m = raw / power;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * power;
}

// Label every k-th row, k in 1, 2, 5, 10, 20, 50, ... so labels never overlap.
std::uint64_t label_every(double row_h) {
  for (std::uint64_t base = 1; base < (1ull << 40); base *= 10)
    for (const std::uint64_t m : {1u, 2u, 5u})
      if (double(base * m) * row_h >= kMinLabelSpacing) return base * m;
  return 1ull << 40;
}

// The axis counts in µs, ms or s, whichever keeps its numbers short.
struct TimeUnit {
  const char* name;
  double us;  // microseconds per unit
};

TimeUnit time_unit_for(double extent_us) {
  if (extent_us >= 1e6) return {"s", 1e6};
  if (extent_us >= 1e3) return {"ms", 1e3};
  return {"µs", 1};
}

std::string tick_label(double value, double step) {
  if (step >= 1) return fmt::format("{:.0f}", value);
  if (step >= 0.1) return fmt::format("{:.1f}", value);
  if (step >= 0.01) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3g}", value);
}

const char* kPageStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px 0; }
h2 { font-size: 16px; margin: 28px 0 4px 0; }
p.workload { margin: 0 0 12px 0; color: #555; }
table.metrics, table.ranking { border-collapse: collapse; margin: 0 0 16px 0; font-size: 13px; }
table.metrics td, table.metrics th { padding: 2px 12px 2px 0; text-align: left; }
table.metrics th { color: #555; font-weight: normal; }
table.ranking td, table.ranking th { padding: 2px 10px; text-align: right; border-bottom: 1px solid #eee; }
table.ranking td:nth-child(-n+2), table.ranking th:nth-child(-n+2) { text-align: left; padding-left: 0; }
table.ranking th { color: #555; font-weight: normal; }
p.note { color: #777; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 0 0 12px 0; }
td, th { padding: 2px 10px 2px 0; text-align: left; }
td.num { text-align: right; }
)";

// Where everything of one chart goes, decided before drawing.
struct ChartLayout {
  double begin = 0;       // µs at the left end of the time axis
  bool windowed = false;  // begin > 0: tiles that end before it are left out
  double extent = 1;      // µs from the left end of the time axis to its right end
  double scale = 1;       // px per µs
  TimeUnit time{"µs", 1};
  bool per_slot = false;         // rows are slots/SMs (sm_id), not CTAs
  const char* row_name = "CTA";  // "CTA", "slot" or "SM"
  std::uint64_t units = 1;       // CTAs or slots/SMs
  std::uint64_t units_per_row = 1;
  std::uint64_t rows = 1;  // drawn rows
  double row_h = 1;
  std::map<u32, std::size_t> categories;  // colour category -> boxed tiles, for the legend
  std::size_t per_legend_row = 1;
  std::size_t legend_entries = 0;
  double plot_top = 0, plot_height = 0;
  double width = 0, height = 0;
  // Tiles at least this many px wide are boxes, the others shaded (0: every tile is a box;
  // infinity: none is).
  double min_box_px = 0;
  bool shading = false;  // some tile is shaded
  double cell_px = 1;    // width of a shading column
  bool outlines = false;

  double x_of(double us) const { return kLeft + (us - begin) * scale; }
  // Whether a tile is drawn: every tile of a chart from 0, whatever its times (a hand-edited trace
  // may hold negative ones); in a window, those that end after its start.
  bool in_window(const TraceEvent& e) const { return !windowed || e.end_us > begin; }
  // The part of a tile inside the axis.
  double visible_us(const TraceEvent& e) const {
    if (!windowed) return sim::busy_us(e);
    return std::min(e.end_us, begin + extent) - std::max(e.start_us, begin);
  }
  std::uint64_t unit_of(const TraceEvent& e) const {
    return per_slot ? std::uint64_t(std::max(e.sm_id, 0)) : std::uint64_t(e.cta);
  }
  std::uint64_t row_of(const TraceEvent& e) const {
    return std::min(unit_of(e) / units_per_row, rows - 1);
  }
  double width_px(const TraceEvent& e) const {
    const double w = visible_us(e) * scale;
    return std::isfinite(w) ? w : kPlotWidth;
  }
};

// Row height: comfortable for a few rows, 132 rows in about 900 px, and many rows capped at
// about 2400 px.
double row_height(std::uint64_t rows) {
  const double fit = 900.0 / double(rows);
  const double floor = std::min(6.0, 2400.0 / double(rows));
  return std::clamp(fit, floor, 18.0);
}

// Every execution unit gets a row, idle ones too (their emptiness is the point); an event past
// the count a file claims still gets one.
std::uint64_t unit_count(const Trace& t, const ChartLayout& l) {
  std::uint64_t n = l.per_slot ? std::min<std::uint64_t>(t.launched_ctas, t.workload.resident_ctas)
                               : std::uint64_t(t.launched_ctas);
  for (const TraceEvent& e : t.events) n = std::max(n, l.unit_of(e) + 1);
  return std::max<std::uint64_t>(n, 1);
}

// The summary-mode box threshold: every tile when they are few, else the widest tiles of at least
// kMinBoxPixels, at most kMaxBoxes of them.
double box_threshold(const Trace& trace, const ChartLayout& l, const ChartOptions& options) {
  if (options.detail == ChartDetail::Full) return 0;
  // A band holds several units whose boxes would overlap.
  if (l.units_per_row > 1) return std::numeric_limits<double>::infinity();
  const std::size_t max_boxes = options.max_boxes;
  std::size_t drawn = 0;
  for (const TraceEvent& e : trace.events) drawn += l.in_window(e) ? 1 : 0;
  if (drawn <= max_boxes) return 0;
  std::vector<double> wide;
  for (const TraceEvent& e : trace.events)
    if (l.in_window(e) && l.width_px(e) >= kMinBoxPixels) wide.push_back(l.width_px(e));
  if (wide.size() <= max_boxes) return kMinBoxPixels;
  std::nth_element(wide.begin(), wide.begin() + std::ptrdiff_t(max_boxes), wide.end(),
                   std::greater<double>());
  // Strictly wider than the first tile left out: at most max_boxes boxes, even with ties.
  return std::nextafter(wide[max_boxes], std::numeric_limits<double>::infinity());
}

// Whether a tile is drawn as a box (else it is shaded).
bool boxed(const ChartLayout& l, const TraceEvent& e) {
  return l.in_window(e) && l.width_px(e) >= l.min_box_px;
}

ChartLayout chart_layout(const Trace& trace, const ChartOptions& options) {
  ChartLayout l;
  l.begin = std::isfinite(options.time_begin_us) ? std::max(options.time_begin_us, 0.0) : 0.0;
  l.windowed = l.begin > 0;
  // A chart from 0 also shows the combine after the kernel.
  l.extent = options.time_extent_us > 0
                 ? options.time_extent_us
                 : makespan_of(trace) + (l.windowed ? 0.0 : combine_of(trace)) - l.begin;
  // An empty trace still gets an axis; a non-finite time (hand-edited file) must not hang the
  // tick loop.
  if (!(l.extent > 0) || !std::isfinite(l.extent)) l.extent = 1;
  l.scale = kPlotWidth / l.extent;
  l.time = time_unit_for(l.extent);
  const sim::ExecutionUnit unit = options.unit ? *options.unit : sim::execution_unit(trace);
  l.per_slot = unit == sim::ExecutionUnit::Slot;
  // A simulated transient trace numbers the replay's resident slots; a measured one, real SMs.
  l.row_name = !l.per_slot ? "CTA" : trace.source == "gpu" ? "SM" : "slot";
  l.units = unit_count(trace, l);
  l.units_per_row = (l.units + kMaxDrawnRows - 1) / kMaxDrawnRows;
  l.rows = (l.units + l.units_per_row - 1) / l.units_per_row;
  l.row_h = row_height(l.rows);

  l.min_box_px = box_threshold(trace, l, options);
  double box_px = 0;
  std::size_t boxes = 0;
  for (const TraceEvent& e : trace.events) {
    if (!l.in_window(e)) continue;
    if (boxed(l, e)) {
      // The legend names the colours that boxes show; shaded tiles have none.
      ++l.categories[color_key(e, options.color_by)];
      box_px += l.width_px(e);
      ++boxes;
    } else {
      l.shading = true;
    }
  }
  // Thin white outlines separate back-to-back boxes; on thin rows or boxes they would hide the
  // fill.
  l.outlines = l.row_h >= 4 && (boxes == 0 || box_px / double(boxes) >= 4);
  while (l.rows * std::uint64_t(kPlotWidth / l.cell_px) > kMaxShadeCells) l.cell_px *= 2;

  l.per_legend_row = static_cast<std::size_t>((kLeft + kPlotWidth) / kLegendItemWidth);
  // A swatch per category up to kMaxLegendItems, "+N more", and the shading when there is some.
  l.legend_entries = std::min(l.categories.size(), kMaxLegendItems + 1) + (l.shading ? 1 : 0);
  const std::size_t legend_rows = (l.legend_entries + l.per_legend_row - 1) / l.per_legend_row;
  l.plot_top = kLegendTop + legend_rows * kLegendRowHeight + 28;
  l.plot_height = l.rows * l.row_h;
  l.width = kLeft + kPlotWidth + kRight;
  l.height = l.plot_top + l.plot_height + 44;
  return l;
}

// The ticks of the time axis, in the axis' unit: multiples of one step from the axis' start to
// its end.
std::vector<double> axis_ticks(const ChartLayout& l, double& step) {
  const double begin = l.begin / l.time.us, end = (l.begin + l.extent) / l.time.us;
  step = tick_step(end - begin, 10);
  std::vector<double> ticks;
  for (double k = std::ceil(begin / step - 1e-9); k * step <= end + (end - begin) * 1e-9; ++k)
    ticks.push_back(k * step + 0.0);  // + 0.0: a tick at -0 is labelled 0
  return ticks;
}

void draw_axis(TextSink& out, const ChartLayout& l, double y, bool labels_above) {
  double step = 1;
  const std::vector<double> ticks = axis_ticks(l, step);
  print_to(out,
           R"(<line class="axis" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
           "\n",
           kLeft, y, kLeft + kPlotWidth, y);
  for (const double t : ticks) {
    const double x = l.x_of(t * l.time.us);
    const double tick_end = labels_above ? y - 4 : y + 4;
    const double text_y = labels_above ? y - 7 : y + 15;
    print_to(out,
             R"(<line class="axis" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
             R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)"
             "\n",
             x, y, x, tick_end, x, text_y, tick_label(t, step));
  }
}

// A chart's style rules ("a{...} b{...}") for its own <svg> only: inside an HTML page a <style>
// applies to the whole document, and the Gantt chart and the last wave's zoom outline their boxes
// differently.
std::string scoped_style(const char* svg_class, const std::string& rules) {
  std::string scoped;
  std::size_t from = 0;
  for (std::size_t end = rules.find('}'); end != std::string::npos;
       from = end + 1, end = rules.find('}', from)) {
    const std::size_t begin = rules.find_first_not_of(' ', from);
    scoped += fmt::format("{}svg.{} {}", scoped.empty() ? "" : " ", svg_class,
                          rules.substr(begin, end + 1 - begin));
  }
  return fmt::format("<style>{}</style>\n", scoped);
}

void open_svg(TextSink& out, const char* svg_class, double width, double height) {
  print_to(out,
           R"(<svg xmlns="http://www.w3.org/2000/svg" class="{}" width="{:.0f}" height="{:.0f}" )"
           R"(viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="11">)"
           "\n",
           svg_class, width, height, width, height);
}

void draw_header(TextSink& out, const ChartLayout& l, const std::string& title,
                 const char* svg_class) {
  open_svg(out, svg_class, l.width, l.height);
  std::string shade_levels;
  for (int level = 1; level <= kShadeLevels; ++level)
    shade_levels +=
        fmt::format(" .b{}{{fill-opacity:{:.3f}}}", level, double(level) / kShadeLevels);
  out.append(scoped_style(
      svg_class,
      fmt::format(".tile{{stroke:#ffffff;stroke-width:{}}} .tile:hover{{stroke:#000000;"
                  "stroke-width:1}} .shade{{fill:{}}}{} .axis{{stroke:#555555;stroke-width:1}} "
                  ".grid{{stroke:#dddddd;stroke-width:1}} .row{{fill:#f4f4f4}} "
                  ".tick{{fill:#444444}} .label{{fill:#333333}} "
                  ".piece-link{{fill:none;stroke-width:1.5;stroke-opacity:0.8}}",
                  l.outlines ? "0.5" : "0", kShadeColor, shade_levels)));
  print_to(out,
           R"(<text class="label" x="{:.0f}" y="{:.0f}" font-size="14" )"
           R"(font-weight="bold">{}</text>)"
           "\n",
           kLeft, kTitleY, xml_escape(title));
}

// One swatch per category, then "+N more" when there are too many to tell apart, then what the
// shading means.
void draw_legend(TextSink& out, const ChartLayout& l, ColorBy color_by) {
  const auto at = [&](std::size_t item) {
    return std::make_pair(8 + (item % l.per_legend_row) * kLegendItemWidth,
                          kLegendTop + (item / l.per_legend_row) * kLegendRowHeight);
  };
  std::size_t item = 0;
  for (const auto& [key, count] : l.categories) {
    if (item == kMaxLegendItems) break;
    const auto [x, y] = at(item++);
    print_to(out,
             R"(<rect class="legend" x="{:.0f}" y="{:.0f}" width="10" height="10" fill="{}">)"
             R"(<title>{} {}: {} tiles</title></rect>)"
             R"(<text class="label" x="{:.0f}" y="{:.0f}">{} {}</text>)"
             "\n",
             x, y, to_hex(category_color(key)), category_name(color_by), key, count, x + 14, y + 9,
             category_name(color_by), key);
  }
  if (l.categories.size() > kMaxLegendItems) {
    const auto [x, y] = at(item++);
    print_to(out,
             R"(<text class="label" x="{:.0f}" y="{:.0f}">+{} more</text>)"
             "\n",
             x, y + 9, l.categories.size() - kMaxLegendItems);
  }
  if (l.shading) {
    const auto [x, y] = at(item);
    const std::string why =
        std::isfinite(l.min_box_px)
            ? fmt::format("tiles narrower than {:.1f} px", std::max(l.min_box_px, kMinBoxPixels))
            : fmt::format("every tile (a row holds {} {}s)", l.units_per_row, l.row_name);
    print_to(out,
             R"(<rect class="shade b6" x="{:.0f}" y="{:.0f}" width="10" height="10">)"
             R"(<title>{}: summed per pixel column, darker where the row was busier</title>)"
             R"(</rect><text class="label" x="{:.0f}" y="{:.0f}">narrow tiles</text>)"
             "\n",
             x, y, why, x + 14, y + 9);
  }
}

// "CTA 12", or "CTA 1200-1209" for a band of several.
std::string row_label(const ChartLayout& l, std::uint64_t row) {
  const std::uint64_t first = row * l.units_per_row;
  if (l.units_per_row == 1) return fmt::format("{} {}", l.row_name, first);
  return fmt::format("{}s {}-{}", l.row_name, first,
                     std::min(first + l.units_per_row, l.units) - 1);
}

// Alternate row shading, vertical grid lines and row labels.
void draw_background(TextSink& out, const ChartLayout& l) {
  if (l.row_h >= 3) {
    for (std::uint64_t r = 1; r < l.rows; r += 2)
      print_to(out,
               R"(<rect class="row" x="{:.0f}" y="{:.2f}" width="{:.0f}" height="{:.2f}"/>)"
               "\n",
               kLeft, l.plot_top + r * l.row_h, kPlotWidth, l.row_h);
  }
  double step = 1;
  for (const double t : axis_ticks(l, step)) {
    if (t * l.time.us <= l.begin) continue;  // the axis' own start needs no grid line
    print_to(out,
             R"(<line class="grid" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
             "\n",
             l.x_of(t * l.time.us), l.plot_top, l.x_of(t * l.time.us), l.plot_top + l.plot_height);
  }
  const std::uint64_t every = label_every(l.row_h);
  for (std::uint64_t r = 0; r < l.rows; r += every)
    print_to(out,
             R"(<text class="label" x="{:.0f}" y="{:.2f}" text-anchor="end" )"
             R"(dominant-baseline="middle">{} {}</text>)"
             "\n",
             kLeft - 6, l.plot_top + (r + 0.5) * l.row_h, l.row_name, r * l.units_per_row);
}

// The tiles too narrow for a box, summed per row and pixel column: how many px of each cell
// some tile covered (units of one band add up).
struct Shading {
  std::size_t columns = 0;
  std::vector<float> covered;        // rows x columns
  std::vector<std::uint64_t> tiles;  // per row
  std::vector<double> busy_us;       // per row
};

Shading shade_narrow_tiles(const Trace& trace, const ChartLayout& l) {
  Shading s;
  s.columns = static_cast<std::size_t>(std::ceil(kPlotWidth / l.cell_px));
  s.covered.assign(l.rows * s.columns, 0.0f);
  s.tiles.assign(l.rows, 0);
  s.busy_us.assign(l.rows, 0.0);
  for (const TraceEvent& e : trace.events) {
    if (!l.in_window(e) || boxed(l, e)) continue;
    const std::uint64_t row = l.row_of(e);
    ++s.tiles[row];
    s.busy_us[row] += l.visible_us(e);
    // Clamped in double before converting: a hand-edited trace may hold negative times.
    const double x0 =
        std::clamp(((e.start_us - l.begin) * l.scale) / l.cell_px, 0.0, double(s.columns));
    double x1 = std::clamp(((e.end_us - l.begin) * l.scale) / l.cell_px, x0, double(s.columns));
    if (!std::isfinite(x0) || !std::isfinite(x1)) continue;
    // A tile of no duration still marks its cell, so that no tile disappears.
    if (x1 - x0 < 0.01) x1 = std::min(x0 + 0.01, double(s.columns));
    float* cells = &s.covered[row * s.columns];
    for (auto c = static_cast<std::size_t>(x0); c < s.columns && double(c) < x1; ++c)
      cells[c] += float(std::min(x1, double(c + 1)) - std::max(x0, double(c)));
  }
  return s;
}

// Each row with shaded tiles: a group whose tooltip gives the row's totals, holding one path per
// busy level, each a run of cells of that level.
void draw_shading(TextSink& out, const Trace& trace, const ChartLayout& l) {
  const Shading s = shade_narrow_tiles(trace, l);
  const double cell_w = l.cell_px;
  for (std::uint64_t row = 0; row < l.rows; ++row) {
    if (s.tiles[row] == 0) continue;
    const float* cells = &s.covered[row * s.columns];
    std::vector<int> level(s.columns, 0);
    for (std::size_t c = 0; c < s.columns; ++c) {
      const double fraction = double(cells[c]) / double(l.units_per_row);
      if (fraction > 0)
        level[c] = std::clamp(int(std::lround(fraction * kShadeLevels)), 1, kShadeLevels);
    }
    const double busy_fraction = s.busy_us[row] / (l.extent * double(l.units_per_row));
    print_to(out,
             "<g class=\"shade\"><title>{}: {} tiles shaded, busy {} us ({:.1f} % of {})</title>",
             row_label(l, row), s.tiles[row], format_us(s.busy_us[row]), 100.0 * busy_fraction,
             l.units_per_row == 1 ? "the chart's time" : "the band's time");
    const double y = l.plot_top + double(row) * l.row_h;
    const double h = std::max(l.row_h, 0.2);
    for (int shade = 1; shade <= kShadeLevels; ++shade) {
      std::string path;
      for (std::size_t c = 0; c < s.columns;) {
        if (level[c] != shade) {
          ++c;
          continue;
        }
        std::size_t end = c;
        while (end < s.columns && level[end] == shade) ++end;
        fmt::format_to(std::back_inserter(path), "M{:.1f} {:.2f}h{:.1f}v{:.2f}h-{:.1f}z",
                       kLeft + double(c) * cell_w, y, double(end - c) * cell_w, h,
                       double(end - c) * cell_w);
        c = end;
      }
      if (!path.empty()) print_to(out, "<path class=\"b{}\" d=\"{}\"/>", shade, path);
    }
    out.append("</g>\n");
  }
}

// Which piece of its tile an event processed, for the tiles a trace splits over several CTAs.
struct PieceOf {
  std::size_t number = 0;  // 1-based, in KV-block order
  std::size_t pieces = 0;
  u32 tile_blocks = 0;  // the whole tile's KV blocks
};

// The pieces of split tiles by event index (sim::processes_part): few, a last wave's worth, so a
// map. A tile is named by its place (prompt, head, offset), as trace diffs name it.
std::map<std::size_t, PieceOf> split_pieces(const Trace& trace) {
  std::map<std::tuple<u32, u32, u32>, std::vector<std::size_t>> by_tile;
  const Workload& w = trace.workload;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    // A hand-edited trace may name sequences its workload lacks.
    if (e.prompt_idx >= w.batch_size() || e.head_idx >= w.scheduled_heads()) continue;
    if (sim::processes_part(e, sim::whole_tile_cost(w, e)))
      by_tile[{e.prompt_idx, e.head_idx, e.prompt_offset}].push_back(i);
  }
  std::map<std::size_t, PieceOf> pieces;
  for (auto& [tile, events] : by_tile) {
    std::stable_sort(events.begin(), events.end(), [&](std::size_t a, std::size_t b) {
      return trace.events[a].kv_block_begin < trace.events[b].kv_block_begin;
    });
    const u32 blocks = sim::whole_tile_cost(w, trace.events[events.front()]).kv_blocks;
    for (std::size_t k = 0; k < events.size(); ++k)
      pieces[events[k]] = PieceOf{k + 1, events.size(), blocks};
  }
  return pieces;
}

std::string describe_piece(const TraceEvent& e, const PieceOf& p) {
  return fmt::format("piece {} of {} of tile idx {}: KV blocks {}-{} of {}\n", p.number, p.pieces,
                     e.linear_idx, e.kv_block_begin, e.kv_block_begin + e.kv_blocks - 1,
                     p.tile_blocks);
}

// One <rect class="tile"> per tile wide enough, its tooltip describing the tile. In summary mode
// with few tiles, and in full mode, that is every tile: a zero-length tile still gets a sliver so
// it can be found. A piece of a split tile has a dark dashed outline, and a line joins the boxed
// pieces of each tile, in the tile's colour.
void draw_boxes(TextSink& out, const Trace& trace, const ChartLayout& l, ColorBy color_by) {
  const double pad = l.row_h >= 6 ? 1.0 : 0.0;
  const std::map<std::size_t, PieceOf> pieces = split_pieces(trace);
  // Each split tile's colour and the centres of its boxed pieces.
  struct Link {
    std::string color;
    std::vector<std::pair<double, double>> centres;
  };
  std::map<std::tuple<u32, u32, u32>, Link> links;
  out.append("<g>\n");
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (!boxed(l, e)) continue;
    const double x = l.x_of(std::max(e.start_us, l.begin));
    const double y = l.plot_top + double(l.row_of(e)) * l.row_h + pad;
    const double width = std::max(l.width_px(e), 0.6), height = std::max(l.row_h - 2 * pad, 0.2);
    const auto piece = pieces.find(i);
    const bool is_piece = piece != pieces.end();
    const std::string color = to_hex(category_color(color_key(e, color_by)));
    print_to(out,
             R"(<rect class="tile" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" )"
             R"(fill="{}"{}><title>{}{}</title></rect>)"
             "\n",
             x, y, width, height, color,
             is_piece ? R"( style="stroke:#000000;stroke-width:1;stroke-dasharray:3 2")" : "",
             is_piece ? xml_escape(describe_piece(e, piece->second)) : "",
             xml_escape(describe_event(e)));
    if (is_piece) {
      Link& link = links[{e.prompt_idx, e.head_idx, e.prompt_offset}];
      link.color = color;
      link.centres.push_back({x + width / 2, y + height / 2});
    }
  }
  for (const auto& [tile, link] : links) {
    if (link.centres.size() < 2) continue;
    const auto& [prompt, head, offset] = tile;
    std::string points;
    for (const auto& [x, y] : link.centres) points += fmt::format("{:.1f},{:.1f} ", x, y);
    points.pop_back();
    print_to(out,
             R"(<polyline class="piece-link" points="{}" stroke="{}">)"
             R"(<title>tile (prompt {}, head {}, offset {}): {} pieces drawn</title></polyline>)"
             "\n",
             points, link.color, prompt, head, offset, link.centres.size());
  }
  out.append("</g>\n");
}

// At the bottom, and repeated on top when the chart is too tall to see both ends at once.
// The combine, after the kernel's last tile, across every row: split tiles' partial results merged
// (predicted by the simulator; a measured trace has none).
void draw_combine(TextSink& out, const Trace& trace, const ChartLayout& l) {
  const double us = combine_of(trace);
  if (us == 0 || l.windowed) return;
  const double x = l.x_of(makespan_of(trace)), width = std::max(us * l.scale, 1.0);
  print_to(out,
           R"(<rect class="combine" x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" )"
           R"(fill="#9e9e9e" fill-opacity="0.45" stroke="#555555" stroke-dasharray="4 3">)"
           R"(<title>combine of the split tiles' partial results: {:.2f} us, after the )"
           R"(kernel's last tile at {:.2f} us</title></rect>)"
           "\n",
           x, l.plot_top, width, l.plot_height, us, makespan_of(trace));
  if (width >= 44)
    print_to(out,
             R"(<text class="label" x="{:.1f}" y="{:.1f}" text-anchor="middle">combine</text>)"
             "\n",
             x + width / 2, l.plot_top - 4);
}

void draw_time_axes(TextSink& out, const ChartLayout& l) {
  if (l.rows > 40) draw_axis(out, l, l.plot_top - 2, true);
  draw_axis(out, l, l.plot_top + l.plot_height + 2, false);
  print_to(out,
           R"(<text class="label" x="{:.0f}" y="{:.0f}" text-anchor="middle">)"
           "time ({})</text>\n",
           kLeft + kPlotWidth / 2, l.plot_top + l.plot_height + 36, l.time.name);
}

}  // namespace

void write_gantt_svg(TextSink& out, const Trace& trace, const ChartOptions& options) {
  const ChartLayout layout = chart_layout(trace, options);
  draw_header(out, layout, options.title.empty() ? describe_trace(trace) : options.title,
              options.svg_class.c_str());
  draw_legend(out, layout, options.color_by);
  draw_background(out, layout);
  if (layout.shading) draw_shading(out, trace, layout);
  draw_boxes(out, trace, layout, options.color_by);
  draw_combine(out, trace, layout);
  draw_time_axes(out, layout);
  out.append("</svg>\n");
}

std::string render_gantt_svg(const Trace& trace, const ChartOptions& options) {
  std::string svg;
  sim::StringSink sink(svg);
  write_gantt_svg(sink, trace, options);
  return svg;
}

namespace {

std::uint64_t unit_of(const TraceEvent& e, sim::ExecutionUnit unit) {
  return unit == sim::ExecutionUnit::Slot ? std::uint64_t(std::max(e.sm_id, 0))
                                          : std::uint64_t(e.cta);
}

// A trace's times as the busy chart and the last wave use them: clamped to [0, makespan].
double clamped(double us, double makespan) {
  return std::isfinite(us) ? std::clamp(us, 0.0, makespan) : 0.0;
}

}  // namespace

std::vector<double> busy_units_per_bin(const Trace& trace, std::size_t bins) {
  std::vector<double> busy(bins, 0.0);
  const double makespan = makespan_of(trace);
  if (bins == 0 || !(makespan > 0) || !std::isfinite(makespan)) return busy;
  const double width = makespan / double(bins);
  // Whole bins a tile covers are added through a difference array, so a long tile costs O(1).
  std::vector<double> whole(bins + 1, 0.0);
  for (const TraceEvent& e : trace.events) {
    const double start = clamped(e.start_us, makespan);
    const double end = std::max(clamped(e.end_us, makespan), start);
    if (end <= start) continue;
    const std::size_t first = std::min(std::size_t(start / width), bins - 1);
    const std::size_t last = std::min(std::size_t(end / width), bins - 1);
    if (first == last) {
      busy[first] += end - start;
      continue;
    }
    busy[first] += double(first + 1) * width - start;
    busy[last] += end - double(last) * width;
    whole[first + 1] += width;
    whole[last] -= width;
  }
  double running = 0;
  for (std::size_t b = 0; b < bins; ++b) {
    running += whole[b];
    busy[b] = (busy[b] + running) / width;
  }
  return busy;
}

LastWave last_wave(const Trace& trace, sim::ExecutionUnit unit) {
  LastWave wave;
  wave.end_us = makespan_of(trace);
  if (trace.events.empty() || !(wave.end_us > 0) || !std::isfinite(wave.end_us)) return wave;
  std::map<std::uint64_t, double> last_end;
  for (const TraceEvent& e : trace.events) {
    double& end = last_end[unit_of(e, unit)];
    end = std::max(end, clamped(e.end_us, wave.end_us));
  }
  wave.units = last_end.size();
  wave.begin_us = wave.end_us;
  for (const auto& [u, end] : last_end)
    if (end < wave.begin_us) {
      wave.begin_us = end;
      wave.first_idle_unit = u;
    }
  double busy = 0;
  for (const TraceEvent& e : trace.events) {
    const double start = std::max(clamped(e.start_us, wave.end_us), wave.begin_us);
    const double end = clamped(e.end_us, wave.end_us);
    if (end <= start) continue;
    ++wave.tiles;
    busy += end - start;
  }
  if (wave.end_us > wave.begin_us) wave.busy_units = busy / (wave.end_us - wave.begin_us);
  return wave;
}

namespace {

constexpr double kBusyPlotHeight = 150;
const char* const kBusyColor = "#4c78a8";
const char* const kLastWaveColor = "#e45756";

}  // namespace

void write_busy_svg(TextSink& out, const Trace& trace, const ChartOptions& options) {
  ChartLayout l = chart_layout(trace, options);
  const sim::ExecutionUnit unit = options.unit ? *options.unit : sim::execution_unit(trace);
  const std::vector<double> busy = busy_units_per_bin(trace, kBusyBins);
  const double top_value = std::max(double(l.units), *std::max_element(busy.begin(), busy.end()));
  l.plot_top = 40;
  l.plot_height = kBusyPlotHeight;
  l.height = l.plot_top + l.plot_height + 44;
  const double base = l.plot_top + l.plot_height;
  const auto y_of = [&](double units) { return base - units / top_value * l.plot_height; };
  const double bin_us = makespan_of(trace) / double(kBusyBins),
               bin_px = kPlotWidth / double(kBusyBins);

  open_svg(out, "busy", l.width, l.height);
  out.append(scoped_style(
      "busy", fmt::format(".axis{{stroke:#555555;stroke-width:1}} "
                          ".grid{{stroke:#dddddd;stroke-width:1}} .tick{{fill:#444444}} "
                          ".label{{fill:#333333}} .bin{{fill:#000000;fill-opacity:0}} "
                          ".bin:hover{{fill-opacity:0.08}} .busy-area{{fill:{};fill-opacity:0.55;"
                          "stroke:{};stroke-width:1}} .capacity{{stroke:#333333;stroke-width:1;"
                          "stroke-dasharray:4 3}} .wave{{fill:{};fill-opacity:0.12}}",
                          kBusyColor, kBusyColor, kLastWaveColor)));
  print_to(out,
           R"(<text class="label" x="{:.0f}" y="{:.0f}" font-size="14" font-weight="bold">)"
           "Busy {}s over time (mean of each {} us bin)</text>\n",
           kLeft, kTitleY, l.row_name, format_us(bin_us));
  // Horizontal grid with the counts, then the last wave, the busy area and the units launched.
  const double step = std::max(1.0, tick_step(top_value, 4));
  for (double v = 0; v <= top_value * (1 + 1e-9); v += step)
    print_to(out,
             R"(<line class="grid" x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/>)"
             R"(<text class="tick" x="{:.0f}" y="{:.1f}" text-anchor="end" )"
             R"(dominant-baseline="middle">{:.0f}</text>)"
             "\n",
             kLeft, y_of(v), kLeft + kPlotWidth, y_of(v), kLeft - 6, y_of(v), v);
  const LastWave wave = last_wave(trace, unit);
  if (wave.end_us > wave.begin_us)
    print_to(out,
             R"(<rect class="wave" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}">)"
             R"(<title>the last wave, zoomed below: {} us to {} us</title></rect>)"
             "\n",
             l.x_of(wave.begin_us), l.plot_top, (wave.end_us - wave.begin_us) * l.scale,
             l.plot_height, format_us(wave.begin_us), format_us(wave.end_us));
  std::string area = fmt::format("M{:.1f} {:.1f}", kLeft, base);
  for (std::size_t b = 0; b < busy.size(); ++b)
    fmt::format_to(std::back_inserter(area), "V{:.1f}H{:.1f}", y_of(busy[b]),
                   kLeft + double(b + 1) * bin_px);
  area += fmt::format("V{:.1f}Z", base);
  print_to(out, "<path class=\"busy-area\" d=\"{}\"/>\n", area);
  print_to(out,
           R"(<line class="capacity" x1="{:.0f}" y1="{:.1f}" x2="{:.0f}" y2="{:.1f}"/>)"
           R"(<text class="label" x="{:.0f}" y="{:.1f}" text-anchor="end">{} {}s</text>)"
           "\n",
           kLeft, y_of(double(l.units)), kLeft + kPlotWidth, y_of(double(l.units)),
           kLeft + kPlotWidth, y_of(double(l.units)) - 3, l.units, l.row_name);
  // A tooltip per bin, over the whole height so it is easy to hit.
  for (std::size_t b = 0; b < busy.size(); ++b)
    print_to(out,
             R"(<rect class="bin" x="{:.1f}" y="{:.0f}" width="{:.1f}" height="{:.0f}">)"
             R"(<title>{}-{} us: {:.1f} {}s busy on average</title></rect>)"
             "\n",
             kLeft + double(b) * bin_px, l.plot_top, bin_px, l.plot_height,
             format_us(double(b) * bin_us), format_us(double(b + 1) * bin_us), busy[b], l.row_name);
  draw_axis(out, l, base + 2, false);
  print_to(out,
           R"(<text class="label" x="{:.0f}" y="{:.0f}" text-anchor="middle">)"
           "time ({})</text>\n",
           kLeft + kPlotWidth / 2, base + 36, l.time.name);
  out.append("</svg>\n");
}

namespace {

void write_metrics_html(TextSink& out, const sim::Metrics& metrics) {
  out.append("<table class=\"metrics\">\n");
  for (const auto& [name, value] : metric_rows(metrics))
    print_to(out, "<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(name), xml_escape(value));
  out.append("</table>\n");
}

void write_ranking_html(TextSink& out, const std::vector<ChartSection>& sections,
                        const RankingMarks& marks) {
  const RankingTable table = ranking_table(sections, marks);
  out.append("<table class=\"ranking\">\n<tr>");
  for (const std::string& h : table.header) print_to(out, "<th>{}</th>", xml_escape(h));
  out.append("</tr>\n");
  for (const auto& row : table.rows) {
    out.append("<tr>");
    for (const std::string& cell : row) print_to(out, "<td>{}</td>", xml_escape(cell));
    out.append("</tr>\n");
  }
  print_to(out, "</table>\n<p class=\"note\">{}</p>\n", xml_escape(table.note));
}

const char* kHoverNote =
    "<p class=\"note\">One row per CTA (per resident slot or SM for a transient trace), time left "
    "to right. Hover a box for the tile's index, prompt, head, offset, KV blocks and times. Tiles "
    "too narrow for a box are shaded, darker where their row was busier; perfetto.json has every "
    "tile.</p>\n";

// The busy units over time, then the last wave zoomed: what a chart of many tiles per row cannot
// show, where the time is lost.
void write_last_wave_html(TextSink& out, const Trace& trace, const sim::Metrics& metrics,
                          const ChartOptions& page) {
  ChartOptions options = page;
  options.time_extent_us = 0;
  const ChartLayout layout = chart_layout(trace, options);
  const std::string units = fmt::format("{}s", layout.row_name);
  print_to(out, "<h2>Busy {} over time</h2>\n", units);
  print_to(out,
           "<p class=\"note\">How many {} run a tile, averaged over each bin: the area under the "
           "curve is the busy time, the gap above it up to the dashed line the idle time. Hover a "
           "bin for its mean.</p>\n",
           units);
  write_busy_svg(out, trace, options);

  const LastWave wave = last_wave(trace, metrics.unit);
  out.append("<h2>The last wave</h2>\n");
  if (!(wave.end_us > wave.begin_us)) {
    print_to(out,
             "<p class=\"note\">Every {} that ran a tile finishes at the makespan: no last "
             "wave.</p>\n",
             layout.row_name);
    return;
  }
  print_to(out,
           "<p class=\"note\">From {} us, when {} {} goes idle for good, to the makespan {} us: "
           "{:.1f} % of the makespan, {} tiles running, {:.1f} of {} {} busy on average. Tiles "
           "that started earlier are drawn from its start (their tooltips keep their own "
           "times).</p>\n",
           format_us(wave.begin_us), layout.row_name, wave.first_idle_unit, format_us(wave.end_us),
           100.0 * (wave.end_us - wave.begin_us) / wave.end_us, wave.tiles, wave.busy_units,
           wave.units, units);
  options.time_begin_us = wave.begin_us;
  options.time_extent_us = wave.end_us - wave.begin_us;
  // Summary detail even for a full page: the chart above has every tile already.
  options.detail = ChartDetail::Summary;
  options.max_boxes = std::min(options.max_boxes, kMaxZoomBoxes);
  options.svg_class = "last-wave";
  options.title =
      fmt::format("last wave: {} us to {} us", format_us(wave.begin_us), format_us(wave.end_us));
  write_gantt_svg(out, trace, options);
}

}  // namespace

std::string html_page_start(const std::string& title) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n"
      "<style>{}</style>\n</head>\n<body>\n",
      xml_escape(title), kPageStyle);
}

void write_schedule_html(TextSink& out, const Trace& trace, const sim::Metrics& metrics,
                         ChartOptions options) {
  const std::string strategy = strategy_name(trace.workload);
  if (!options.unit) options.unit = metrics.unit;
  out.append(html_page_start(fmt::format("tilesched: {}", strategy)));
  print_to(out, "<h1>tilesched schedule: {}</h1>\n", xml_escape(strategy));
  print_to(out, "<p class=\"workload\">{}<br/>{}</p>\n",
           xml_escape(describe_workload(trace.workload)), xml_escape(describe_trace(trace)));
  write_metrics_html(out, metrics);
  if (const double us = combine_of(trace); us > 0)
    print_to(out,
             "<p class=\"note\">After the kernel, the split tiles' partial results are combined: "
             "{:.2f} us predicted (drawn after the last tile, grey), {:.2f} us in all.</p>\n",
             us, makespan_of(trace) + us);
  out.append(kHoverNote);
  write_gantt_svg(out, trace, options);
  write_last_wave_html(out, trace, metrics, options);
  out.append("</body>\n</html>\n");
}

std::string render_schedule_html(const Trace& trace, const sim::Metrics& metrics,
                                 const ChartOptions& options) {
  std::string html;
  sim::StringSink sink(html);
  write_schedule_html(sink, trace, metrics, options);
  return html;
}

void write_comparison_html(TextSink& out, const std::vector<ChartSection>& sections,
                           const RankingMarks& marks, ColorBy color_by, ChartDetail detail) {
  double extent = 0;
  for (const ChartSection& s : sections)
    if (s.trace) extent = std::max(extent, makespan_of(*s.trace) + combine_of(*s.trace));
  out.append(html_page_start("tilesched: strategy comparison"));
  out.append("<h1>tilesched: every strategy on one workload</h1>\n");
  if (!sections.empty() && sections.front().trace)
    print_to(out, "<p class=\"workload\">{}</p>\n",
             xml_escape(describe_workload(sections.front().trace->workload)));
  write_ranking_html(out, sections, marks);
  out.append("<p class=\"note\">All charts share one time axis.</p>\n");
  out.append(kHoverNote);
  for (const ChartSection& s : sections) {
    if (!s.trace) continue;
    print_to(out, "<h2>{}</h2>\n",
             xml_escape(s.num_ctas ? fmt::format("{}, C = {}", s.name, s.num_ctas) : s.name));
    write_metrics_html(out, s.metrics);
    ChartOptions options;
    options.color_by = color_by;
    options.time_extent_us = extent;
    options.title = describe_trace(*s.trace);
    options.detail = detail;
    options.unit = s.metrics.unit;
    write_gantt_svg(out, *s.trace, options);
  }
  out.append("</body>\n</html>\n");
}

std::string render_comparison_html(const std::vector<ChartSection>& sections,
                                   const RankingMarks& marks, ColorBy color_by) {
  std::string html;
  sim::StringSink sink(html);
  write_comparison_html(sink, sections, marks, color_by);
  return html;
}

}  // namespace tilesched::viz
