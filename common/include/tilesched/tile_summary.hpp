// Where a linear work index becomes (tile, head, batch), and where a tile lands in its sequence.
// This is the one place that mapping lives (SPEC §3); the schedulers, the simulator and the
// kernel all call it.
#pragma once

#include "tilesched/types.hpp"

namespace tilesched {

// What a scheduler needs to map indices: the tile height, how many heads it iterates, the walk.
struct TileMapping {
  u32 tile_shape = 128;  // BM: query rows per work tile
  u32 num_heads = 1;     // H: query heads (prefill) or KV heads (decoding)
  Schedule schedule = Schedule::Default;
};

TS_HOST_DEVICE constexpr u32 ceil_div(u32 a, u32 b) {
  return (a + b - 1) / b;
}
TS_HOST_DEVICE constexpr u32 min_u32(u32 a, u32 b) {
  return a < b ? a : b;
}

// What the problem is (SPEC §2). valid_length, when set, points at B+1 exclusive prefix-sum row
// offsets of the query rows (ragged batch); when null the batch is padded with S_max rows each.
struct TileSummary {
  u32 batch_size = 0;            // B
  u32 max_num_prompt_tiles = 0;  // T = ceil(S_max / BM)
  const u32* valid_length = nullptr;
  u32 max_seq_len = 0;  // S_max

  // Build a summary for tile height `tile_shape`. The host validates the inputs first
  // (validate.hpp); this only does the arithmetic.
  TS_HOST_DEVICE static constexpr TileSummary make(u32 batch_size, u32 max_seq_len, u32 tile_shape,
                                                   const u32* row_offsets = nullptr) {
    return TileSummary{batch_size, ceil_div(max_seq_len, tile_shape), row_offsets, max_seq_len};
  }

  // N = T * H * B, the number of work indices.
  TS_HOST_DEVICE constexpr u32 max_idx(u32 num_heads) const {
    return max_num_prompt_tiles * num_heads * batch_size;
  }

  // SPEC §3, with is_valid_tile = idx < N.
  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const TileMapping& m, u32 idx) const {
    WorkInfo w = unsafe_get_current_work_info(m, idx);
    w.is_valid_tile = idx < max_idx(m.num_heads);
    return w;
  }

  // SPEC §3 without the range check (is_valid_tile = true).
  TS_HOST_DEVICE constexpr WorkInfo unsafe_get_current_work_info(const TileMapping& m,
                                                                 u32 idx) const {
    const u32 tiles = max_num_prompt_tiles;
    u32 t = idx % tiles;
    const u32 h = (idx / tiles) % m.num_heads;
    const u32 b = idx / (tiles * m.num_heads);
    // Odd heads walk backwards so a CTA striding through heads alternates cheap and expensive
    // causal tiles.
    if (m.schedule == Schedule::PromptRotate && (h & 1u)) t = tiles - 1 - t;
    return WorkInfo{t * m.tile_shape, h, b, true};
  }

  // The sequence a work tile belongs to (SPEC §2 SeqInfo).
  TS_HOST_DEVICE constexpr SeqInfo seq_info(const WorkInfo& w) const {
    SeqInfo s{};
    s.prompt_offset = w.prompt_offset;
    s.head_idx = w.head_idx;
    s.prompt_idx = w.prompt_idx;
    if (valid_length != nullptr) {
      s.start_of_seq = valid_length[w.prompt_idx];
      s.seq_len = valid_length[w.prompt_idx + 1] - s.start_of_seq;
    } else {
      s.start_of_seq = 0;
      s.seq_len = max_seq_len;
    }
    return s;
  }

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const TileMapping& m, u32 idx) const {
    return seq_info(unsafe_get_current_work_info(m, idx));
  }

  // The inverse of SPEC §3: the index whose WorkInfo is (prompt_offset, head, prompt).
  TS_HOST_DEVICE constexpr u32 linear_index(const TileMapping& m, u32 prompt_offset, u32 head,
                                            u32 prompt) const {
    u32 t = prompt_offset / m.tile_shape;
    if (m.schedule == Schedule::PromptRotate && (head & 1u)) t = max_num_prompt_tiles - 1 - t;
    return (prompt * m.num_heads + head) * max_num_prompt_tiles + t;
  }
};

// Query rows a tile owns: [first_query_row, first_query_row + query_rows). Padded batches lay
// sequence b at b * S_max. A tile that starts at or past its sequence's end owns no rows.
struct TileRows {
  u32 first_query_row = 0;
  u32 query_rows = 0;
};

TS_HOST_DEVICE constexpr TileRows tile_rows(const TileSummary& summary, const SeqInfo& s,
                                            u32 tile_shape) {
  const u32 base =
      summary.valid_length != nullptr ? s.start_of_seq : s.prompt_idx * summary.max_seq_len;
  const u32 rows =
      s.seq_len > s.prompt_offset ? min_u32(s.seq_len - s.prompt_offset, tile_shape) : 0u;
  return TileRows{base + s.prompt_offset, rows};
}

// Upstream's row count for a tile (SPEC §5, faithful mode): min(seq_len - prompt_offset, BM) in
// wrapping unsigned arithmetic, so a tile past its sequence's end claims BM rows.
TS_HOST_DEVICE constexpr u32 faithful_query_rows(const SeqInfo& s, u32 tile_shape) {
  return min_u32(s.seq_len - s.prompt_offset, tile_shape);
}

}  // namespace tilesched
