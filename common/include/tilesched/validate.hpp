// Host-side validation of a scheduling problem. Every function returns an empty string when the
// input is fine, or one sentence naming the problem; nothing asserts, throws or wraps.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/config.hpp"

namespace tilesched {

inline constexpr std::uint64_t kU32Limit = 0xFFFFFFFFull;  // largest value a u32 index holds

// The numbers a scheduler's arithmetic depends on.
struct ScheduleProblem {
  std::uint64_t batch_size = 0;   // B
  std::uint64_t max_seq_len = 0;  // S_max
  std::uint64_t tile_shape = 0;   // BM
  std::uint64_t num_heads = 0;    // H iterated by the scheduler
  std::uint64_t num_ctas = 0;     // C
};

// N = T * H * B must fit in 32 bits, and so must the largest index a CTA reaches while stepping
// (below N + C), and the queued counter's final value (at most N + C).
inline std::string validate_schedule(const ScheduleProblem& p) {
  if (p.batch_size == 0) return "batch size must be at least 1";
  if (p.max_seq_len == 0) return "the longest sequence has length 0: there is no work";
  if (p.tile_shape == 0) return "tile shape (BM) must be at least 1";
  if (p.num_heads == 0) return "number of heads must be at least 1";
  if (p.num_ctas == 0) return "number of CTAs must be at least 1";
  if (p.batch_size > kU32Limit || p.max_seq_len > kU32Limit || p.tile_shape > kU32Limit ||
      p.num_heads > kU32Limit || p.num_ctas > kU32Limit)
    return "a problem size does not fit in 32 bits";
  const std::uint64_t tiles = (p.max_seq_len + p.tile_shape - 1) / p.tile_shape;
  const std::uint64_t n = tiles * p.num_heads;  // at most 2^64 / 2^32: no 64-bit overflow yet
  if (n > kU32Limit || n * p.batch_size > kU32Limit)
    return fmt::format("number of work tiles N = T*H*B = {}*{}*{} does not fit in 32 bits", tiles,
                       p.num_heads, p.batch_size);
  const std::uint64_t total = n * p.batch_size;
  if (total + p.num_ctas > kU32Limit)
    return fmt::format(
        "N + num_ctas = {} + {} does not fit in 32 bits (a CTA's index would wrap while stepping)",
        total, p.num_ctas);
  return {};
}

// A ragged batch's row offsets: B+1 entries, starting at 0, never decreasing.
inline std::string validate_row_offsets(const std::vector<std::uint64_t>& offsets,
                                        const char* what = "row offsets") {
  if (offsets.size() < 2)
    return fmt::format("{} need at least 2 entries (B+1 for B sequences), got {}", what,
                       offsets.size());
  if (offsets.front() != 0) return fmt::format("{} must start at 0, got {}", what, offsets[0]);
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1])
      return fmt::format("{} are not monotone: entry {} ({}) is below entry {} ({})", what, i,
                         offsets[i], i - 1, offsets[i - 1]);
    if (offsets[i] > kU32Limit) return fmt::format("{} entry {} does not fit in 32 bits", what, i);
  }
  return {};
}

// Lengths from row offsets (already validated).
inline std::vector<u32> lengths_from_offsets(const std::vector<std::uint64_t>& offsets) {
  std::vector<u32> lens;
  for (std::size_t i = 1; i < offsets.size(); ++i)
    lens.push_back(static_cast<u32>(offsets[i] - offsets[i - 1]));
  return lens;
}

}  // namespace tilesched
