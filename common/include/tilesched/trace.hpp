// The Trace: the hinge between simulator, GPU and tool (docs/trace-format.md). One event per
// processed tile. Plain data only; reading and writing it as JSON lives in sim/ (trace_io).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/workload.hpp"

namespace tilesched {

struct TraceEvent {
  u32 cta = 0;         // block index (x for persistent; linearised x + T*(y + H*z) for transient)
  u32 step = 0;        // 0 for the CTA's first tile, then 1, 2, ...
  u32 linear_idx = 0;  // the work index (SPEC §3)
  u32 prompt_offset = 0;  // token offset of the tile in its sequence
  u32 head_idx = 0;
  u32 prompt_idx = 0;
  u32 query_rows = 0;   // rows the tile wrote (faithful mode: what upstream would write)
  u32 kv_blocks = 0;    // KV blocks processed
  double start_us = 0;  // predicted (sim) or %globaltimer relative to the kernel's start (GPU)
  double end_us = 0;
  std::int32_t sm_id = -1;  // GPU only
  // The first processed KV block among the tile's: 0 for a whole tile; a split_tail piece
  // processes blocks [kv_block_begin, kv_block_begin + kv_blocks) of its tile. (Last, where it
  // fills the padding after sm_id: the event stays 56 bytes.)
  u32 kv_block_begin = 0;
};
static_assert(sizeof(TraceEvent) <= 56, "a replay holds millions of events");

struct Trace {
  static constexpr int kFormatVersion = 1;
  std::string source;   // "sim" or "gpu"
  std::string device;   // cost profile (sim) or device name (GPU)
  std::string created;  // ISO 8601 UTC
  Workload workload;
  u32 launched_ctas = 0;           // grid size actually launched
  // Predicted time of the combine that finishes the split tiles after the kernel (sim, a
  // splitting scheduler; CostModel::combine_time_us), µs. 0: nothing to combine, or not modelled.
  double combine_us = 0;
  std::vector<TraceEvent> events;  // ordered by (cta, step)
};

}  // namespace tilesched
