// The trace in Chrome's trace-event JSON format, which ui.perfetto.dev and chrome://tracing open:
// one track per execution unit, one complete ("X") event per tile. Useful for traces too large to
// read in an SVG, since Perfetto zooms and searches.
#pragma once

#include <string>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/output_file.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::viz {

// Streams {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} into `out`. All
// tracks are threads of one process, so Perfetto shows them as one expandable group in order:
// one per CTA (tid = CTA), or for a transient trace counted per slot/SM (`unit`), one per slot or
// SM (tid = sm_id, the CTA among the args) instead of one per one-tile CTA. Times are clamped to
// what Perfetto's nanosecond integers hold, so every ts and dur is a number.
void write_perfetto_json(sim::TextSink& out, const Trace& trace, sim::ExecutionUnit unit,
                         const sim::ProgressCallback& progress = {});

// write_perfetto_json into a string, with the unit the metrics count per.
std::string render_perfetto(const Trace& trace);

}  // namespace tilesched::viz
