// The metrics of a trace as (name, value) rows: printed as a text table by the command and as an
// HTML table at the top of schedule.html, so both always show the same figures.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tilesched/sim/metrics.hpp"

namespace tilesched::viz {

using MetricRows = std::vector<std::pair<std::string, std::string>>;

// "CTA", or "slot/SM" for a transient trace counted per resident slot (sim) or SM (GPU).
std::string unit_name(const sim::Metrics& m);

// "busy per CTA" / "busy per slot/SM" and so on, so the reader knows what was counted.
MetricRows metric_rows(const sim::Metrics& m);

// Two aligned columns, one metric per line, ending with a newline.
std::string format_metrics_table(const sim::Metrics& m);

}  // namespace tilesched::viz
