// The schedule as a picture: an SVG Gantt chart (one row per execution unit, time left to right)
// inside a self-contained HTML page with the metrics on top, and below it the busy units over time
// and the last wave zoomed in. No scripts and no external files, so
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
  // Length of the time axis in µs; 0 means the trace's own makespan. A comparison page passes the
  // largest makespan of all its charts so equal lengths look equal.
  double time_extent_us = 0;
  // Start of the time axis in µs (the last wave's zoom). Tiles that end before it are left out,
  // tiles that cross it are drawn from it; their tooltips keep their own times.
  double time_begin_us = 0;
  // In summary mode, boxes at most (the rest shaded).
  std::size_t max_boxes = kMaxBoxes;
  std::string svg_class = "gantt";  // the <svg> element's class: "gantt", or "last-wave"
  std::string title;                // above the chart; empty means a description of the trace
  ChartDetail detail = ChartDetail::Summary;
  // What a row is: a CTA, or for a transient trace counted per slot/SM a resident slot or SM
  // (the events' sm_id), as the metrics count it. Empty: sim::execution_unit(trace).
  std::optional<sim::ExecutionUnit> unit;
};

// The chart alone: <svg class="gantt" ...>...</svg>. Each box is a <rect class="tile"> with a
// <title>; each shaded row is a <g class="shade"> with a <title> saying how many tiles it holds and
// how busy the row was. The pieces of a tile split over several CTAs (split_tail) are boxes with a
// dark dashed outline, a tooltip naming the piece ("piece 2 of 3 of tile idx 17: KV blocks 5-9 of
// 16") and one <polyline class="piece-link"> per tile joining its boxed pieces.
void write_gantt_svg(sim::TextSink& out, const Trace& trace, const ChartOptions& options);
std::string render_gantt_svg(const Trace& trace, const ChartOptions& options);

// The last wave: from the moment the first execution unit (CTA, or slot/SM for a transient trace
// counted per slot) that ran a tile goes idle for good, to the makespan.
struct LastWave {
  double begin_us = 0;  // the earliest last end of a unit that ran a tile
  double end_us = 0;    // the makespan
  std::uint64_t first_idle_unit = 0;
  std::size_t tiles = 0;    // tiles running in [begin_us, end_us)
  double busy_units = 0;    // mean units busy in it
  std::uint64_t units = 0;  // units that ran a tile
};
LastWave last_wave(const Trace& trace, sim::ExecutionUnit unit);

// Busy units over time: the mean number running a tile in each of `bins` equal bins of
// [0, makespan] (a bin's busy time / its width). Exact per bin whatever the tile count.
std::vector<double> busy_units_per_bin(const Trace& trace, std::size_t bins);

// Bins of the busy chart: 2 px each across the plot.
inline constexpr std::size_t kBusyBins = 560;
// Boxes at most in the last wave's zoom (the rest shaded), about 1.3 MB of page.
inline constexpr std::size_t kMaxZoomBoxes = 5000;

// The busy chart: <svg class="busy">, an area of busy units per bin (each bin an invisible
// <rect class="bin"> whose <title> gives its interval and mean), a line at the units launched
// and the last wave shaded.
void write_busy_svg(sim::TextSink& out, const Trace& trace, const ChartOptions& options);

// The start of a self-contained page (doctype, title, the pages' shared style, <body>).
std::string html_page_start(const std::string& title);

// schedule.html: title, workload, metrics table, the Gantt chart, the busy units over time, and
// the last wave zoomed (<svg class="last-wave">, the Gantt chart of [begin, makespan] with at
// most kMaxZoomBoxes boxes). The charts' rows follow `metrics.unit`. Whatever the trace, the page
// stays bounded: at most options.max_boxes + kMaxZoomBoxes boxes, the shading grids and
// kBusyBins bins.
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
