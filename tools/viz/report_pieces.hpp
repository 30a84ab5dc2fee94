// Pieces of a written report: a table rendered as Markdown or HTML, and a scatter plot of measured
// against predicted values as a self-contained SVG (log-log, the y = x line and a +-band, one
// colour per series, a tooltip per point). Every piece of text is escaped.
#pragma once

#include <string>
#include <vector>

namespace tilesched::viz {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // each as long as the header
};

// GitHub Markdown: header, separator (numbers right-aligned when `numeric[i]`), rows; pipes in
// cells escaped.
std::string markdown_table(const Table& t, const std::vector<bool>& numeric = {});
std::string html_table(const Table& t, const std::vector<bool>& numeric = {});

struct ScatterPoint {
  double x = 0, y = 0;  // both > 0 (log axes); others are left out
  std::string series;   // colour and legend entry
  std::string label;    // tooltip
};

struct ScatterOptions {
  std::string title;
  std::string x_label, y_label;
  double band = 0.05;  // the dashed lines at y = x * (1 +- band)
};

// <svg ...>...</svg>; one <circle class="point"> per drawable point.
std::string render_scatter_svg(const std::vector<ScatterPoint>& points,
                               const ScatterOptions& options);

}  // namespace tilesched::viz
