// The trace in Chrome's trace-event JSON format, which ui.perfetto.dev and chrome://tracing open:
// one track per CTA, one complete ("X") event per tile. Useful for traces too large to read in an
// SVG, since Perfetto zooms and searches.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tilesched/trace.hpp"

namespace tilesched::viz {

// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}. All CTAs are threads
// (tid = CTA) of one process, so Perfetto shows them as one expandable group in CTA order.
nlohmann::json perfetto_json(const Trace& trace);

// perfetto_json, serialised compactly (one event per line is not needed: nothing diffs it).
std::string render_perfetto(const Trace& trace);

}  // namespace tilesched::viz
