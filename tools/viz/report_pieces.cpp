#include "viz/report_pieces.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "viz/colors.hpp"
#include "viz/xml_escape.hpp"

namespace tilesched::viz {

namespace {

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

bool is_numeric(const std::vector<bool>& numeric, std::size_t i) {
  return i < numeric.size() && numeric[i];
}

}  // namespace

std::string markdown_table(const Table& t, const std::vector<bool>& numeric) {
  std::string out = "|";
  for (const std::string& h : t.header) out += " " + markdown_cell(h) + " |";
  out += "\n|";
  for (std::size_t i = 0; i < t.header.size(); ++i)
    out += is_numeric(numeric, i) ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const std::string& cell : row) out += " " + markdown_cell(cell) + " |";
    out += "\n";
  }
  return out;
}

std::string html_table(const Table& t, const std::vector<bool>& numeric) {
  std::string out = "<table>\n<tr>";
  for (const std::string& h : t.header) out += "<th>" + xml_escape(h) + "</th>";
  out += "</tr>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t i = 0; i < row.size(); ++i)
      out += fmt::format("<td{}>{}</td>", is_numeric(numeric, i) ? " class=\"num\"" : "",
                         xml_escape(row[i]));
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

namespace {

constexpr double kScatterWidth = 720, kScatterHeight = 600, kScatterLeft = 80, kScatterRight = 190,
                 kScatterTop = 40, kScatterBottom = 60;

// Both axes of the scatter plot: the same log scale, so y = x is the diagonal.
struct LogAxes {
  double log_lo, log_hi, plot_w, plot_h;
  double x(double v) const { return kScatterLeft + (std::log10(v) - log_lo) / span() * plot_w; }
  double y(double v) const {
    return kScatterTop + plot_h - (std::log10(v) - log_lo) / span() * plot_h;
  }
  double span() const { return std::max(1e-9, log_hi - log_lo); }
};

// The frame, grid lines at 1..9 x 10^k (labelled at 1, 2 and 5) and the axis labels.
std::string scatter_frame(const LogAxes& ax, const ScatterOptions& options) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" "
      "fill=\"#ffffff\"/>\n<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      kScatterWidth, kScatterHeight, kScatterLeft, xml_escape(options.title));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n",
      kScatterLeft, kScatterTop, ax.plot_w, ax.plot_h);
  for (double d = std::floor(ax.log_lo); d <= std::ceil(ax.log_hi); ++d) {
    for (int m = 1; m < 10; ++m) {
      const double v = std::pow(10.0, d) * m, at = std::log10(v);
      if (at < ax.log_lo || at > ax.log_hi) continue;
      const bool labelled = m == 1 || m == 2 || m == 5;
      const char* colour = labelled ? "#cccccc" : "#eeeeee";
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{4}\"/>\n"
          "<line x1=\"{3}\" y1=\"{5:.1f}\" x2=\"{6}\" y2=\"{5:.1f}\" stroke=\"{4}\"/>\n",
          ax.x(v), kScatterTop, kScatterTop + ax.plot_h, kScatterLeft, colour, ax.y(v),
          kScatterLeft + ax.plot_w);
      if (labelled)
        svg += fmt::format(
            "<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"middle\">{2:g}</text>\n<text x=\"{3}\" "
            "y=\"{4:.1f}\" text-anchor=\"end\">{2:g}</text>\n",
            ax.x(v), kScatterTop + ax.plot_h + 16, v, kScatterLeft - 6, ax.y(v) + 4);
    }
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"16\" y=\"{:.1f}\" "
      "text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1f})\">{}</text>\n",
      kScatterLeft + ax.plot_w / 2, kScatterHeight - 18, xml_escape(options.x_label),
      kScatterTop + ax.plot_h / 2, kScatterTop + ax.plot_h / 2, xml_escape(options.y_label));
  return svg;
}

// y = x, and the dashed band of +-band around it, inside the plot.
std::string scatter_diagonal(const LogAxes& ax, double band) {
  const double a = std::pow(10.0, ax.log_lo), b = std::pow(10.0, ax.log_hi);
  std::string svg = fmt::format(
      "<line class=\"identity\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#333333\"/>\n",
      ax.x(a), ax.y(a), ax.x(b), ax.y(b));
  for (const double f : {1 + band, 1 - band}) {
    const double from = std::max(a, a / f), to = std::min(b, b / f);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999999\" "
        "stroke-dasharray=\"4 3\"/>\n",
        ax.x(from), ax.y(from * f), ax.x(to), ax.y(to * f));
  }
  return svg;
}

// One colour per series, the points with their labels as tooltips, and the legend.
std::string scatter_points(const LogAxes& ax, const std::vector<const ScatterPoint*>& shown,
                           double band) {
  std::map<std::string, Rgb> colours;
  for (const ScatterPoint* p : shown) colours.emplace(p->series, Rgb{});
  u32 key = 0;
  for (auto& [series, colour] : colours) colour = category_color(key++);
  std::string svg;
  for (const ScatterPoint* p : shown)
    svg += fmt::format(
        "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\" "
        "fill-opacity=\"0.8\"><title>{}</title></circle>\n",
        ax.x(p->x), ax.y(p->y), to_hex(colours[p->series]), xml_escape(p->label));
  double y = kScatterTop + 10;
  const double legend_x = kScatterLeft + ax.plot_w + 16;
  for (const auto& [series, colour] : colours) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        legend_x, y, to_hex(colour), legend_x + 10, y + 4, xml_escape(series));
    y += 18;
  }
  return svg +
         fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#666666\">dashed: +-{:g} %</text>\n",
                     legend_x, y + 8, 100 * band);
}

}  // namespace

std::string render_scatter_svg(const std::vector<ScatterPoint>& points,
                               const ScatterOptions& options) {
  std::vector<const ScatterPoint*> shown;
  double lo = 0, hi = 0;
  for (const ScatterPoint& p : points) {
    if (!(p.x > 0 && p.y > 0 && std::isfinite(p.x) && std::isfinite(p.y))) continue;
    shown.push_back(&p);
    lo = shown.size() == 1 ? std::min(p.x, p.y) : std::min({lo, p.x, p.y});
    hi = shown.size() == 1 ? std::max(p.x, p.y) : std::max({hi, p.x, p.y});
  }
  if (shown.empty()) lo = 1, hi = 10;
  // The data's range and a margin, the same on both axes.
  const LogAxes ax{std::log10(lo / 1.1), std::log10(hi * 1.1),
                   kScatterWidth - kScatterLeft - kScatterRight,
                   kScatterHeight - kScatterTop - kScatterBottom};
  return scatter_frame(ax, options) + scatter_diagonal(ax, options.band) +
         scatter_points(ax, shown, options.band) + "</svg>\n";
}

}  // namespace tilesched::viz
