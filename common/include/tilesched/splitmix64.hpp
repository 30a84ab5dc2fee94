// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
// the small generator behind every seeded random input and test problem of the project. Written
// out here so the simulator's inputs, the device's fill and the tests' problems are the same
// sequence on every platform (std distributions are implementation-defined).
#pragma once

#include <cstdint>

#include "tilesched/config.hpp"

namespace tilesched {

inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;

// The output function: a bijective mix of the generator's state.
TS_HOST_DEVICE constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next value of the stream whose state is `state` (advanced).
TS_HOST_DEVICE constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += kSplitMix64Gamma;
  return splitmix64_mix(state);
}

// The i-th value (from 0) of the stream seeded with `seed`, without stepping through the others:
// lets every device thread draw its own elements.
TS_HOST_DEVICE constexpr std::uint64_t splitmix64_at(std::uint64_t seed, std::uint64_t i) {
  return splitmix64_mix(seed + (i + 1) * kSplitMix64Gamma);
}

// A value in [-1, 1) from the top 24 bits of a random word: exact in float, so host and device
// agree to the bit.
TS_HOST_DEVICE constexpr float uniform_symmetric(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (1.f / 16777216.f) * 2.f - 1.f;
}

}  // namespace tilesched
