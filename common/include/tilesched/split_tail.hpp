// split_tail (docs/schedulers.md): a persistent, static scheduler for problems whose tiles all
// cost the same (no mask, every sequence of one query length and one key length), where the only
// imbalance is the last wave. N tiles over C CTAs run in N / C full waves and a last wave of
// R = N mod C tiles, during which C - R CTAs idle: at N = 2048 and C = 132 (d = 128, 16k tokens,
// 16 heads) 3 % of the GPU's time. split_tail runs the full waves as the tile scheduler does (CTA
// c takes c, c + C, ... below F = N - R), then splits the last R tiles' KV blocks evenly over all
// C CTAs: laid end to end they are P = R * nb blocks (nb the KV blocks of every tile), and CTA c
// takes positions [c W, min((c + 1) W, P)), W = ceil(P / C), as the pieces of the one to a few
// tiles that range crosses, in position order. A piece is a SeqInfo whose KV block range is part
// of its tile's. A tile cut into pieces is finished from their running softmax states (max, sum,
// unscaled O), combined in KV-block order: the simulator does it once all are computed, the GPU
// in a second kernel after the attention kernel (gpu/src/sm90/combine.cuh). No CTA waits for
// another.
//
// What a kernel needs besides the walk: split_of(idx, kv_block_begin) names a piece's tile among
// the tail's, how many pieces that tile has, which one this is, and the workspace slot of each:
// piece k of tail tile t lies in CTA c0 + k's range, and its slot is c0 + k + t, unique among all
// pieces and below C + R (piece_slots()).
#pragma once

#include <cstdint>

#include "tilesched/fast_divmod.hpp"
#include "tilesched/scheduler.hpp"

namespace tilesched {

// Where a piece of a split tile is, and its siblings (split_tail; split_kv and stream_k,
// split_schedules.hpp).
struct SplitPiece {
  u32 tail_tile = 0;   // the tile's position among the tail's R tiles (split_kv, stream_k: its
                       // place in the stream)
  u32 pieces = 1;      // how many pieces the tile is cut into (1: not split)
  u32 rank = 0;        // this piece's place among them, in KV block order
  u32 first_slot = 0;  // workspace slot of piece 0; piece k's is first_slot + k

  TS_HOST_DEVICE constexpr bool is_split() const { return pieces > 1; }
};

namespace runtime {

class SplitTailScheduler : public detail::MappedScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::SplitTail;

  u32 num_ctas = 132;
  u32 full_tiles = 0;        // F = N - R: the tiles of the full waves
  u32 tail_blocks = 0;       // P = R * nb
  u32 range = 0;             // W = ceil(P / C): tail blocks per CTA (0 when there is no tail)
  FastDivmod tile_blocks{};  // nb, the KV blocks of every tile
  FastDivmod by_range{};     // W

  constexpr SplitTailScheduler() = default;
  // Arguments -> Params on the host: `tiles` is N, `blocks_per_tile` nb (>= 1). The host has
  // checked that N + C and P + W fit in 32 bits (Workload::validate).
  TS_HOST_DEVICE constexpr SplitTailScheduler(TileMapping m, u32 ctas, u32 tiles,
                                              u32 blocks_per_tile)
      : MappedScheduler{MappingParams(m)},
        num_ctas(ctas),
        full_tiles(tiles - tiles % (ctas == 0 ? 1u : ctas)),
        tail_blocks((tiles - full_tiles) * blocks_per_tile),
        range(ceil_div(tail_blocks, ctas == 0 ? 1u : ctas)),
        tile_blocks(blocks_per_tile),
        by_range(range) {}

  // Every CTA of C takes part in the tail, even when N < C.
  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary& s) const {
    return GridDim{s.max_idx(mapping.num_heads) == 0 ? 0u : num_ctas, 1, 1};
  }

  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary& s,
                                                   BlockIndex block) const {
    TileState st{block.x, sidx, s.max_idx(mapping.num_heads)};
    st.tail_pos = min_u32(block.x * range, tail_blocks);  // no wrap: block.x < C, C * W < P + C
    st.tail_end = min_u32(st.tail_pos + range, tail_blocks);
    return st;
  }

  // Tiles of the tail (R).
  TS_HOST_DEVICE constexpr u32 tail_tiles() const {
    return range == 0 ? 0u : tail_blocks / tile_blocks.divisor();
  }
  // Workspace slots a kernel needs for the pieces: every slot split_of gives is below C + R.
  TS_HOST_DEVICE constexpr u32 piece_slots() const { return num_ctas + tail_tiles(); }
  // The tiles a combine finishes, as split_kv and stream_k name theirs (split_schedules.hpp): the
  // tail's R tiles, F + i. A tail tile that lies in one CTA's range is not split (split_of gives
  // it one piece, which stored its rows itself), so a combine skips it.
  TS_HOST_DEVICE constexpr u32 split_tile_count() const { return tail_tiles(); }
  TS_HOST_DEVICE constexpr u32 split_tile(u32 i) const { return full_tiles + i; }

  // What the walk hands out in all: the full waves' tiles and the tail's pieces (a tile crossed
  // by k CTAs' ranges is k pieces). Host side: a loop over the tail's tiles.
  constexpr std::uint64_t work_items() const {
    std::uint64_t n = full_tiles;
    for (u32 t = 0; t < tail_tiles(); ++t) n += split_of(full_tiles + t, 0).pieces;
    return n;
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                                        u32 = 0) const {
    if (st.idx < full_tiles) return some(unsafe_seq_info(s, st.idx));
    return next_piece(s, st);
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                                     u32 = 0) const {
    if (st.idx < full_tiles) {
      st.idx += num_ctas;
      if (st.idx < full_tiles) return some(unsafe_seq_info(s, st.idx));
    }
    return next_piece(s, st);
  }

  // The piece that begins at KV block `kv_block_begin` of tile `idx` (idx >= F; a piece this
  // scheduler handed out).
  TS_HOST_DEVICE constexpr SplitPiece split_of(u32 idx, u32 kv_block_begin) const {
    SplitPiece p;
    if (idx < full_tiles || range == 0) return p;
    const u32 nb = tile_blocks.divisor();
    p.tail_tile = idx - full_tiles;
    const u32 first = p.tail_tile * nb;  // the tile's first position
    const u32 c0 = by_range.div(first);
    const u32 c1 = by_range.div(first + nb - 1);
    p.pieces = c1 - c0 + 1;
    p.rank = by_range.div(first + kv_block_begin) - c0;
    p.first_slot = c0 + p.tail_tile;
    return p;
  }

 private:
  // The next piece of this CTA's tail range, or none once it is used up.
  TS_HOST_DEVICE constexpr Optional<SeqInfo> next_piece(const TileSummary& s, TileState& st) const {
    if (st.tail_pos >= st.tail_end) {
      st.idx = st.max_idx;  // past every tile: the walk is over
      return {};
    }
    u32 begin = 0;
    const u32 t = tile_blocks.divmod(st.tail_pos, begin);
    const u32 nb = tile_blocks.divisor();
    const u32 end = min_u32(st.tail_end - t * nb, nb);
    st.idx = full_tiles + t;
    st.tail_pos = t * nb + end;
    SeqInfo si = unsafe_seq_info(s, st.idx);
    si.kv_block_begin = begin;
    si.kv_block_end = end;
    // A piece that is its whole tile is handed out as the tile.
    if (begin == 0 && end == nb) si.kv_block_end = kAllKvBlocks;
    return some(si);
  }
};

}  // namespace runtime

// The compile-time face, as for the other schedulers.
template <u32 TileShape, u32 NumHeads, u32 NumCtas = 132, Schedule Sched = Schedule::Default>
struct SplitTailScheduler : runtime::SplitTailScheduler {
  TS_HOST_DEVICE constexpr SplitTailScheduler(u32 tiles, u32 blocks_per_tile)
      : runtime::SplitTailScheduler(TileMapping{TileShape, NumHeads, Sched}, NumCtas, tiles,
                                    blocks_per_tile) {}
};

}  // namespace tilesched
