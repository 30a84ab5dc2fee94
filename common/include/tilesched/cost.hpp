// Per-tile geometry under the mask (SPEC §7): how many BN-wide KV blocks a tile processes and how
// many of them need masking. This count is the first-order cost of a tile, used by the
// simulator's cost model and by the kernel's loop bounds.
#pragma once

#include "tilesched/tile_summary.hpp"
#include "tilesched/types.hpp"

namespace tilesched {

struct TileCost {
  u32 kv_blocks = 0;      // BN-wide blocks of keys the tile processes
  u32 masked_blocks = 0;  // of those, blocks with at least one masked element (diagonal or tail)
};

// A tile of `query_rows` rows starting at `prompt_offset` in a sequence of `seq_len` query rows
// and `num_keys` keys. The causal mask is bottom-right aligned: query row r sees keys
// [0, r + num_keys - seq_len]. The caller guarantees num_keys >= seq_len under a causal mask.
TS_HOST_DEVICE constexpr TileCost tile_cost(u32 prompt_offset, u32 query_rows, u32 seq_len,
                                            u32 num_keys, u32 block_m, u32 block_n, Mask mask) {
  if (query_rows == 0 || num_keys == 0) return TileCost{};
  u32 key_end = num_keys;       // one past the last key any row of the tile sees
  u32 unmasked_end = num_keys;  // keys every row of the tile sees
  if (mask == Mask::Causal) {
    const u32 row0 = prompt_offset + (num_keys - seq_len);  // first row's position in key space
    key_end = min_u32(num_keys, row0 + block_m);
    unmasked_end = min_u32(num_keys, row0 + 1);
  }
  const u32 blocks = ceil_div(key_end, block_n);
  const u32 full = min_u32(unmasked_end / block_n, blocks);
  return TileCost{blocks, blocks - full};
}

}  // namespace tilesched
