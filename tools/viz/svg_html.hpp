// The schedule as a picture: an SVG Gantt chart (one row per CTA, one box per tile) inside a
// self-contained HTML page with the metrics on top. No scripts and no external files, so the page
// can be attached to a bug report or opened offline. The output is well-formed XML inside the
// <svg> (tests parse it).
#pragma once

#include <string>
#include <vector>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/trace.hpp"
#include "viz/colors.hpp"

namespace tilesched::viz {

struct ChartOptions {
  ColorBy color_by = ColorBy::Head;
  // End of the time axis in µs; 0 means the trace's own makespan. A comparison page passes the
  // largest makespan of all its charts so equal lengths look equal.
  double time_extent_us = 0;
  std::string title;  // above the chart; empty means a description of the trace
};

// The chart alone: <svg ...>...</svg>. Every tile is exactly one <rect class="tile">.
std::string render_gantt_svg(const Trace& trace, const ChartOptions& options);

// The start of a self-contained page (doctype, title, the pages' shared style, <body>).
std::string html_page_start(const std::string& title);

// schedule.html: title, workload, metrics table, chart.
std::string render_schedule_html(const Trace& trace, const sim::Metrics& metrics,
                                 const ChartOptions& options);

// One strategy on a comparison page.
struct ChartSection {
  std::string name;  // e.g. "tile/prompt_rotate"
  const Trace* trace = nullptr;
  sim::Metrics metrics;
};

// One page, one chart per section (in the given order), all on the same time scale.
std::string render_comparison_html(const std::vector<ChartSection>& sections, ColorBy color_by);

}  // namespace tilesched::viz
