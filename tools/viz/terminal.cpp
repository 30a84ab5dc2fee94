#include "viz/terminal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "viz/descriptions.hpp"

namespace tilesched::viz {
namespace {

struct CtaRow {
  std::vector<const TraceEvent*> tiles;
  double busy_us = 0;
};

// One CTA's cells: for each column, the tile covering it (or none) and whether the tile starts
// there. A tile shorter than a column still claims one column, so no tile disappears; when two
// claim the same column the later one wins and the tile count on the right stays exact.
struct Cell {
  const TraceEvent* tile = nullptr;
  bool starts = false;
};

std::vector<Cell> layout_row(const CtaRow& row, std::size_t width, double us_per_cell) {
  std::vector<Cell> cells(width);
  for (const TraceEvent* e : row.tiles) {
    // Clamped in double before converting: a hand-edited trace may hold negative times.
    const auto column = [&](double us, double (*round)(double)) {
      const double c = round(us / us_per_cell);
      return static_cast<std::size_t>(std::isfinite(c) ? std::clamp(c, 0.0, double(width)) : 0.0);
    };
    const std::size_t first = std::min(column(e->start_us, std::floor), width - 1);
    const std::size_t last = std::clamp(column(e->end_us, std::ceil), first + 1, width);
    for (std::size_t c = first; c < last; ++c) cells[c] = Cell{e, c == first};
  }
  return cells;
}

std::string draw_cells(const std::vector<Cell>& cells, const TerminalOptions& options) {
  std::string out;
  int current = -1;  // the background colour in effect; -1 = terminal default
  for (const Cell& cell : cells) {
    if (!cell.tile) {
      if (options.color && current != -1) out += "\x1b[0m";
      current = -1;
      out += options.color ? ' ' : '.';
      continue;
    }
    const u32 key = color_key(*cell.tile, options.color_by);
    // Plain: the category's symbol where a tile starts and '-' while it runs, so boundaries
    // between tiles of one head stay visible. Colour: the background carries the category.
    const char glyph = cell.starts ? category_symbol(key) : (options.color ? ' ' : '-');
    if (options.color) {
      const Rgb c = category_color(key);
      const int ansi = to_ansi256(c);
      // Escape codes only where the colour changes keep a 132-CTA view small enough to scroll.
      if (ansi != current) out += fmt::format("\x1b[48;5;{}m\x1b[{}m", ansi, is_dark(c) ? 97 : 30);
      current = ansi;
    }
    out += glyph;
  }
  if (options.color && current != -1) out += "\x1b[0m";
  return out;
}

}  // namespace

std::string render_terminal(const Trace& trace, const TerminalOptions& options) {
  const std::size_t width = std::max<std::size_t>(options.width, 10);
  u32 ctas = trace.launched_ctas;
  double makespan = 0;
  for (const TraceEvent& e : trace.events) {
    ctas = std::max(ctas, e.cta + 1);
    makespan = std::max(makespan, e.end_us);
  }
  // Only the rows shown are built: a trace may claim billions of launched CTAs.
  const std::size_t shown = std::min<std::size_t>(ctas, options.max_rows);
  std::vector<CtaRow> rows(shown);
  for (const TraceEvent& e : trace.events) {
    if (e.cta >= shown) continue;
    rows[e.cta].tiles.push_back(&e);
    rows[e.cta].busy_us += e.end_us - e.start_us;
  }
  const double us_per_cell = makespan > 0 ? makespan / width : 1.0;

  std::string out;
  const char* what = category_name(options.color_by);
  out += fmt::format(
      "{} CTAs, {} tiles; one cell = {} us; a tile starts at its {}'s symbol "
      "(0-9a-zA-Z = {} mod 62){}\n",
      ctas, trace.events.size(), format_us(us_per_cell), what, what,
      options.color ? fmt::format(", colour = {}", what) : ", '-' while it runs");
  // Time scale aligned with the cells below ("CTA    0 |" is 10 characters wide).
  const std::string end_label = fmt::format("{} us", format_us(makespan));
  out += fmt::format("{:>9}|0{:>{}}|\n", "", end_label, width - 1);
  for (std::size_t c = 0; c < shown; ++c) {
    const CtaRow& row = rows[c];
    out += fmt::format("CTA {:>4} |{}| {:>4} tiles {:>9} us\n", c,
                       draw_cells(layout_row(row, width, us_per_cell), options), row.tiles.size(),
                       format_us(row.busy_us));
  }
  if (shown < ctas)
    out += fmt::format("... {} more CTAs (every CTA is in schedule.html and perfetto.json)\n",
                       ctas - shown);
  return out;
}

}  // namespace tilesched::viz
