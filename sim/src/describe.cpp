#include "tilesched/sim/describe.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace tilesched::sim {

std::string describe_tile(u32 prompt, u32 head, u32 prompt_offset) {
  return fmt::format("tile (prompt {}, head {}, offset {})", prompt, head, prompt_offset);
}

std::string describe_tile(const TraceEvent& e) {
  return describe_tile(e.prompt_idx, e.head_idx, e.prompt_offset);
}

std::string describe_kv_blocks(const TraceEvent& e) {
  return e.kv_block_begin == 0 ? fmt::format("{} kv blocks", e.kv_blocks)
                               : fmt::format("kv blocks {}..{}", e.kv_block_begin,
                                             std::uint64_t(e.kv_block_begin) + e.kv_blocks - 1);
}

}  // namespace tilesched::sim
