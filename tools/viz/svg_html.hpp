// The schedule as a picture: an SVG Gantt chart (one row per execution unit, time left to right)
// inside a self-contained HTML page with the metrics on top. No scripts and no external files, so
// the page can be attached to a bug report or opened offline. The output is well-formed XML
// (tests parse it).
//
// The chart stays small and legible however many tiles there are. A tile is a box with a tooltip
// where it is wide enough to see; tiles narrower than that are summed per pixel column into a
// shade of one colour, darker where the row was busier (its busy fraction in that column), so a
// million sub-pixel tiles draw as a few thousand shapes rather than a million invisible boxes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilesched/names.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/output_file.hpp"
#include "tilesched/trace.hpp"
#include "viz/colors.hpp"

namespace tilesched::viz {

// How much of each tile a chart draws.
enum class ChartDetail {
  Summary,  // every tile a box when they are few; otherwise boxes for the widest tiles (at least
            // kMinBoxPixels wide, at most kMaxBoxes of them) and shading for the rest
  Full,     // every tile a box with its tooltip, however thin (large files for large traces)
};

// Drawn as boxes when a trace has no more tiles than this (and in summary mode at most this many
// boxes): about 5 MB of page.
inline constexpr std::size_t kMaxBoxes = 20000;
// In summary mode, a tile narrower than this is shaded rather than boxed once there are too many
// tiles to box them all.
inline constexpr double kMinBoxPixels = 3;

struct ChartOptions {
  ColorBy color_by = ColorBy::Head;
  // End of the time axis in µs; 0 means the trace's own makespan. A comparison page passes the
  // largest makespan of all its charts so equal lengths look equal.
  double time_extent_us = 0;
  std::string title;  // above the chart; empty means a description of the trace
  ChartDetail detail = ChartDetail::Summary;
  // What a row is: a CTA, or for a transient trace counted per slot/SM a resident slot or SM
  // (the events' sm_id), as the metrics count it. Empty: sim::execution_unit(trace).
  std::optional<sim::ExecutionUnit> unit;
};

// The chart alone: <svg ...>...</svg>. Each box is a <rect class="tile"> with a <title>; each
// shaded row is a <g class="shade"> with a <title> saying how many tiles it holds and how busy
// the row was.
void write_gantt_svg(sim::TextSink& out, const Trace& trace, const ChartOptions& options);
std::string render_gantt_svg(const Trace& trace, const ChartOptions& options);

// The start of a self-contained page (doctype, title, the pages' shared style, <body>).
std::string html_page_start(const std::string& title);

// schedule.html: title, workload, metrics table, chart. The chart's rows follow `metrics.unit`.
void write_schedule_html(sim::TextSink& out, const Trace& trace, const sim::Metrics& metrics,
                         ChartOptions options);
std::string render_schedule_html(const Trace& trace, const sim::Metrics& metrics,
                                 const ChartOptions& options);

// One strategy on a comparison page.
struct ChartSection {
  std::string name;  // e.g. "tile/prompt_rotate"
  const Trace* trace = nullptr;
  sim::Metrics metrics;
  u32 num_ctas = 0;  // C it ran at (for transient: the resident slots); 0: not shown
};

// What the ranking marks, as indices into the sections; an index past the end marks nothing.
struct RankingMarks {
  std::size_t recommended = SIZE_MAX;  // marked '*'
  std::size_t seed = SIZE_MAX;         // the seed's DEFAULT, whose makespan every "vs seed" divides
};

// One page: the ranking table `compare` prints (sections in ranking order), then one chart per
// section, all on the same time scale.
void write_comparison_html(sim::TextSink& out, const std::vector<ChartSection>& sections,
                           const RankingMarks& marks, ColorBy color_by,
                           ChartDetail detail = ChartDetail::Summary);
std::string render_comparison_html(const std::vector<ChartSection>& sections,
                                   const RankingMarks& marks, ColorBy color_by);

}  // namespace tilesched::viz
