// How every message of the project names a work tile: "tile (prompt P, head H, offset O)". One
// spelling for the simulator's coverage problems, the schedule and output checks, the tests and
// the tool, so a tile found in one message can be searched for in another.
#pragma once

#include <string>

#include "tilesched/trace.hpp"

namespace tilesched::sim {

std::string describe_tile(u32 prompt, u32 head, u32 prompt_offset);
std::string describe_tile(const TraceEvent& e);
// The KV blocks an event processed: "N kv blocks" for a whole tile, "kv blocks B..L" (first and
// last) for a piece of one (split_tail).
std::string describe_kv_blocks(const TraceEvent& e);

}  // namespace tilesched::sim
