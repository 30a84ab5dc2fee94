// A compact picture of the schedule for the terminal: one line per CTA, time left to right, each
// tile a run of cells labelled by its head (or prompt). ANSI colours only when asked for (the
// command asks when stdout is a terminal), so logs and pipes get plain characters.
#pragma once

#include <cstddef>
#include <string>

#include "tilesched/trace.hpp"
#include "viz/colors.hpp"

namespace tilesched::viz {

struct TerminalOptions {
  ColorBy color_by = ColorBy::Head;
  bool color = false;         // ANSI 256-colour backgrounds
  std::size_t max_rows = 40;  // CTAs shown; the rest are summarised in one line
  std::size_t width = 80;     // cells for the time axis
};

// Lines: a header (time scale and legend), one line per CTA up to max_rows, then
// "... N more CTAs" when some were left out. Every line ends with '\n'.
std::string render_terminal(const Trace& trace, const TerminalOptions& options);

}  // namespace tilesched::viz
