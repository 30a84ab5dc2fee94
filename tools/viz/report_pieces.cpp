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

std::string render_scatter_svg(const std::vector<ScatterPoint>& points,
                               const ScatterOptions& options) {
  constexpr double kWidth = 720, kHeight = 600, kLeft = 80, kRight = 190, kTop = 40, kBottom = 60;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  std::vector<const ScatterPoint*> shown;
  double lo = 0, hi = 0;
  for (const ScatterPoint& p : points) {
    if (!(p.x > 0 && p.y > 0 && std::isfinite(p.x) && std::isfinite(p.y))) continue;
    shown.push_back(&p);
    lo = shown.size() == 1 ? std::min(p.x, p.y) : std::min({lo, p.x, p.y});
    hi = shown.size() == 1 ? std::max(p.x, p.y) : std::max({hi, p.x, p.y});
  }
  if (shown.empty()) lo = 1, hi = 10;
  // The data's range and a margin, the same on both axes so y = x is the diagonal; grid lines at
  // 1..9 x 10^k, labelled at 1, 2 and 5.
  const double log_lo = std::log10(lo / 1.1), log_hi = std::log10(hi * 1.1);
  const double span = std::max(1e-9, log_hi - log_lo);
  const auto px = [&](double v) { return kLeft + (std::log10(v) - log_lo) / span * plot_w; };
  const auto py = [&](double v) {
    return kTop + plot_h - (std::log10(v) - log_lo) / span * plot_h;
  };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} "
      "{1}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"{0}\" height=\"{1}\" "
      "fill=\"#ffffff\"/>\n<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kLeft, xml_escape(options.title));
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888888\"/>\n",
      kLeft, kTop, plot_w, plot_h);
  for (double d = std::floor(log_lo); d <= std::ceil(log_hi); ++d) {
    for (int m = 1; m < 10; ++m) {
      const double v = std::pow(10.0, d) * m, at = std::log10(v);
      if (at < log_lo || at > log_hi) continue;
      const bool labelled = m == 1 || m == 2 || m == 5;
      const char* colour = labelled ? "#cccccc" : "#eeeeee";
      svg += fmt::format(
          "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{4}\"/>\n"
          "<line x1=\"{3}\" y1=\"{5:.1f}\" x2=\"{6}\" y2=\"{5:.1f}\" stroke=\"{4}\"/>\n",
          px(v), kTop, kTop + plot_h, kLeft, colour, py(v), kLeft + plot_w);
      if (labelled)
        svg += fmt::format(
            "<text x=\"{0:.1f}\" y=\"{1}\" text-anchor=\"middle\">{2:g}</text>\n<text x=\"{3}\" "
            "y=\"{4:.1f}\" text-anchor=\"end\">{2:g}</text>\n",
            px(v), kTop + plot_h + 16, v, kLeft - 6, py(v) + 4);
    }
  }
  // y = x, and the band around it.
  const double a = std::pow(10.0, log_lo), b = std::pow(10.0, log_hi);
  svg += fmt::format(
      "<line class=\"identity\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
      "stroke=\"#333333\"/>\n",
      px(a), py(a), px(b), py(b));
  for (const double f : {1 + options.band, 1 - options.band}) {
    const double from = std::max(a, a / f), to = std::min(b, b / f);  // inside the plot
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999999\" "
        "stroke-dasharray=\"4 3\"/>\n",
        px(from), py(from * f), px(to), py(to * f));
  }
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"16\" y=\"{:.1f}\" "
      "text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1f})\">{}</text>\n",
      kLeft + plot_w / 2, kHeight - 18, xml_escape(options.x_label), kTop + plot_h / 2,
      kTop + plot_h / 2, xml_escape(options.y_label));

  std::map<std::string, Rgb> colours;
  for (const ScatterPoint* p : shown) colours.emplace(p->series, Rgb{});
  u32 key = 0;
  for (auto& [series, colour] : colours) colour = category_color(key++);
  for (const ScatterPoint* p : shown)
    svg += fmt::format(
        "<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\" "
        "fill-opacity=\"0.8\"><title>{}</title></circle>\n",
        px(p->x), py(p->y), to_hex(colours[p->series]), xml_escape(p->label));
  double y = kTop + 10;
  for (const auto& [series, colour] : colours) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        kLeft + plot_w + 16, y, to_hex(colour), kLeft + plot_w + 26, y + 4, xml_escape(series));
    y += 18;
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#666666\">dashed: +-{:g} %</text>\n",
                     kLeft + plot_w + 16, y + 8, 100 * options.band);
  return svg + "</svg>\n";
}

}  // namespace tilesched::viz
