// Where a work tile is in the buffers (SPEC §7): its query rows in Q/O, its sequence's keys in
// K/V, and the keys it processes under the mask. The one place this geometry is written: the
// simulator (replay, attention, checks), the cost model and the kernel all call it.
#pragma once

#include "tilesched/config.hpp"
#include "tilesched/types.hpp"

namespace tilesched {

// New tokens a decode sequence may have (SPEC §6): 1 for plain decoding, up to 16 for the
// verification step of speculative decoding. It is also a decode tile's height, so that one tile
// holds all of a sequence's new tokens whatever its batchmates have. A sequence of more new
// tokens in a decoding workload is a prefill (or chunked-prefill) sequence of a mixed batch: it
// spans several tiles of this height.
inline constexpr u32 kMaxDecodeTokens = 16;

// Rows [start, start + length) of a buffer.
struct RowSpan {
  u32 start = 0;
  u32 length = 0;
};

// Where each sequence's rows lie in a buffer of the batch. A ragged batch packs them at B+1
// exclusive prefix-sum offsets; a padded batch gives every sequence padded_len rows, sequence b
// at b * padded_len (queries: S_max; keys: the longest key length). Q/O and K/V each have one.
struct RowLayout {
  const u32* row_offsets = nullptr;  // B+1 entries (ragged batch); null for a padded batch
  u32 padded_len = 0;                // rows per sequence of a padded batch

  TS_HOST_DEVICE constexpr u32 start(u32 prompt) const {
    return row_offsets != nullptr ? row_offsets[prompt] : prompt * padded_len;
  }
  TS_HOST_DEVICE constexpr RowSpan sequence(u32 prompt) const {
    if (row_offsets == nullptr) return RowSpan{prompt * padded_len, padded_len};
    return RowSpan{row_offsets[prompt], row_offsets[prompt + 1] - row_offsets[prompt]};
  }
};

// Query rows a tile starting at prompt_offset owns in a sequence of seq_len rows: at most BM, and
// none when it starts at or past the sequence's end.
TS_HOST_DEVICE constexpr u32 tile_query_rows(u32 seq_len, u32 prompt_offset, u32 tile_shape) {
  return seq_len > prompt_offset ? min_u32(seq_len - prompt_offset, tile_shape) : 0u;
}

// Upstream's row count for a tile (SPEC §5, faithful mode): min(seq_len - prompt_offset, BM) in
// wrapping unsigned arithmetic, so a tile past its sequence's end claims BM rows.
TS_HOST_DEVICE constexpr u32 faithful_query_rows(const SeqInfo& s, u32 tile_shape) {
  return min_u32(s.seq_len - s.prompt_offset, tile_shape);
}

// The first query row of the tile at prompt_offset in sequence `prompt`.
TS_HOST_DEVICE constexpr u32 tile_first_row(const RowLayout& queries, u32 prompt,
                                            u32 prompt_offset) {
  return queries.start(prompt) + prompt_offset;
}

// The prompt_offset of the tile that owns position `position` of its sequence.
TS_HOST_DEVICE constexpr u32 owning_tile_offset(u32 position, u32 tile_shape) {
  return position / tile_shape * tile_shape;
}

// Query rows a tile owns: [first_query_row, first_query_row + query_rows).
struct TileRows {
  u32 first_query_row = 0;
  u32 query_rows = 0;
};

TS_HOST_DEVICE constexpr TileRows tile_rows(const RowLayout& queries, const SeqInfo& s,
                                            u32 tile_shape) {
  return TileRows{tile_first_row(queries, s.prompt_idx, s.prompt_offset),
                  tile_query_rows(s.seq_len, s.prompt_offset, tile_shape)};
}

// One past the last key that any of the query rows [first_pos, first_pos + rows) of a sequence
// sees. Without a mask every row sees all num_keys keys; the causal mask is bottom-right aligned:
// row r sees keys [0, r + num_keys - seq_len] (the caller guarantees num_keys >= seq_len).
TS_HOST_DEVICE constexpr u32 visible_key_end(u32 first_pos, u32 rows, u32 seq_len, u32 num_keys,
                                             Mask mask) {
  if (mask != Mask::Causal) return num_keys;
  return min_u32(num_keys, first_pos + rows + (num_keys - seq_len));
}

struct TileCost {
  u32 kv_blocks = 0;      // BN-wide blocks of keys the tile processes
  u32 masked_blocks = 0;  // of those, blocks with at least one masked element (diagonal or tail)
};

// The KV blocks of a tile of `query_rows` rows starting at `prompt_offset` in a sequence of
// `seq_len` query rows and `num_keys` keys: the blocks covering the keys its BM rows see. This
// count is the first-order cost of a tile (the simulator's cost model) and the kernel's loop
// bound.
TS_HOST_DEVICE constexpr TileCost tile_cost(u32 prompt_offset, u32 query_rows, u32 seq_len,
                                            u32 num_keys, u32 block_m, u32 block_n, Mask mask) {
  if (query_rows == 0 || num_keys == 0) return TileCost{};
  const u32 key_end = visible_key_end(prompt_offset, block_m, seq_len, num_keys, mask);
  const u32 unmasked_end = visible_key_end(prompt_offset, 1, seq_len, num_keys, mask);
  const u32 blocks = ceil_div(key_end, block_n);
  const u32 full = min_u32(unmasked_end / block_n, blocks);
  return TileCost{blocks, blocks - full};
}

// The cost of KV blocks [begin, end) of a tile whose whole cost is `c` (a split_tail piece): the
// masked blocks are a tile's last ones.
TS_HOST_DEVICE constexpr TileCost piece_cost(TileCost c, u32 begin, u32 end) {
  end = min_u32(end, c.kv_blocks);
  begin = min_u32(begin, end);
  const u32 first_masked = c.kv_blocks - c.masked_blocks;
  const u32 from = begin > first_masked ? begin : first_masked;
  return TileCost{end - begin, end > from ? end - from : 0u};
}

// The keys of one TMA box of a paged cache's K/V block load: gcd(page_size, BN), so that a box
// never crosses a page and the boxes tile the block; 0 where pages hold whole blocks (one box per
// block) or there are no pages (page_size 0). The kernel loads a block this way
// (gpu/src/sm90/problem.cuh, Problem::page_rows); the cost model counts its boxes.
TS_HOST_DEVICE constexpr u32 page_rows(u32 page_size, u32 block_n) {
  if (page_size == 0 || block_n == 0 || page_size % block_n == 0) return 0;
  u32 a = page_size, b = block_n;
  while (b != 0) {
    const u32 r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// TMA boxes per K/V block of BN keys (per 64-column slice of the head dim): BN / page_rows, each
// from its own page; 1 where one copy loads the block (pages of whole blocks, or no pages).
TS_HOST_DEVICE constexpr u32 kv_block_boxes(u32 page_size, u32 block_n) {
  const u32 rows = page_rows(page_size, block_n);
  return rows == 0 ? 1u : block_n / rows;
}

// Everything the kernel needs to know about where a tile's data is.
struct TileGeometry {
  TileRows rows;  // query rows the tile owns (safe ragged mode: never more)
  u32 seq_len;    // query rows of its sequence
  u32 kv_start;   // first key row of its sequence in K/V
  u32 kv_len;     // keys of its sequence
  u32 kv_blocks;  // BN-wide KV blocks its rows see (the whole tile's)
  // The blocks this work item processes, [kv_block_begin, kv_block_end) of those: all of them
  // but for split_tail's pieces (SeqInfo).
  u32 kv_block_begin;
  u32 kv_block_end;

  TS_HOST_DEVICE constexpr u32 piece_blocks() const { return kv_block_end - kv_block_begin; }
};

TS_HOST_DEVICE constexpr TileGeometry tile_geometry(const RowLayout& queries, const RowLayout& keys,
                                                    const SeqInfo& s, u32 block_m, u32 block_n,
                                                    Mask mask) {
  TileGeometry g{};
  g.rows = tile_rows(queries, s, block_m);
  g.seq_len = s.seq_len;
  const RowSpan kv = keys.sequence(s.prompt_idx);
  g.kv_start = kv.start;
  g.kv_len = kv.length;
  g.kv_blocks =
      tile_cost(s.prompt_offset, g.rows.query_rows, g.seq_len, g.kv_len, block_m, block_n, mask)
          .kv_blocks;
  g.kv_block_end = min_u32(s.kv_block_end, g.kv_blocks);
  g.kv_block_begin = min_u32(s.kv_block_begin, g.kv_block_end);
  return g;
}

}  // namespace tilesched
