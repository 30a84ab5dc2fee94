// FastDivmod against the hardware's `/` and `%`: every divisor class (1, powers of two and their
// neighbours, the largest u32 values, many random ones) with edge and random dividends, and the
// index map built on it against SPEC §3's formula written with `/` and `%`.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "random_problem.hpp"
#include "tilesched/fast_divmod.hpp"
#include "tilesched/tile_summary.hpp"

using namespace tilesched;
using tilesched::testing::SplitMix64;

namespace {

constexpr u32 kMax = 0xFFFFFFFFu;

static_assert(FastDivmod(7).div(100) == 14, "usable in constant expressions");
static_assert(FastDivmod(1).div(kMax) == kMax);
static_assert(FastDivmod(kMax).div(kMax) == 1);

std::vector<u32> divisors(SplitMix64& rng) {
  std::vector<u32> d;
  for (u32 i = 1; i <= 1000; ++i) d.push_back(i);
  for (u32 k = 1; k < 32; ++k) {
    const u32 p = 1u << k;
    d.insert(d.end(), {p - 1, p, p + 1});
  }
  d.insert(d.end(), {kMax, kMax - 1, 0x80000001u, 0x7FFFFFFFu, 0xAAAAAAABu, 641, 6700417});
  for (int i = 0; i < 20000; ++i)
    d.push_back(static_cast<u32>(rng.next() >> (rng.next() % 32)) | 1u);
  for (int i = 0; i < 2000; ++i) d.push_back(static_cast<u32>(rng.next()) & ~1u);  // even
  return d;
}

std::vector<u32> dividends(u32 d, SplitMix64& rng) {
  std::vector<u32> n = {0, 1, 2, d - 1, d, 0x7FFFFFFFu, 0x80000000u, kMax - 1, kMax};
  if (d <= kMax / 2) n.insert(n.end(), {d + 1, 2 * d - 1, 2 * d});
  const u32 top = kMax / d * d;  // the largest multiple of d
  n.insert(n.end(), {top, top - 1});
  if (top + 1 != 0) n.push_back(top + 1);
  for (int i = 0; i < 64; ++i) n.push_back(static_cast<u32>(rng.next()));
  for (int i = 0; i < 16; ++i) n.push_back(static_cast<u32>(rng.next() % (std::uint64_t(d) * 4)));
  return n;
}

}  // namespace

TEST_CASE("FastDivmod equals / and % for every u32 dividend class and divisor class") {
  SplitMix64 rng(0xd1f1d0);
  std::size_t checked = 0;
  for (const u32 d : divisors(rng)) {
    const FastDivmod fd(d);
    REQUIRE(fd.divisor() == d);
    for (const u32 n : dividends(d, rng)) {
      u32 r = 0;
      const u32 q = fd.divmod(n, r);
      if (q != n / d || r != n % d || fd.div(n) != n / d) {
        FAIL_CHECK(n, " / ", d, ": got ", q, " rem ", r, ", want ", n / d, " rem ", n % d);
        return;
      }
      ++checked;
    }
  }
  CHECK(checked > 2'000'000);
}

TEST_CASE("FastDivmod: a zero divisor is taken as 1 instead of trapping") {
  const FastDivmod fd(0);
  CHECK(fd.divisor() == 1);
  u32 r = 5;
  CHECK(fd.divmod(12345, r) == 12345);
  CHECK(r == 0);
}

TEST_CASE("the index map equals SPEC 3's formula with / and %, also near 2^32 indices") {
  SplitMix64 rng(0x5eed00d1);
  for (int n = 0; n < 2000; ++n) {
    // T, H and B up to sizes whose N fills most of the u32 range.
    const u32 tile_shape = 1u + static_cast<u32>(rng.next() % 256);
    const u32 tiles = 1u + static_cast<u32>(rng.next() % (n % 2 ? 70000 : 40));
    const u32 heads = 1u + static_cast<u32>(rng.next() % (n % 3 ? 60000 : 9));
    const std::uint64_t room = 0xFFFFFFFFull / (std::uint64_t(tiles) * heads);
    if (room == 0) continue;
    const u32 batch = 1u + static_cast<u32>(rng.next() % std::min<std::uint64_t>(room, 50));
    const Schedule schedule = n % 2 ? Schedule::PromptRotate : Schedule::Default;
    const MappingParams m(TileMapping{tile_shape, heads, schedule});
    // S_max chosen so that ceil(S_max / BM) = tiles.
    const TileSummary summary = TileSummary::make(batch, tiles * tile_shape, tile_shape);
    REQUIRE(summary.max_num_prompt_tiles == tiles);
    const u32 N = summary.max_idx(heads);
    for (int i = 0; i < 200; ++i) {
      const u32 idx = i == 0 ? N - 1 : static_cast<u32>(rng.next() % N);
      u32 t = idx % tiles;
      const u32 h = (idx / tiles) % heads;
      const u32 b = idx / (tiles * heads);
      if (schedule == Schedule::PromptRotate && (h & 1u)) t = tiles - 1 - t;
      const WorkInfo w = summary.unsafe_get_current_work_info(m, idx);
      REQUIRE(w.prompt_offset == t * tile_shape);
      REQUIRE(w.head_idx == h);
      REQUIRE(w.prompt_idx == b);
      REQUIRE(summary.linear_index(m, w.prompt_offset, h, b) == idx);
    }
  }
}

TEST_CASE("ceil_div cannot wrap near 2^32 (a fuzz finding: 4294967040 rows in tiles of 1886)") {
  CHECK(ceil_div(4294967040u, 1886u) == 2277289u);
  CHECK(ceil_div(0xFFFFFFFFu, 2u) == 2147483648u);
  CHECK(ceil_div(0xFFFFFFFFu, 0xFFFFFFFFu) == 1u);
  CHECK(ceil_div(0xFFFFFFFFu, 1u) == 0xFFFFFFFFu);
  CHECK(ceil_div(0u, 7u) == 0u);
  SplitMix64 rng(99);
  for (int i = 0; i < 100000; ++i) {
    const u32 a = static_cast<u32>(rng.next()), b = static_cast<u32>(rng.next() % 5000) + 1;
    CHECK(ceil_div(a, b) == static_cast<u32>((std::uint64_t(a) + b - 1) / b));
  }
}
