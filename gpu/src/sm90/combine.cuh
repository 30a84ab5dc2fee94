// The pieces of the splitting kinds (split_tail, split_kv, stream_k): a piece of a split tile
// saves its partial state (unscaled O, each row's max and its part of the sum) to a slot of the
// split workspace, and a second kernel, launched after the attention kernel, combines each split
// tile's pieces in KV-block order and writes O and LSE as the epilogue does. The three share it
// through the schedulers' one interface (split_schedules.hpp): split_of, split_tile_count,
// split_tile.
#pragma once

#include <cute/tensor.hpp>

#include "sm90/epilogue.cuh"
#include "sm90/problem.cuh"
#include "sm90/softmax.cuh"
#include "sm90/traits.cuh"
#include "tilesched/split_schedules.hpp"
#include "tilesched/split_tail.hpp"

namespace tilesched::gpu::sm90 {

struct CombineParams {
  // The pieces' slots (attention.hpp's SplitWorkspaceLayout); null but for the splitting kinds.
  float* split_partials = nullptr;
};

// Where piece `rank` of a split tile keeps one warpgroup's state. Per consumer thread
// its head_dim / 2 accumulators (unscaled O), then its two rows' max and its part of their sums;
// as float4 columns of the warpgroup's 128 threads, so that the stores and loads coalesce.
template <class Params>
__device__ __forceinline__ float* piece_state(const Params& p, const SplitPiece& piece, u32 rank,
                                              int warpgroup) {
  using Traits = typename Params::Traits;
  constexpr int kWarpgroupFloats = Traits::kWarpgroupThreads * (Traits::kHeadDim / 2 + 4);
  return p.combine.split_partials +
         std::size_t(piece.first_slot + rank) * Traits::kConsumerWarpgroups * kWarpgroupFloats +
         warpgroup * kWarpgroupFloats;
}

// Whether a consumer thread's rows (thread_row and 8 below) hold a row the tile owns
// (output_row): a piece saves, and the combine reads, only those threads' states. A decode tile
// of one new token owns one row in T (16 or more), so its pieces save at most 1/16 of the
// warpgroup's state.
template <class Params>
__device__ __forceinline__ bool owns_a_row(const Params& p, const TileRows& rows, u32 head_idx,
                                           int thread_row) {
  return output_row(p.problem, rows, head_idx, static_cast<u32>(thread_row)).owned ||
         output_row(p.problem, rows, head_idx, static_cast<u32>(thread_row + 8)).owned;
}

// A piece of a split tile at its end: its state into its slot. combine_split_tiles, launched
// after the kernel, finishes the tile. (Combining in the kernel, by the tile's last piece to
// finish or by a piece that waits for the others, made ptxas treat the tile loop as divergent
// and build the K/V loop's wgmma descriptors in ordinary registers: +85 instructions per block
// at d = 128.)
template <class Params, class FragmentO>
__device__ __forceinline__ void save_piece(const Params& p, const SplitPiece& piece, int warpgroup,
                                           int thread, const FragmentO& o, const RowState& rs) {
  constexpr int kThreads = Params::Traits::kWarpgroupThreads;
  constexpr int kAcc = decltype(cute::size(o))::value;
  static_assert(kAcc % 4 == 0 && kAcc == Params::Traits::kHeadDim / 2, "float4 columns");
  float* const mine = piece_state(p, piece, piece.rank, warpgroup);
  CUTE_UNROLL
  for (int e = 0; e < kAcc; e += 4)
    *reinterpret_cast<float4*>(mine + (e / 4) * kThreads * 4 + thread * 4) =
        make_float4(o(e), o(e + 1), o(e + 2), o(e + 3));
  *reinterpret_cast<float4*>(mine + kAcc * kThreads + thread * 4) =
      make_float4(rs.max[0], rs.max[1], rs.sum[0], rs.sum[1]);
}

// The rows the epilogue stores for a tile the consumers finished: none for a piece of a split
// tile, which saves its state for combine_split_tiles instead; the tile's own else (a piece that
// is its whole tile is handed out as the tile).
template <class Params, class FragmentO>
__device__ __forceinline__ TileRows save_if_piece(const Params& p, const SeqInfo& work,
                                                  u32 work_idx, const TileGeometry& g,
                                                  int warpgroup, int thread, const FragmentO& o,
                                                  const RowState& rs) {
  TileRows rows = g.rows;
  if constexpr (kHandsOutPieces<Params>) {
    if (work.is_piece()) {
      const SplitPiece piece = p.scheduler.split_of(work_idx, g.kv_block_begin);
      if (piece.is_split()) {
        const int thread_row = consumer_thread_row<typename Params::Traits>(warpgroup, thread);
        if (owns_a_row(p, g.rows, work.head_idx, thread_row))
          save_piece(p, piece, warpgroup, thread, o, rs);
        rows.query_rows = 0;
      }
    }
  }
  return rows;
}

// The second kernel, launched after the attention kernel on the same stream: block (i, w)
// finishes warpgroup w's rows of tile split_tile(i) from its pieces' states, in KV-block order
// (the running maxima's max; sums and unscaled O rescaled to it), so the result never depends on
// which CTA ran a piece or when, then O / sum and LSE as the attention kernel's epilogue writes
// them. 128 threads, each combining what the same consumer thread held.
template <class Params>
__global__ void __launch_bounds__(128) combine_split_tiles(const __grid_constant__ Params p) {
  using namespace cute;
  using Traits = typename Params::Traits;
  constexpr int D = Traits::kHeadDim;
  constexpr int kRows = Traits::kWarpgroupRows;
  constexpr int kThreads = Traits::kWarpgroupThreads;
  const auto& sched = p.scheduler;
  const u32 idx = sched.split_tile(blockIdx.x);
  const SplitPiece piece = sched.split_of(idx, 0);
  if (!piece.is_split()) return;  // split_tail's tail tile in one CTA's range: stored by the kernel
  const int warpgroup = static_cast<int>(blockIdx.y);
  const int thread = static_cast<int>(threadIdx.x);
  const SeqInfo tile = sched.unsafe_seq_info(p.summary, idx);
  const TileGeometry g = tile_geometry(p, tile);

  const int thread_row = consumer_thread_row<Traits>(warpgroup, thread);
  // A warpgroup whose first row the tile does not own owns none (a short tile's second
  // warpgroup; a decode tile's query heads past its group): the block leaves as one.
  if (!output_row(p.problem, g.rows, tile.head_idx, static_cast<u32>(warpgroup * kRows)).owned)
    return;
  // One new token: a decode tile owns only lanes 0-3 of the warps whose rows start a query
  // head's tokens (token 0; every warp at T = 16, every other one at T = 32). The warp's eight
  // lane groups then split the pieces (group j takes pieces j, j + 8, ...) of the
  // state lanes 0-3 saved, and add their sums in a fixed tree (lane masks 4, 8, 16), so that a
  // tile of many pieces (split_kv over a long cache) waits for an eighth of them in turn. Else each
  // thread combines its own state. Threads that read nothing stay for the shuffles.
  const bool spread = p.problem.decoding && g.rows.query_rows == 1;  // the same for the block
  const int lane = thread % 32;
  const int src = spread ? thread - lane + lane % 4 : thread;  // the thread whose state it reads
  const bool reads =
      owns_a_row(p, g.rows, tile.head_idx, consumer_thread_row<Traits>(warpgroup, src));
  const u32 first = spread ? static_cast<u32>(lane / 4) : 0u;
  const u32 step = spread ? 8u : 1u;
  const u32 pieces = reads ? piece.pieces : 0u;

  typename Traits::TiledMmaPV mma_pv;
  Tensor o = partition_fragment_C(mma_pv, Shape<Int<kRows>, Int<D>>{});
  constexpr int kAcc = decltype(size(o))::value;
  RowState rs{{-INFINITY, -INFINITY}, {0.f, 0.f}};
  clear(o);
  // Each piece's loads are independent of the last piece's sums: the loops are unrolled so that
  // several pieces' loads can be in flight at once.
#pragma unroll 8
  for (u32 k = first; k < pieces; k += step) {
    const float* const state = piece_state(p, piece, k, warpgroup);
    const float4 ms = __ldcg(reinterpret_cast<const float4*>(state + kAcc * kThreads + src * 4));
    rs.max[0] = fmaxf(rs.max[0], ms.x);
    rs.max[1] = fmaxf(rs.max[1], ms.y);
  }
  if (spread) {
    CUTE_UNROLL
    for (int mask = 4; mask <= 16; mask *= 2) {
      rs.max[0] = fmaxf(rs.max[0], __shfl_xor_sync(0xffffffffu, rs.max[0], mask));
      rs.max[1] = fmaxf(rs.max[1], __shfl_xor_sync(0xffffffffu, rs.max[1], mask));
    }
  }
#pragma unroll 4
  for (u32 k = first; k < pieces; k += step) {
    const float* const state = piece_state(p, piece, k, warpgroup);
    const float4 ms = __ldcg(reinterpret_cast<const float4*>(state + kAcc * kThreads + src * 4));
    // A row no piece saw a key of keeps max -inf and weight 0.
    const float w[2] = {rs.max[0] == -INFINITY ? 0.f : fast_exp2(ms.x - rs.max[0]),
                        rs.max[1] == -INFINITY ? 0.f : fast_exp2(ms.y - rs.max[1])};
    rs.sum[0] += w[0] * ms.z;
    rs.sum[1] += w[1] * ms.w;
    CUTE_UNROLL
    for (int e = 0; e < kAcc; e += 4) {
      const float4 a =
          __ldcg(reinterpret_cast<const float4*>(state + (e / 4) * kThreads * 4 + src * 4));
      o(e) += w[(e / 2) % 2] * a.x;
      o(e + 1) += w[(e / 2) % 2] * a.y;
      o(e + 2) += w[((e + 2) / 2) % 2] * a.z;
      o(e + 3) += w[((e + 2) / 2) % 2] * a.w;
    }
  }
  if (spread) {
    CUTE_UNROLL
    for (int mask = 4; mask <= 16; mask *= 2) {
      rs.sum[0] += __shfl_xor_sync(0xffffffffu, rs.sum[0], mask);
      rs.sum[1] += __shfl_xor_sync(0xffffffffu, rs.sum[1], mask);
      CUTE_UNROLL
      for (int e = 0; e < kAcc; ++e) o(e) += __shfl_xor_sync(0xffffffffu, o(e), mask);
    }
  }
  // Lanes past the first group hold the sums too, but own no row: they store nothing.
  Tensor out = make_tensor_like<Element>(o);
  normalize_rows(p, o, rs, g.rows, tile.head_idx, thread_row, out);
  store_tile_outputs(p, out, g.rows, tile.head_idx, thread_row);
}

}  // namespace tilesched::gpu::sm90
