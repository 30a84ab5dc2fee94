// Seeded random scheduling problems for the property tests. splitmix64 keeps the sequence
// identical on every platform (std distributions are implementation-defined).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/scheduler.hpp"
#include "tilesched/splitmix64.hpp"
#include "tilesched/validate.hpp"

namespace tilesched::testing {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64_next(state_); }
  // Uniform in [lo, hi] (the tiny modulo bias does not matter for tests).
  u32 uniform(u32 lo, u32 hi) {
    return lo + static_cast<u32>(next() % (std::uint64_t(hi) - lo + 1));
  }
  bool chance(u32 percent) { return uniform(0, 99) < percent; }

 private:
  std::uint64_t state_;
};

struct RandomProblem {
  std::vector<u32> offsets;  // B+1 row offsets (ragged); empty when padded
  u32 batch_size = 1;
  u32 max_seq_len = 1;
  u32 tile_shape = 128;
  u32 num_heads = 1;
  u32 num_ctas = 132;
  Schedule schedule = Schedule::Default;

  TileSummary summary() const {
    return TileSummary::make(batch_size, max_seq_len, tile_shape,
                             offsets.empty() ? nullptr : offsets.data());
  }
  TileMapping mapping() const { return TileMapping{tile_shape, num_heads, schedule}; }
  MappingParams params() const { return MappingParams(mapping()); }
  u32 max_idx() const { return summary().max_idx(num_heads); }
  std::string describe() const {
    std::string s =
        fmt::format("B={} S_max={} BM={} H={} C={} {} lens=", batch_size, max_seq_len, tile_shape,
                    num_heads, num_ctas, schedule == Schedule::PromptRotate ? "rotate" : "default");
    if (offsets.empty()) return s + "padded";
    for (std::size_t b = 0; b + 1 < offsets.size(); ++b)
      s += fmt::format("{},", offsets[b + 1] - offsets[b]);
    return s;
  }
};

// Tile shapes 1..256, CTAs 1..1024 (often more than N), ragged with empty and short sequences.
inline RandomProblem random_problem(SplitMix64& rng) {
  RandomProblem p;
  p.batch_size = rng.uniform(1, 8);
  p.tile_shape = rng.chance(30) ? (1u << rng.uniform(0, 8)) : rng.uniform(1, 256);
  p.num_heads = rng.uniform(1, 6);
  p.num_ctas = rng.chance(20) ? rng.uniform(1, 8) : rng.uniform(1, 1024);
  p.schedule = rng.chance(50) ? Schedule::PromptRotate : Schedule::Default;
  const u32 longest = rng.uniform(1, 4 * p.tile_shape + 7);
  if (rng.chance(25)) {
    p.max_seq_len = longest;  // padded
    return p;
  }
  p.offsets.assign(1, 0);
  u32 max_len = 0;
  for (u32 b = 0; b < p.batch_size; ++b) {
    u32 len = rng.chance(15) ? 0 : rng.uniform(1, longest);
    if (b == p.batch_size - 1 && max_len == 0 && len == 0) len = longest;  // some work
    max_len = len > max_len ? len : max_len;
    p.offsets.push_back(p.offsets.back() + len);
  }
  p.max_seq_len = max_len;
  return p;
}

}  // namespace tilesched::testing
