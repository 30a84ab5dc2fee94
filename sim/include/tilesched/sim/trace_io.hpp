// Traces as JSON: "format": "tilesched-trace", "version": 1 (docs/trace-format.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tilesched/sim/output_file.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::sim {

inline constexpr const char* kTraceFormatName = "tilesched-trace";

nlohmann::json trace_to_json(const Trace& t);

// Checks the format name and version, required fields and their types, the workload, that
// launched_ctas is at most the workload's work tiles, that every event's values fit the workload
// (CTA below launched_ctas, prompt, head, work index and tile start inside the workload, rows at
// most BM, KV blocks at most its sequence's), that times and SM ids lie in the ranges of
// value_limits.hpp and no event ends before it starts, and that events are strictly ordered by
// (cta, step). Throws std::invalid_argument naming the field (and event index) at fault.
Trace trace_from_json(const nlohmann::json& j);

// trace_to_json's content streamed into `out`: compact JSON with one event per line (large traces
// stay readable and diffable), times with the shortest digits that read back exactly. `progress`,
// when given, hears every 65536 events and at the end.
void write_trace_json(TextSink& out, const Trace& t, const ProgressCallback& progress = {});

struct TraceWriteOptions {
  Compression compression = Compression::None;  // Gzip: the file is gzip data (name it .json.gz)
  ProgressCallback progress;
};

// write_trace_json into `path`, atomically (OutputFile).
void write_trace(const std::string& path, const Trace& t, const TraceWriteOptions& options = {});

// read_file (plain or gzip-compressed) + parse + trace_from_json. std::invalid_argument for bad
// content (message names the path), std::runtime_error when the file cannot be read.
Trace read_trace(const std::string& path);

}  // namespace tilesched::sim
