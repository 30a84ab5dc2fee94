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

// Who chose the workload's num_ctas: --ctas, the workload file, or nobody (then it is the
// device's to fill: SMs x CTAs per SM, from the cost profile in the simulator and from the GPU in
// `run`; num_ctas holds the Workload default until then).
enum class CtaOrigin { Flag, File, Device };

// "SMs x CTAs per SM at d" for a device: how the device's own CTA count is made.
std::string device_cta_rule(u32 sms, u32 per_sm, u32 head_dim, const std::string& device);

// The line saying how many CTAs a workload runs with (C, or the resident CTAs of a transient grid)
// and who chose them: "C = 5: from the workload file", "C = 264: <device_rule>".
std::string describe_cta_choice(bool transient, CtaOrigin origin, u32 count,
                                const std::string& device_rule);

}  // namespace tilesched::viz
