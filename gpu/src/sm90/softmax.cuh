// The consumers' softmax: each thread's two rows' running state, the mask of a tile's K/V blocks,
// and the online softmax of one block in its three forms (a masked block's max and exponentials,
// which the main loop separates; a block no mask touches, taken against the row's held max).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "sm90/problem.cuh"
#include "sm90/traits.cuh"
#include "tilesched/geometry.hpp"
#include "tilesched/types.hpp"

namespace tilesched::gpu::sm90 {

// The softmax's values: the scale, and whether the mask is causal (bottom-right aligned).
struct SoftmaxParams {
  float scale_log2 = 0.f;  // softmax scale * log2(e)
  bool causal = false;
};

// 2^x in one MUFU.EX2; results below 2^-126 flush to zero, which no softmax weight next to the
// row's max (weight 1) notices.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Running softmax state of the two rows a thread holds in the wgmma accumulator layout (rows
// lane / 4 and lane / 4 + 8 of its warp's 16): log2-domain max of scaled scores, and this
// thread's part of the sum (quad-reduced in the epilogue).
struct RowState {
  float max[2];
  float sum[2];
};

// Accumulator element e of a 64 x N wgmma fragment: column pair bit 0, row + 8 bit 1, 8-column
// block e / 4. The thread's rows are lane / 4 (+ 8) of warp w's 16 rows; columns 2 * (lane % 4)
// (+ 1) of each 8-column block.
// The thread's keys in a block are key0 + 2 * (lane % 4) plus a compile-time offset per element
// (8 * (e / 4) + e % 2), so each row's test is that offset against one signed bound, the row's
// last visible key less the thread's first key: one compare with an immediate and one select per
// element (it was about four: the key, both bounds, their conjunction).
template <class Fragment>
__device__ __forceinline__ void mask_scores(Fragment& s, u32 key0, u32 kv_len, bool causal,
                                            const u32 (&key_limit)[2]) {
  const int lane = threadIdx.x % 32;
  // kv_len >= 1 (a tile with work) and every key and row position is below 2^31 (validate()), so
  // the bounds fit an int; a negative one masks the row's whole block.
  const int first_key = static_cast<int>(key0) + 2 * (lane % 4);
  int last[2];
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const u32 last_key = causal ? min(kv_len - 1u, key_limit[r]) : kv_len - 1u;
    last[r] = static_cast<int>(last_key) - first_key;
  }
  CUTE_UNROLL
  for (int e = 0; e < cute::size(s); ++e)
    if (8 * (e / 4) + (e % 2) > last[(e / 2) % 2]) s(e) = -INFINITY;
}

// The max of row r's scores across its quad (the four threads that hold the row).
template <class Fragment>
__device__ __forceinline__ float quad_row_max(const Fragment& s, int r) {
  float m = -INFINITY;
  CUTE_UNROLL
  for (int e = 0; e < cute::size(s); ++e)
    if ((e / 2) % 2 == r) m = fmaxf(m, s(e));
  m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
  return fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
}

// Online softmax of one block, in two parts that the main loop separates (the PV wait between
// them). The first:
// each row's new max, O's rescale factor alpha, and the base the second subtracts. With
// kThreshold > 0 a row keeps its max (alpha exactly 1) unless the block's exceeds it by more than
// kThreshold (log2 units): its weights then reach at most 2^kThreshold, which bf16 P and the fp32
// sums hold, and O, the sum and the LSE all stay relative to the same max, so the result is the
// same softmax; most blocks of a long row then skip O's rescale (rescale_o's warp vote, which a
// threshold turns on whether or not kSkipUnitRescale does).
template <int kThreshold = 0, class Fragment>
__device__ __forceinline__ void softmax_max(const Fragment& s, RowState& rs, float scale_log2,
                                            float (&alpha)[2], float (&base)[2]) {
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const float m = quad_row_max(s, r);
    // The scale is positive (validated), so the max of scaled scores is the scaled max.
    float new_max = fmaxf(rs.max[r], m * scale_log2);
    if constexpr (kThreshold > 0)
      if (!(m * scale_log2 > rs.max[r] + static_cast<float>(kThreshold))) new_max = rs.max[r];
    // A row with no visible key yet keeps max -inf; subtract 0 then (exp2(-inf) = 0).
    base[r] = new_max == -INFINITY ? 0.f : new_max;
    alpha[r] = fast_exp2(rs.max[r] - base[r]);
    rs.max[r] = new_max;
  }
}

// The second: scores turned into weights in place (exp2 with the scale folded into the FFMA),
// sums updated.
template <class Fragment>
__device__ __forceinline__ void softmax_exp(Fragment& s, RowState& rs, float scale_log2,
                                            const float (&alpha)[2], const float (&base)[2]) {
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    float sum = 0.f;
    CUTE_UNROLL
    for (int e = 0; e < cute::size(s); ++e)
      if ((e / 2) % 2 == r) {
        const float x = fmaf(s(e), scale_log2, -base[r]);
        s(e) = fast_exp2(x);
        sum += s(e);
      }
    rs.sum[r] = rs.sum[r] * alpha[r] + sum;
  }
}

// Both parts: new row max, scores turned into weights in place, sums updated; alpha is each
// row's rescale factor for O.
template <int kThreshold = 0, class Fragment>
__device__ __forceinline__ void softmax_block(Fragment& s, RowState& rs, float scale_log2,
                                              float (&alpha)[2]) {
  float base[2];
  softmax_max<kThreshold>(s, rs, scale_log2, alpha, base);
  softmax_exp(s, rs, scale_log2, alpha, base);
}

// Weights w0, w1 as P's elements e and e + 1 (one packed conversion).
template <class FragmentP>
__device__ __forceinline__ void put_p_pair(FragmentP& p, int e, float w0, float w1) {
  const __nv_bfloat162 two = __floats2bfloat162_rn(w0, w1);
  p(e) = cutlass::bfloat16_t::bitcast(__bfloat16_as_ushort(two.x));
  p(e + 1) = cutlass::bfloat16_t::bitcast(__bfloat16_as_ushort(two.y));
}

// P (bf16) as the A operand of O += P V. The accumulator of S and the register A operand of the
// next wgmma order their elements alike (column pair, row + 8, column + 8 within each 16 keys),
// so P is S converted element by element. A narrow S (NarrowFirst) fills P's first elements.
template <class FragmentS, class FragmentP>
__device__ __forceinline__ void convert_to_p(const FragmentS& s, FragmentP& p) {
  static_assert(cute::size(FragmentS{}) <= cute::size(FragmentP{}), "P has S's elements");
  CUTE_UNROLL
  for (int e = 0; e < cute::size(s); e += 2) put_p_pair(p, e, s(e), s(e + 1));
}

template <class Fragment>
__device__ __forceinline__ void rescale_rows(Fragment& o, const float (&alpha)[2]) {
  CUTE_UNROLL
  for (int e = 0; e < cute::size(o); ++e) o(e) *= alpha[(e / 2) % 2];
}

// A block no mask touches, against the row's held max: no row max before the
// exponentials. Each score becomes x = scale s - base in place (base: the row's max, 0 for a row
// that has seen no key yet), its weight 2^x goes straight into P, and the block's sums are kept
// apart until they are checked. A weight can exceed 1 by any factor (2^x overflows to +inf past
// x = 128), so the block is taken only when every row's sum in the warp is at most
// kHeldSumLimit, which bounds each weight by it: P (bf16) and the fp32 sums and O hold such
// weights, and O, the sums and the LSE all stay relative to the same base, so the softmax is the
// same. Otherwise (a row whose scores jumped, or NaN) the warp takes the slow path from the x it
// kept: each row's max, a new base where that max exceeds kThreshold (softmax_max's rule), the
// weights again, O's rescale by alpha. Every value involved is the thread's or its quad's, so
// the choice is the warp's alone (a vote); no other warp waits for it.
constexpr float kHeldSumLimit = 65536.f;  // 2^16

template <int kThreshold, class FragmentS, class FragmentP, class FragmentO>
__device__ __forceinline__ void softmax_held(FragmentS& s, FragmentP& p, FragmentO& o, RowState& rs,
                                             float scale_log2) {
  float base[2];
  float sum[2] = {0.f, 0.f};
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) base[r] = rs.max[r] == -INFINITY ? 0.f : rs.max[r];
  CUTE_UNROLL
  for (int e = 0; e < cute::size(s); e += 2) {
    const int r = (e / 2) % 2;
    const float x0 = fmaf(s(e), scale_log2, -base[r]);
    const float x1 = fmaf(s(e + 1), scale_log2, -base[r]);
    s(e) = x0;
    s(e + 1) = x1;
    const float w0 = fast_exp2(x0);
    const float w1 = fast_exp2(x1);
    sum[r] += w0;
    sum[r] += w1;
    put_p_pair(p, e, w0, w1);
  }
  // NaN fails the test too.
  const bool fits = sum[0] <= kHeldSumLimit && sum[1] <= kHeldSumLimit;
  if (__all_sync(0xffffffffu, fits)) {
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      rs.sum[r] += sum[r];
      rs.max[r] = base[r];
    }
    return;
  }
  float alpha[2];
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const float m = quad_row_max(s, r);
    // Every row sees a key of this block, so m is finite (or NaN, which fails the test).
    const float shift = m > static_cast<float>(kThreshold) ? m : 0.f;
    const float new_max = base[r] + shift;
    alpha[r] = fast_exp2(rs.max[r] - new_max);  // 0 for a row that had seen no key
    float block_sum = 0.f;
    CUTE_UNROLL
    for (int e = 0; e < cute::size(s); ++e)
      if ((e / 2) % 2 == r) {
        s(e) = fast_exp2(s(e) - shift);
        block_sum += s(e);
      }
    rs.sum[r] = rs.sum[r] * alpha[r] + block_sum;
    rs.max[r] = new_max;
  }
  convert_to_p(s, p);
  rescale_rows(o, alpha);
}

// The mask of one tile's K/V blocks, for one consumer thread: its rows see keys up to their limit
// (bottom-right aligned causal rows), and keys at or past kv_len (the next sequence's, or the
// TMA's zero fill) are never visible. Processed last to first, the blocks that need it (the key
// tail, or past the warpgroup's first row's diagonal) come first (needs).
//
// With Traits::kMaskFromShared (three consumer warpgroups, 160 registers each) the test is one
// block index kept through the loop instead of the values it comes from (the tail's and the
// diagonal's first such block), and the mask's values come from shared memory, written per warp
// (MaskWords); two consumer warpgroups keep the values in registers (the index form cost d = 256
// 1-1.6 % on short dense rows, and moved d = 64 and 128 by -0.5..+1 %).
template <class Traits>
struct MaskWords {
  // Each consumer warp's values for its current tile: kv_len and its first row's last visible
  // key, written by its lane 0, read back where a block is masked.
  u32 mask_of_warp[Traits::kConsumerThreads / 32][2];
};

template <class Params>
struct TileMask {
  using Traits = typename Params::Traits;
  static constexpr int kBlockN = Traits::kBlockN;
  static constexpr int kRows = Traits::kWarpgroupRows;

  const Params& p;
  const TileGeometry& g;
  u32 diag_shift;  // a row's position in key space less its position in the sequence
  u32 wg_row0;     // the warpgroup's first row in the sequence (decoding: the tile's first token)
  u32 key_limit[2];
  u32 first_masked_block;
  u32* mask_slot;

  __device__ __forceinline__ TileMask(const Params& params, const TileGeometry& geometry,
                                      const SeqInfo& work, MaskWords<Traits>& words, int warpgroup,
                                      int warp, int lane)
      : p(params), g(geometry) {
    diag_shift = g.kv_len - g.seq_len;
    // Decoding, row r of the tile is token r % T of query head r / T (Problem::decoding, T a
    // power of two from 16 to BM): a warp's 16 rows are 16 consecutive tokens of one head, and a
    // warpgroup's 64 rows span tokens [0, T) of several heads (T < 64) or 64 consecutive tokens
    // of one (T >= 64). wg_row0 is the first token of the warpgroup's rows, warp_row0 the warp's
    // first less that.
    const u32 wg_first = static_cast<u32>(warpgroup * kRows);
    const u32 warp_first = static_cast<u32>(warp * 16);
    u32 wg_token0 = wg_first, warp_row0 = warp_first;
    if (p.problem.decoding) {
      const u32 tokens_mask = decode_tokens(p.problem) - 1u;
      wg_token0 = decode_tokens(p.problem) >= u32(kRows) ? wg_first & tokens_mask : 0u;
      warp_row0 = ((wg_first + warp_first) & tokens_mask) - wg_token0;
    }
    wg_row0 = work.prompt_offset + wg_token0;
    for (int r = 0; r < 2; ++r)
      key_limit[r] = wg_row0 + warp_row0 + static_cast<u32>(lane / 4 + 8 * r) + diag_shift;
    first_masked_block = !Traits::kMaskFromShared ? 0u
                         : p.softmax.causal
                             ? min(g.kv_len / kBlockN, (wg_row0 + diag_shift + 1) / kBlockN)
                             : g.kv_len / kBlockN;
    mask_slot = Traits::kMaskFromShared
                    ? words.mask_of_warp[warpgroup * (Traits::kWarpgroupThreads / 32) + warp]
                    : nullptr;
    if constexpr (Traits::kMaskFromShared) {
      __syncwarp();  // the warp's reads of the previous tile's values are done
      if (lane == 0) {
        mask_slot[0] = g.kv_len;
        mask_slot[1] = wg_row0 + warp_row0 + diag_shift;
      }
      __syncwarp();
    }
  }

  // Whether block `block` reaches the key tail ((b + 1) BN > kv_len) or past the warpgroup's
  // first row's diagonal ((b + 1) BN > wg_row0 + diag_shift + 1).
  __device__ __forceinline__ bool needs(int block) const {
    if constexpr (Traits::kMaskFromShared) {
      return static_cast<u32>(block) >= first_masked_block;
    } else {
      const u32 key0 = static_cast<u32>(block) * kBlockN;
      return key0 + kBlockN > g.kv_len ||
             (p.softmax.causal && key0 + kBlockN > wg_row0 + diag_shift + 1);
    }
  }

  // The end of the keys any of the warpgroup's rows sees.
  __device__ __forceinline__ u32 visible_end() const {
    const u32 rows = p.problem.decoding ? min(decode_tokens(p.problem), u32(kRows)) : u32(kRows);
    return p.softmax.causal ? min(g.kv_len, wg_row0 + diag_shift + rows) : g.kv_len;
  }

  // Scores of the block whose first key is key0: -inf where a row does not see the key.
  template <class Fragment>
  __device__ __forceinline__ void apply(Fragment& scores, u32 key0) const {
    if constexpr (Traits::kMaskFromShared) {
      const volatile u32* const values = mask_slot;  // read here, not hoisted into the loop
      const u32 row_limit = values[1] + static_cast<u32>(threadIdx.x % 32) / 4;
      const u32 limits[2] = {row_limit, row_limit + 8};
      mask_scores(scores, key0, values[0], p.softmax.causal, limits);
    } else {
      mask_scores(scores, key0, g.kv_len, p.softmax.causal, key_limit);
    }
  }
};

}  // namespace tilesched::gpu::sm90
