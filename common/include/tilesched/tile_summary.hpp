// Where a linear work index becomes (tile, head, batch), and where a tile lands in its sequence.
// This is the one place that mapping lives (SPEC §3); the schedulers, the simulator and the
// kernel all call it.
//
// Arguments -> Params: the host describes the mapping with a TileMapping (tile height, heads,
// schedule) and the problem with TileSummary::make; both are turned once, on the host, into what
// the device reads: MappingParams (with H's divisor prepared) and a TileSummary (with T's). The
// device then maps an index with two multiply-high divisions and no `/` or `%`.
#pragma once

#include "tilesched/fast_divmod.hpp"
#include "tilesched/geometry.hpp"
#include "tilesched/types.hpp"

namespace tilesched {

// What a scheduler needs to map indices (the Arguments): the tile height, how many heads it
// iterates, the walk.
struct TileMapping {
  u32 tile_shape = 128;  // BM: query rows per work tile
  u32 num_heads = 1;     // H: query heads (prefill) or KV heads (decoding)
  Schedule schedule = Schedule::Default;
};

// A TileMapping as the device uses it (the Params): the same values, plus the division by H
// prepared on the host. The schedulers build it in their constructors.
struct MappingParams {
  u32 tile_shape = 128;
  u32 num_heads = 1;
  Schedule schedule = Schedule::Default;
  FastDivmod heads{};

  constexpr MappingParams() = default;
  TS_HOST_DEVICE constexpr explicit MappingParams(const TileMapping& m)
      : tile_shape(m.tile_shape),
        num_heads(m.num_heads),
        schedule(m.schedule),
        heads(m.num_heads) {}
};

// What the problem is (SPEC §2). row_offsets, when set, points at B+1 exclusive prefix-sum row
// offsets of the query rows (ragged batch); when null the batch is padded with S_max rows each.
// Build it with make(), which prepares the division by T.
struct TileSummary {
  u32 batch_size = 0;            // B
  u32 max_num_prompt_tiles = 0;  // T = ceil(S_max / BM)
  const u32* row_offsets = nullptr;
  u32 max_seq_len = 0;  // S_max
  FastDivmod tiles{};   // division by T

  // Build a summary for tile height `tile_shape`. The host validates the inputs first
  // (validate.hpp); this only does the arithmetic.
  TS_HOST_DEVICE static constexpr TileSummary make(u32 batch_size, u32 max_seq_len, u32 tile_shape,
                                                   const u32* row_offsets = nullptr) {
    const u32 tiles = ceil_div(max_seq_len, tile_shape);
    return TileSummary{batch_size, tiles, row_offsets, max_seq_len, FastDivmod(tiles)};
  }

  // N = T * H * B, the number of work indices.
  TS_HOST_DEVICE constexpr u32 max_idx(u32 num_heads) const {
    return max_num_prompt_tiles * num_heads * batch_size;
  }

  // Where the query rows of each sequence lie in Q and O (geometry.hpp).
  TS_HOST_DEVICE constexpr RowLayout query_layout() const {
    return RowLayout{row_offsets, max_seq_len};
  }

  // SPEC §3, with is_valid_tile = idx < N.
  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const MappingParams& m, u32 idx) const {
    WorkInfo w = unsafe_get_current_work_info(m, idx);
    w.is_valid_tile = idx < max_idx(m.num_heads);
    return w;
  }

  // SPEC §3 without the range check (is_valid_tile = true): t = idx % T, h = (idx / T) % H,
  // b = idx / (T * H) = (idx / T) / H.
  TS_HOST_DEVICE constexpr WorkInfo unsafe_get_current_work_info(const MappingParams& m,
                                                                 u32 idx) const {
    u32 t = 0, h = 0;
    const u32 head_and_prompt = tiles.divmod(idx, t);
    const u32 b = m.heads.divmod(head_and_prompt, h);
    // Odd heads walk backwards so a CTA striding through heads alternates cheap and expensive
    // causal tiles.
    if (m.schedule == Schedule::PromptRotate && (h & 1u)) t = max_num_prompt_tiles - 1 - t;
    return WorkInfo{t * m.tile_shape, h, b, true};
  }

  // The sequence a work tile belongs to (SPEC §2 SeqInfo). A padded batch's SeqInfo says
  // start_of_seq = 0, as upstream's does; tile_rows() places its rows at b * S_max.
  TS_HOST_DEVICE constexpr SeqInfo seq_info(const WorkInfo& w) const {
    SeqInfo s{};
    s.prompt_offset = w.prompt_offset;
    s.head_idx = w.head_idx;
    s.prompt_idx = w.prompt_idx;
    if (row_offsets != nullptr) {
      const RowSpan rows = query_layout().sequence(w.prompt_idx);
      s.start_of_seq = rows.start;
      s.seq_len = rows.length;
    } else {
      s.start_of_seq = 0;
      s.seq_len = max_seq_len;
    }
    return s;
  }

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const MappingParams& m, u32 idx) const {
    return seq_info(unsafe_get_current_work_info(m, idx));
  }

  // The inverse of SPEC §3: the index whose WorkInfo is (prompt_tile * BM, head, prompt).
  TS_HOST_DEVICE constexpr u32 tile_index(const MappingParams& m, u32 prompt_tile, u32 head,
                                          u32 prompt) const {
    u32 t = prompt_tile;
    if (m.schedule == Schedule::PromptRotate && (head & 1u)) t = max_num_prompt_tiles - 1 - t;
    return (prompt * m.num_heads + head) * max_num_prompt_tiles + t;
  }

  // The index whose WorkInfo is (prompt_offset, head, prompt).
  TS_HOST_DEVICE constexpr u32 linear_index(const MappingParams& m, u32 prompt_offset, u32 head,
                                            u32 prompt) const {
    return tile_index(m, prompt_offset / m.tile_shape, head, prompt);
  }
};

}  // namespace tilesched
