// Short human-readable descriptions of a workload, a trace and a tile, used as titles and
// tooltips by every picture and by the command's text output.
#pragma once

#include <string>

#include "tilesched/trace.hpp"

namespace tilesched::viz {

// "8 sequences (ragged, 512..8192 rows), 32 q heads / 8 kv heads, d 128, causal, BM 128, BN 128"
std::string describe_workload(const Workload& w);

// "tile/default, 132 CTAs, sim (h200)"
std::string describe_trace(const Trace& t);

// Multi-line description of one tile, for tooltips and diffs.
std::string describe_event(const TraceEvent& e);

// One line: "tile (prompt 3, head 17, offset 256), idx 1234, 12 kv blocks".
std::string describe_tile(const TraceEvent& e);

// A duration in µs with a sensible number of digits.
std::string format_us(double us);

}  // namespace tilesched::viz
