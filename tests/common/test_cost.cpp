// Per-tile KV-block counts (SPEC §7) on hand-computed cases.
#include <doctest/doctest.h>

#include "tilesched/cost.hpp"

using namespace tilesched;

TEST_CASE("no mask: every tile processes ceil(num_keys / BN) blocks") {
  const TileCost c = tile_cost(0, 128, 1000, 1000, 128, 128, Mask::None);
  CHECK(c.kv_blocks == 8);      // ceil(1000 / 128)
  CHECK(c.masked_blocks == 1);  // the tail block [896, 1024) is partial
  CHECK(tile_cost(0, 128, 1024, 1024, 128, 128, Mask::None).masked_blocks == 0);
  CHECK(tile_cost(0, 0, 1024, 1024, 128, 128, Mask::None).kv_blocks == 0);  // a tile with no rows
}

TEST_CASE("causal, square: blocks up to the diagonal, one of them partial") {
  // Rows [256, 384) of a 1024-long sequence see keys [0, 384): blocks 0..2, block 2 crosses.
  const TileCost c = tile_cost(256, 128, 1024, 1024, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 3);
  CHECK(c.masked_blocks == 1);
  // The first tile: one block, on the diagonal.
  CHECK(tile_cost(0, 128, 1024, 1024, 128, 128, Mask::Causal).kv_blocks == 1);
  // BN = 64: rows [256, 384) → keys < 384 → 6 blocks; keys ≤ 256 seen by all rows → 4 full.
  const TileCost n64 = tile_cost(256, 128, 1024, 1024, 128, 64, Mask::Causal);
  CHECK(n64.kv_blocks == 6);
  CHECK(n64.masked_blocks == 2);
}

TEST_CASE("causal, bottom-right aligned with a cached prefix") {
  // 100 query rows after a 900-key prefix: the tile's first row sits at key position 900.
  const TileCost c = tile_cost(0, 100, 100, 1000, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 8);      // ceil(min(1000, 900 + 128) / 128)
  CHECK(c.masked_blocks == 1);  // keys ≤ 900 seen by all: 7 full blocks
}

TEST_CASE("causal, last partial tile of a ragged sequence") {
  // Sequence of 300 rows, tile at offset 256 with 44 rows: keys < 300 → 3 blocks.
  const TileCost c = tile_cost(256, 44, 300, 300, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 3);
  CHECK(c.masked_blocks == 1);
}
