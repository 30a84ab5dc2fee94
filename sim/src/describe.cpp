#include "tilesched/sim/describe.hpp"

#include <fmt/format.h>

namespace tilesched::sim {

std::string describe_tile(u32 prompt, u32 head, u32 prompt_offset) {
  return fmt::format("tile (prompt {}, head {}, offset {})", prompt, head, prompt_offset);
}

std::string describe_tile(const TraceEvent& e) {
  return describe_tile(e.prompt_idx, e.head_idx, e.prompt_offset);
}

}  // namespace tilesched::sim
