// The attention problem as every role of the kernel sees it: the sizes and row layouts of Q, K and
// V, where O and LSE go, and where a tile's rows and keys are (SPEC §7, common's geometry).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <type_traits>

#include "tilesched/any_scheduler.hpp"
#include "tilesched/geometry.hpp"
#include "tilesched/types.hpp"

namespace tilesched::gpu::sm90 {

struct Problem {
  std::int32_t q_rows = 0;   // rows of Q and O (the TMA's bound)
  std::int32_t kv_rows = 0;  // rows of K and V
  u32 num_q_heads = 0;
  u32 num_kv_heads = 0;
  u32 group = 1;  // query heads per KV head
  // Decoding (SPEC §6): a tile is (sequence, KV head) and its rows are T = 2^decode_tokens_log2
  // new tokens (Workload::decode_tile_tokens, 16 to BM) for each of the group's query heads, head
  // j's tokens in rows [T j, T j + T) (output_row). The scheduler's heads are then KV heads.
  bool decoding = false;
  u32 decode_tokens_log2 = 4;
  RowLayout kv;  // where each sequence's keys are in K and V (paged: only how many)
  // A paged KV cache (attention.hpp's KvPages): sequence b's K/V block j lies in page
  // page_table[b * page_stride + j / page_blocks], which holds page_blocks blocks. Null: the
  // keys are rows of K and V from kv.start(b).
  const std::int32_t* page_table = nullptr;
  u32 page_stride = 0;
  u32 page_blocks = 1;  // page_size / BN
  // Pages that are not whole K/V blocks (page_size % BN != 0): a block is loaded as BN /
  // page_rows boxes of page_rows = gcd(page_size, BN) keys, each from its own page
  // (MainloopParams::page_rows_k/v, common's page_rows()). 0: pages of whole blocks, or no
  // paging.
  u32 page_size = 0;
  u32 page_rows = 0;
};

// The block of K/V (counted in BN-row blocks from row 0) that holds a tile's K/V block `block`:
// in a paged cache, block `block` of the sequence's pages; otherwise the sequence's own, from its
// first row (kv_partition offsets the view to it).
__device__ __forceinline__ int kv_block_in_cache(const Problem& p, u32 prompt, int block) {
  if (p.page_table == nullptr) return block;
  const u32 b = static_cast<u32>(block);
  const std::int32_t page = __ldg(p.page_table + std::size_t(prompt) * p.page_stride +
                                  b / p.page_blocks);
  return static_cast<int>(static_cast<u32>(page) * p.page_blocks + b % p.page_blocks);
}

struct Outputs {
  __nv_bfloat16* o = nullptr;
  float* lse = nullptr;
};

// A decode tile's new tokens per query head (Problem::decode_tokens_log2).
__device__ __forceinline__ u32 decode_tokens(const Problem& p) { return 1u << p.decode_tokens_log2; }

// The scheduler's tile height: BM query rows, or the decode tile's new tokens when decoding.
template <class Params>
__device__ __forceinline__ u32 tile_height(const Params& p) {
  return p.problem.decoding ? decode_tokens(p.problem) : u32(Params::Traits::kBlockM);
}

// The KV head a scheduled head reads: the scheduler's heads are query heads, or KV heads when
// decoding.
__device__ __forceinline__ u32 kv_head_of(const Problem& p, u32 head_idx) {
  return p.decoding ? head_idx : head_idx / p.group;
}

// Where row `row_in_tile` of a tile goes in O and LSE: its row of Q/O and its query head, and
// whether the tile owns it (rows past the tile's sequence, and when decoding the rows past a
// head's new tokens or past the group's heads, belong to nobody).
struct OutputRow {
  std::size_t row;
  u32 head;
  bool owned;
};
__device__ __forceinline__ OutputRow output_row(const Problem& p, const TileRows& rows,
                                                u32 head_idx, u32 row_in_tile) {
  if (!p.decoding)
    return {std::size_t(rows.first_query_row) + row_in_tile, head_idx,
            row_in_tile < rows.query_rows};
  const u32 token = row_in_tile & (decode_tokens(p) - 1), slot = row_in_tile >> p.decode_tokens_log2;
  return {std::size_t(rows.first_query_row) + token, head_idx * p.group + slot,
          token < rows.query_rows && slot < p.group};
}

// Where a tile's rows and keys are, the same for producer and consumers.
template <class Params>
__device__ __forceinline__ TileGeometry tile_geometry(const Params& p, const SeqInfo& s) {
  using Traits = typename Params::Traits;
  return tilesched::tile_geometry(p.summary.query_layout(), p.problem.kv, s, tile_height(p),
                                  Traits::kBlockN, p.softmax.causal ? Mask::Causal : Mask::None);
}

// Whether a tile has anything to compute; both roles decide it from the same SeqInfo.
__device__ __forceinline__ bool has_work(const TileGeometry& g) {
  return g.rows.query_rows > 0 && g.kv_blocks > 0;  // the splitting kinds' pieces are never empty
}

// Whether a scheduler hands out pieces of tiles (split_tail, split_kv, stream_k: each runs in a
// kernel of its own, and the AnyScheduler kernel never runs them, any_scheduler.hpp). The other
// kernels keep their code as it was without pieces (the block range's bounds as constants: one
// instruction less per K/V block).
template <class Scheduler>
inline constexpr bool kSchedulerHandsOutPieces =
    std::is_same_v<Scheduler, runtime::SplitTailScheduler> ||
    std::is_same_v<Scheduler, runtime::SplitKvScheduler> ||
    std::is_same_v<Scheduler, runtime::StreamKScheduler>;
template <class Params>
inline constexpr bool kHandsOutPieces =
    kSchedulerHandsOutPieces<std::decay_t<decltype(Params::scheduler)>>;

// The K/V blocks a tile (or a piece) runs: [begin, end).
template <class Params>
__device__ __forceinline__ int first_kv_block(const TileGeometry& g) {
  return kHandsOutPieces<Params> ? static_cast<int>(g.kv_block_begin) : 0;
}
template <class Params>
__device__ __forceinline__ int end_kv_block(const TileGeometry& g) {
  return static_cast<int>(kHandsOutPieces<Params> ? g.kv_block_end : g.kv_blocks);
}

}  // namespace tilesched::gpu::sm90
