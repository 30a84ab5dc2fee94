// The split schedules (docs/schedulers.md, "Splitting a tile's KV blocks"): a work item is a
// (tile, KV block range) piece, so a problem of few tiles (decoding, a short chunk over a long
// cache) still fills every SM. Two schedules share one mechanism:
//
//   SplitKvScheduler   every tile's KV blocks cut into chunks of a fixed number of blocks
//                      (Workload::split_kv_blocks), counted from the tile's own first block: a
//                      tile's pieces depend on its own sequence only, so its O and LSE are the
//                      same whatever its batchmates (batch-invariant). The pieces come from the
//                      queued counter (SPEC §4.2).
//   StreamKScheduler   the tiles' KV blocks laid end to end in DEFAULT tile order and cut into
//                      C contiguous ranges of equal predicted cost, one per CTA (LeanAttention's
//                      stream-K, FlashMLA's get_mla_metadata). Balanced to a block, but where a
//                      tile is cut depends on the whole batch.
//
// Both walk arrays the host builds once per problem (build_schedule_plan, schedule_plan.hpp),
// through SplitArrays, host or device copies. A tile is named by its ordinal o in the stream, the
// valid tiles in DEFAULT order; state.idx is that ordinal and traces record it as linear_idx.
//
// What a kernel needs besides the walk (the same shape as split_tail's):
//   split_of(o, kv_block_begin)  the tile's piece count, this piece's rank in KV order and the
//                                workspace slot of piece 0 (piece k's is first_slot + k); slots
//                                of split tiles only, all distinct and below piece_slots()
//   piece_slots()                workspace slots a launch needs
//   split_tile_count(), split_tile(i)
//                                the tiles cut into more than one piece, for a combine that
//                                finishes one tile per block: tile o = split_tile(i), its pieces
//                                split_of(o, 0).pieces, its rows unsafe_seq_info(summary, o)
//   work_items()                 pieces handed out in all
// A piece that is its whole tile is handed out as the tile (KV blocks [0, kAllKvBlocks)) and
// writes O and LSE itself; a piece of a split tile writes its partial state to its slot.
#pragma once

#include <cstdint>

#include "tilesched/fast_divmod.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/split_tail.hpp"

namespace tilesched {

// The arrays of a split schedule (schedule_plan.hpp's SplitPlan builds them). M is the number of
// valid tiles, S of split tiles, R of stream-K ranges, P of split_kv's pieces. The counts are
// values, so that the host plans a launch (its grid, the combine's) from arrays that are device
// copies without reading them.
struct SplitArrays {
  u32 split_tile_count = 0;           // S
  u32 piece_count = 0;                // P = piece_start[M] (split_kv)
  const u32* tiles = nullptr;         // M tile ids (DEFAULT linear index) in stream order
  const u32* block_start = nullptr;   // M+1 prefix sums of the tiles' KV blocks
  const u32* piece_start = nullptr;   // M+1 prefix sums of the tiles' pieces (split_kv)
  const u32* slot_start = nullptr;    // M+1 prefix sums of the split tiles' pieces (slots)
  const u32* split_tiles = nullptr;   // S ordinals of the tiles cut into several pieces
  const u32* range_bounds = nullptr;  // R+1 block positions, strictly increasing (stream_k)
  u32 ranges = 0;                     // R = min(C, total KV blocks) (stream_k)

  TS_HOST_DEVICE constexpr bool has_arrays(bool stream_k) const {
    return tiles != nullptr && block_start != nullptr && slot_start != nullptr &&
           (stream_k ? range_bounds != nullptr : piece_start != nullptr);
  }
};

namespace detail {

// The last i in [lo, hi) with v[i] <= x, for v non-decreasing and v[lo] <= x: a binary search of
// log2(hi - lo) reads.
TS_HOST_DEVICE constexpr u32 last_at_or_below(const u32* v, u32 lo, u32 hi, u32 x) {
  while (hi - lo > 1) {
    const u32 mid = lo + (hi - lo) / 2;
    if (v[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// What both split schedules share: the DEFAULT mapping that decodes tile ids, the arrays, and
// the look-ups that follow from them.
class SplitScheduler {
 public:
  MappingParams mapping{};  // always the DEFAULT walk: it decodes tile ids
  u32 num_ctas = 132;
  u32 tile_count = 0;  // M
  SplitArrays arrays{};

  constexpr SplitScheduler() = default;
  TS_HOST_DEVICE constexpr SplitScheduler(TileMapping m, u32 ctas, u32 tiles, SplitArrays a)
      : mapping(TileMapping{m.tile_shape, m.num_heads, Schedule::Default}),
        num_ctas(ctas),
        tile_count(tiles),
        arrays(a) {}

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const TileSummary& s, u32 o) const {
    return s.seq_info(s.unsafe_get_current_work_info(mapping, arrays.tiles[o]));
  }
  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const TileSummary& s,
                                                          const TileState& st) const {
    return st.idx < tile_count ? s.unsafe_get_current_work_info(mapping, arrays.tiles[st.idx])
                               : WorkInfo{};
  }

  // KV blocks of tile o.
  TS_HOST_DEVICE constexpr u32 tile_blocks(u32 o) const {
    return arrays.block_start[o + 1] - arrays.block_start[o];
  }
  TS_HOST_DEVICE constexpr u32 piece_slots() const {
    return tile_count == 0 ? 0u : arrays.slot_start[tile_count];
  }
  TS_HOST_DEVICE constexpr u32 split_tile_count() const { return arrays.split_tile_count; }
  TS_HOST_DEVICE constexpr u32 split_tile(u32 i) const { return arrays.split_tiles[i]; }
  // Every tile is one piece but the split ones, which are as many as their slots.
  TS_HOST_DEVICE constexpr std::uint64_t work_items() const {
    return std::uint64_t(tile_count) - split_tile_count() + piece_slots();
  }

 protected:
  // Blocks [begin, end) of tile o as a SeqInfo; the whole tile is handed out as such.
  TS_HOST_DEVICE constexpr SeqInfo piece(const TileSummary& s, u32 o, u32 begin, u32 end) const {
    SeqInfo si = unsafe_seq_info(s, o);
    if (begin != 0 || end != tile_blocks(o)) {
      si.kv_block_begin = begin;
      si.kv_block_end = end;
    }
    return si;
  }
  TS_HOST_DEVICE constexpr Optional<SeqInfo> done(TileState& st) const {
    st.idx = tile_count;  // past every tile: the walk is over
    return {};
  }
};

}  // namespace detail

namespace runtime {

// split_kv: tile o's blocks in chunks of `chunk_blocks`, piece k being blocks [k W, min((k+1) W,
// nb)). Pieces are numbered in stream order (piece_start); the counter hands them out, the first
// C statically. A queue rather than a static stride because the pieces differ in cost (each
// tile's last chunk is partial, sequences differ in length, causal tiles end in masked blocks):
// the counter gives the next piece to the CTA that is free first, and which CTA computes a piece
// never changes its result, since a tile's pieces are combined in KV order.
// TileState: idx the current tile's ordinal, tail_pos the current piece, tail_end the pieces.
class SplitKvScheduler : public detail::SplitScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::SplitKv;

  FastDivmod chunk{};  // W, the KV blocks of a chunk
  AtomicCounter counter{};

  constexpr SplitKvScheduler() = default;
  TS_HOST_DEVICE constexpr SplitKvScheduler(TileMapping m, u32 ctas, u32 tiles, SplitArrays a,
                                            u32 chunk_blocks, AtomicCounter c)
      : SplitScheduler(m, ctas, tiles, a), chunk(chunk_blocks), counter(c) {}

  // Pieces in all.
  TS_HOST_DEVICE constexpr u32 piece_count() const { return arrays.piece_count; }
  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary&) const {
    return GridDim{min_u32(num_ctas, piece_count()), 1, 1};
  }
  TS_HOST_DEVICE constexpr u32 counter_start() const { return num_ctas; }

  TS_HOST_DEVICE TileState initial_state(u32* sidx, const TileSummary&, BlockIndex block) const {
    if (detail::thread_rank() == 0) sidx[0] = block.x;
    TileState st{tile_count, sidx, tile_count};
    st.tail_pos = block.x;
    st.tail_end = piece_count();
    return st;
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> first_work(const TileSummary& s, TileState& st, u32 = 0) const {
    return current(s, st);
  }

  // The counter hand-off over piece numbers (detail::fetch_and_share), then the piece's tile.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                           u32 pipeline_idx = 0) const {
    TileState pieces{st.tail_pos, st.sidx, st.tail_end};
    detail::fetch_and_share<producer, sync>(counter, pieces, pipeline_idx,
                                            [](u32) { return true; });
    st.tail_pos = pieces.idx;
    return current(s, st);
  }

  TS_HOST_DEVICE constexpr SplitPiece split_of(u32 o, u32 kv_block_begin) const {
    SplitPiece p;
    p.tail_tile = o;
    p.pieces = arrays.piece_start[o + 1] - arrays.piece_start[o];
    p.rank = chunk.div(kv_block_begin);
    p.first_slot = arrays.slot_start[o];
    return p;
  }

 private:
  // Piece tail_pos: its tile by binary search over piece_start, then its blocks.
  TS_HOST_DEVICE constexpr Optional<SeqInfo> current(const TileSummary& s, TileState& st) const {
    if (st.tail_pos >= st.tail_end) return done(st);
    st.idx = detail::last_at_or_below(arrays.piece_start, 0, tile_count, st.tail_pos);
    const u32 begin = (st.tail_pos - arrays.piece_start[st.idx]) * chunk.divisor();
    return some(piece(s, st.idx, begin, min_u32(begin + chunk.divisor(), tile_blocks(st.idx))));
  }
};

// stream_k: CTA c processes the blocks [range_bounds[c], range_bounds[c + 1]) of the stream, as
// the pieces of the one to many tiles that range crosses, in stream order. Static: the host cut
// the ranges to equal predicted cost, so there is nothing left for a counter to balance.
// TileState: idx the current tile's ordinal, tail_pos the next block position, tail_end the
// range's end.
class StreamKScheduler : public detail::SplitScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::StreamK;

  constexpr StreamKScheduler() = default;
  TS_HOST_DEVICE constexpr StreamKScheduler(TileMapping m, u32 ctas, u32 tiles, SplitArrays a)
      : SplitScheduler(m, ctas, tiles, a) {}

  // One CTA per range: min(C, total KV blocks).
  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary&) const {
    return GridDim{arrays.ranges, 1, 1};
  }

  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary&,
                                                   BlockIndex block) const {
    TileState st{tile_count, sidx, tile_count};
    st.tail_pos = arrays.range_bounds[block.x];
    st.tail_end = arrays.range_bounds[block.x + 1];
    return st;
  }

  // The range's first tile, found by binary search over block_start.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                                        u32 = 0) const {
    if (st.tail_pos >= st.tail_end) return done(st);
    st.idx = detail::last_at_or_below(arrays.block_start, 0, tile_count, st.tail_pos);
    return next_piece(s, st);
  }

  // The previous piece ended its tile (or the range): the next one starts the next tile (every
  // tile has at least one block).
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                                     u32 = 0) const {
    if (st.tail_pos >= st.tail_end) return done(st);
    ++st.idx;
    return next_piece(s, st);
  }

  // The ranges are strictly increasing, so tile o's pieces lie in the consecutive ranges c0..c1
  // that hold its first and last block, and the piece at kv_block_begin in range c.
  TS_HOST_DEVICE constexpr SplitPiece split_of(u32 o, u32 kv_block_begin) const {
    const u32 start = arrays.block_start[o];
    const u32 c0 = range_of(start);
    SplitPiece p;
    p.tail_tile = o;
    p.pieces = range_of(arrays.block_start[o + 1] - 1) - c0 + 1;
    p.rank = range_of(start + kv_block_begin) - c0;
    p.first_slot = arrays.slot_start[o];
    return p;
  }

 private:
  TS_HOST_DEVICE constexpr u32 range_of(u32 position) const {
    return detail::last_at_or_below(arrays.range_bounds, 0, arrays.ranges, position);
  }

  TS_HOST_DEVICE constexpr Optional<SeqInfo> next_piece(const TileSummary& s, TileState& st) const {
    const u32 start = arrays.block_start[st.idx];
    const u32 end = min_u32(st.tail_end, arrays.block_start[st.idx + 1]);
    const SeqInfo si = piece(s, st.idx, st.tail_pos - start, end - start);
    st.tail_pos = end;
    return some(si);
  }
};

}  // namespace runtime

}  // namespace tilesched
