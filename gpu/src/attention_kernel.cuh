// The persistent flash-attention forward kernel (FA2-style, mma.sync on bf16 tensor cores).
//
// One CTA works on one 128-row query tile at a time; each warp owns MT 16-row mma tiles of it
// (MT = 2: 4 warps of 32 rows, every K/V fragment read from shared memory feeds two mma, halving
// shared-memory traffic per FLOP; MT = 1: 8 warps of 16 rows, for d = 256 whose accumulators
// would not fit twice in registers). For each BN-key block (64 by default) it computes S = Q K^T
// in registers, updates a running max and sum per row (online softmax, exp2 on log2e-scaled
// scores), and accumulates O += P V, with P converted in registers from the S accumulators. K/V
// blocks are double-buffered in shared memory with cp.async so the next block loads while this
// one is computed.
//
// Which tiles a CTA processes is the scheduler's business only: the kernel is templated on a
// runtime scheduler of common/ and runs the same loop as the simulator (scheduler.hpp).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "tilesched/gpu/attention.hpp"
#include "tilesched/tilesched.hpp"

namespace tilesched::gpu::detail {

using bf16 = __nv_bfloat16;

inline constexpr int kBlockM = static_cast<int>(kKernelBlockM);

// Warps and threads per CTA when each warp owns MT 16-row mma tiles of the 128-row query tile.
template <int MT>
__host__ __device__ constexpr int threads_per_cta() {
  return kBlockM / (16 * MT) * 32;
}
// CTAs per SM the launch bound asks the compiler to fit in registers: two 128-thread CTAs (up to
// 255 registers each thread) keep 8 warps per SM with independent barriers.
template <int MT>
__host__ __device__ constexpr int ctas_per_sm() {
  return MT == 2 ? 2 : 1;
}

// Everything the kernel reads besides the scheduler and the summary (host Arguments -> Params).
struct KernelParams {
  const bf16* q;
  const bf16* k;
  const bf16* v;
  bf16* o;
  float* lse;
  RowLayout kv;  // where each sequence's keys are in K and V (geometry.hpp)
  u32 num_q_heads;
  u32 num_kv_heads;
  u32 group;         // query heads per KV head
  float scale_log2;  // softmax scale * log2(e)
  bool causal;
  u32 trace_block_n;  // the workload's BN: kv_blocks in the trace use it (SPEC §7)
  TraceBuffer trace;
};

// Shared-memory footprint: the Q tile and two stages of K and V blocks of BN keys.
template <int D, int BN>
constexpr int smem_bytes() {
  return (kBlockM * D + 2 * 2 * BN * D) * static_cast<int>(sizeof(bf16));
}

// ---- small PTX wrappers -------------------------------------------------------------------------

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; src_bytes = 0 fills the destination with zeros without reading (rows past
// the sequence or the tile must not be read: they may belong to another sequence or lie past the
// buffer).
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// C(16x8, fp32) += A(16x16, bf16, row) * B(16x8, bf16, col).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ u32 pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const u32*>(&v);
}

// 2^x in one MUFU.EX2. exp2f() also handles denormal results with extra instructions per call;
// softmax weights below 2^-126 contribute nothing next to the row's max (weight 1), so flushing
// them to zero changes no result and saves issue slots in the hottest loop.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ u32 sm_id() {
  u32 id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Shared-memory tiles are [rows][D] bf16 with the 16-byte chunks of each row XOR-swizzled by the
// row's low 3 bits: the 8 rows one ldmatrix reads then hit 8 different bank groups instead of one.
template <int D>
__device__ __forceinline__ int swizzled(int row, int col) {
  return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

// Copies `rows` rows (the tile's height) of D elements from global rows `src` (stride in elements)
// into a swizzled shared tile; rows at or past `valid_rows` become zeros.
template <int D, int Rows, int kThreads>
__device__ __forceinline__ void load_tile(bf16* dst, const bf16* src, std::size_t stride,
                                          int valid_rows) {
  constexpr int kChunks = D / 8;
  for (int c = threadIdx.x; c < Rows * kChunks; c += kThreads) {
    const int row = c / kChunks;
    const int col = (c % kChunks) * 8;
    const bool valid = row < valid_rows;
    const bf16* from = valid ? src + row * stride + col : src;
    cp_async_16(dst + swizzled<D>(row, col), from, valid);
  }
}

// load_tile with the loop unrolled over each thread's chunks: a thread's chunks are kThreads /
// kChunks rows apart, in the same column and the same swizzle, so each one is the first plus a
// constant in shared memory and a multiple of the stride in global memory.
template <int D, int Rows, int kThreads>
__device__ __forceinline__ void load_tile_unrolled(bf16* dst, const bf16* src, std::size_t stride,
                                                   int valid_rows) {
  constexpr int kChunks = D / 8;
  constexpr int kRowStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && Rows % kRowStep == 0, "whole rows per pass");
  const int row0 = threadIdx.x / kChunks;
  const int col = (threadIdx.x % kChunks) * 8;
  bf16* to = dst + swizzled<D>(row0, col);
  const bf16* from = src + row0 * stride + col;
#pragma unroll
  for (int i = 0; i < Rows / kRowStep; ++i) {
    const bool valid = row0 + i * kRowStep < valid_rows;
    cp_async_16(to + i * kRowStep * D, valid ? from + i * kRowStep * stride : src, valid);
  }
}

// ---- fragments and the three stages of a KV block --------------------------------------------

// A fragment (16 x 16) of the Q rows row0.. for k-slice kk.
template <int D>
__device__ __forceinline__ void load_q_fragment(u32 (&a)[4], const bf16* sq, int row0, int kk,
                                                int lane) {
  ldmatrix_x4(a, sq + swizzled<D>(row0 + (lane % 16), kk * 16 + (lane / 16) * 8));
}
// B fragments of two 8-key tiles (keys 16*np..) for k-slice kk. Matrices: (keys 0-7, k 0-7),
// (keys 0-7, k 8-15), (keys 8-15, k 0-7), (keys 8-15, k 8-15).
template <int D>
__device__ __forceinline__ void load_k_fragment(u32 (&b)[4], const bf16* k_tile, int np, int kk,
                                                int lane) {
  const int m = lane / 8;
  ldmatrix_x4(b, k_tile + swizzled<D>(np * 16 + (m / 2) * 8 + lane % 8, kk * 16 + (m % 2) * 8));
}
// B fragments of two 8-wide column tiles of V (columns 16*dp..) for keys 16*kk.. (transposed
// matrices: (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d 8-15), (keys 8-15, d 8-15)).
template <int D>
__device__ __forceinline__ void load_v_fragment(u32 (&b)[4], const bf16* v_tile, int kk, int dp,
                                                int lane) {
  const int m = lane / 8;
  ldmatrix_x4_trans(b,
                    v_tile + swizzled<D>(kk * 16 + (m % 2) * 8 + lane % 8, dp * 16 + (m / 2) * 8));
}

// S = Q K^T for the warp's m tiles (rows warp_row0..) and the block's keys; each K fragment feeds
// every m tile.
template <int D, int kNTiles, int kMTiles>
__device__ __forceinline__ void compute_scores(float (&sc)[kMTiles][kNTiles][4], const bf16* sq,
                                               int warp_row0, const bf16* k_tile, int lane) {
  constexpr int kPairs = kNTiles / 2;
  constexpr int kSteps = D / 16 * kPairs;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int n = 0; n < kNTiles; ++n)
      sc[mt][n][0] = sc[mt][n][1] = sc[mt][n][2] = sc[mt][n][3] = 0.f;
  u32 a[kMTiles][4];
  u32 b[4];
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    const int kk = step / kPairs;
    const int np = step % kPairs;
    if (np == 0)
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
        load_q_fragment<D>(a[mt], sq, warp_row0 + 16 * mt, kk, lane);
    load_k_fragment<D>(b, k_tile, np, kk, lane);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      mma_bf16(sc[mt][2 * np], a[mt], b[0], b[1]);
      mma_bf16(sc[mt][2 * np + 1], a[mt], b[2], b[3]);
    }
  }
}

// What the mask of one KV block needs to know about it and the thread's rows.
struct BlockMask {
  bool needed;  // the block reaches past the key tail or the warp's first diagonal
  bool causal;
  u32 key0;  // first key of the block
  u32 kv_len;
  u32 key_limit[2];  // last key each of the thread's two rows sees (bottom-right aligned)
};

// Sets the scores of keys past the sequence and, causally, past each row's diagonal to -inf. A
// pass of its own before the softmax, taken only for blocks that need it (ptxas: fewer spills
// than testing the mask inside the softmax loop).
template <int kNTiles>
__device__ __forceinline__ void apply_mask(float (&sc)[kNTiles][4], const BlockMask& mask,
                                           int lane) {
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const u32 key = mask.key0 + n * 8 + 2 * (lane % 4) + (e & 1);
      const bool visible = key < mask.kv_len && (!mask.causal || key <= mask.key_limit[e / 2]);
      if (!visible) sc[n][e] = -INFINITY;
    }
}

// Online softmax for one m tile (scores already masked): update the running max (log2 domain) and
// sum of the thread's two rows, rescale their O accumulators, and turn the weights into bf16 A
// fragments of P (two adjacent 8-key tiles form one 16 x 16 fragment). The max is taken on raw
// scores and the scale folded into the exponent's FFMA: one instruction per weight fewer than
// scaling first.
template <int kNTiles, int kDTiles>
__device__ __forceinline__ void online_softmax(float (&sc)[kNTiles][4], float scale_log2,
                                               float (&row_max)[2], float (&row_sum)[2],
                                               float (&acc)[kDTiles][4],
                                               u32 (&pa)[kNTiles / 2][4]) {
  float block_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      block_max[e / 2] = fmaxf(block_max[e / 2], sc[n][e]);
    }
  }
  // The 4 threads of a quad share a row.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m = block_max[r];
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    // The scale is positive (validate), so the max of scaled scores is the scaled max.
    m *= scale_log2;
    const float new_max = fmaxf(row_max[r], m);
    // A row that has seen no visible key yet keeps max -inf; subtract 0 then (exp2(-inf) = 0).
    const float base = new_max == -INFINITY ? 0.f : new_max;
    const float alpha = fast_exp2(row_max[r] - base);
    row_max[r] = new_max;
    row_sum[r] *= alpha;
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e)
        sc[n][e] = fast_exp2(fmaf(sc[n][e], scale_log2, -base));
      row_sum[r] += sc[n][2 * r] + sc[n][2 * r + 1];
    }
#pragma unroll
    for (int i = 0; i < kDTiles; ++i) {
      acc[i][2 * r] *= alpha;
      acc[i][2 * r + 1] *= alpha;
    }
  }
#pragma unroll
  for (int kk = 0; kk < kNTiles / 2; ++kk) {
    pa[kk][0] = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
    pa[kk][1] = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
    pa[kk][2] = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
    pa[kk][3] = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
  }
}

// O += P V for every m tile of the warp; each V fragment feeds every m tile. With two m tiles the
// V fragments of the next step are loaded before this step's mma are issued, so the tensor pipe
// does not wait on shared-memory latency (measured +1 %, docs/gpu-performance.md). With one
// (d = 256, 64 steps) double-buffering both loops put fragments in local memory (ptxas: 176 B
// stack frame; measured 7x slower), so d = 256 keeps the plain loop.
template <int D, int kKSlices, int kMTiles>
__device__ __forceinline__ void accumulate_pv(float (&acc)[kMTiles][D / 8][4],
                                              const u32 (&pa)[kMTiles][kKSlices][4],
                                              const bf16* v_tile, int lane) {
  constexpr bool kPipelined = kMTiles > 1;
  constexpr int kPairs = D / 16;
  constexpr int kSteps = kKSlices * kPairs;
  u32 b[kPipelined ? 2 : 1][4];
  if constexpr (kPipelined) load_v_fragment<D>(b[0], v_tile, 0, 0, lane);
#pragma unroll
  for (int step = 0; step < kSteps; ++step) {
    const int kk = step / kPairs;
    const int dp = step % kPairs;
    const int vb = kPipelined ? step & 1 : 0;
    if constexpr (kPipelined) {
      if (step + 1 < kSteps)
        load_v_fragment<D>(b[(step + 1) & 1], v_tile, (step + 1) / kPairs, (step + 1) % kPairs,
                           lane);
    } else {
      load_v_fragment<D>(b[0], v_tile, kk, dp, lane);
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      mma_bf16(acc[mt][2 * dp], pa[mt][kk], b[vb][0], b[vb][1]);
      mma_bf16(acc[mt][2 * dp + 1], pa[mt][kk], b[vb][2], b[vb][3]);
    }
  }
}

// ---- one work tile
// --------------------------------------------------------------------------------

// Where a tile's rows and keys are, from its SeqInfo: common/geometry.hpp, the same geometry as
// the simulator's; kv_blocks counts the kernel's BN-wide blocks.
template <int BN>
__device__ __forceinline__ TileGeometry tile_geometry(const KernelParams& p,
                                                      const TileSummary& summary,
                                                      const SeqInfo& s) {
  return tilesched::tile_geometry(summary.query_layout(), p.kv, s, kKernelBlockM, BN,
                                  p.causal ? Mask::Causal : Mask::None);
}

// Computes the tile's O rows and LSE. All threads of the CTA call it; it ends with a CTA barrier,
// so the next tile may overwrite shared memory at once.
template <int D, int kBlockN, int kMTiles>
__device__ void process_tile(const KernelParams& p, const SeqInfo& s, const TileGeometry& g,
                             bf16* smem) {
  constexpr int kThreads = threads_per_cta<kMTiles>();
  constexpr int kWarpRows = 16 * kMTiles;
  constexpr int kDTiles = D / 8;        // 8-wide column tiles of O
  constexpr int kNTiles = kBlockN / 8;  // 8-wide key tiles of S
  bf16* sq = smem;
  bf16* sk = sq + kBlockM * D;      // [2][kBlockN][D]
  bf16* sv = sk + 2 * kBlockN * D;  // [2][kBlockN][D]

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const u32 head = s.head_idx;
  const u32 kv_head = head / p.group;
  const std::size_t q_stride = std::size_t(p.num_q_heads) * D;
  const bf16* q_src = p.q + std::size_t(g.rows.first_query_row) * q_stride + std::size_t(head) * D;

  auto load_kv = [&](u32 block, int stage) {
    const u32 key0 = block * kBlockN;
    const int valid = static_cast<int>(min_u32(g.kv_len - key0, kBlockN));
    const std::size_t stride = std::size_t(p.num_kv_heads) * D;
    if constexpr (kMTiles > 1) {
      // d = 64, 128: the copy loop unrolled and the source recomputed from the parameters each
      // block instead of kept live in two pointers (ptxas, d = 128: spills 76/152 B -> 32/24 B
      // with the mask pass of its own; measured +14 %, docs/gpu-performance.md). With one m tile
      // (d = 256) this spills where the plain loop does not.
      const std::size_t off = std::size_t(g.kv_start + key0) * stride + std::size_t(kv_head) * D;
      load_tile_unrolled<D, kBlockN, kThreads>(sk + stage * kBlockN * D, p.k + off, stride, valid);
      load_tile_unrolled<D, kBlockN, kThreads>(sv + stage * kBlockN * D, p.v + off, stride, valid);
    } else {
      // d = 256: the plain loop from the sequence's first key row (loop-invariant: the compiler
      // keeps both sources in registers for the whole tile).
      const bf16* k_src = p.k + std::size_t(g.kv_start) * stride + std::size_t(kv_head) * D;
      const bf16* v_src = p.v + std::size_t(g.kv_start) * stride + std::size_t(kv_head) * D;
      load_tile<D, kBlockN, kThreads>(sk + stage * kBlockN * D, k_src + std::size_t(key0) * stride,
                                      stride, valid);
      load_tile<D, kBlockN, kThreads>(sv + stage * kBlockN * D, v_src + std::size_t(key0) * stride,
                                      stride, valid);
    }
  };

  load_tile<D, kBlockM, kThreads>(sq, q_src, q_stride, static_cast<int>(g.rows.query_rows));
  load_kv(0, 0);
  cp_async_commit();

  // Accumulators: this thread's part of the warp's rows x D output (mma C layout: rows lane/4 and
  // lane/4 + 8 of each 16-row tile, columns 2*(lane%4) + {0, 1} of each 8-wide tile).
  float acc[kMTiles][kDTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int i = 0; i < kDTiles; ++i)
      acc[mt][i][0] = acc[mt][i][1] = acc[mt][i][2] = acc[mt][i][3] = 0.f;
  float row_max[kMTiles][2];  // log2-scaled running max per row
  float row_sum[kMTiles][2];  // this thread's partial sums (quad-reduced at the end)
  const u32 diag_shift = g.kv_len - g.seq_len;
  const u32 warp_row0 = warp * kWarpRows;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mt][r] = -INFINITY;
      row_sum[mt][r] = 0.f;
    }

  for (u32 block = 0; block < g.kv_blocks; ++block) {
    const int stage = block & 1;
    if (block + 1 < g.kv_blocks) {
      load_kv(block + 1, stage ^ 1);  // overlap the next block's load with this block's math
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // this block (and Q) visible to every warp

    const bf16* k_tile = sk + stage * kBlockN * D;
    const bf16* v_tile = sv + stage * kBlockN * D;

    // Mask keys past the sequence and, causally, past each row's diagonal. Only blocks that reach
    // past the warp's first row's diagonal or the key tail need it.
    BlockMask mask;
    mask.key0 = block * kBlockN;
    mask.kv_len = g.kv_len;
    mask.causal = p.causal;
    mask.needed = mask.key0 + kBlockN > g.kv_len ||
                  (p.causal && mask.key0 + kBlockN > s.prompt_offset + warp_row0 + diag_shift + 1);
    auto row_mask = [&](int mt) {
      BlockMask m = mask;
      for (int r = 0; r < 2; ++r)
        m.key_limit[r] = s.prompt_offset + warp_row0 + mt * 16 + lane / 4 + 8 * r + diag_shift;
      return m;
    };

    float sc[kMTiles][kNTiles][4];
    compute_scores<D, kNTiles, kMTiles>(sc, sq, warp_row0, k_tile, lane);
    u32 pa[kMTiles][kNTiles / 2][4];  // P as bf16 A fragments
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      if (mask.needed) apply_mask(sc[mt], row_mask(mt), lane);
      online_softmax(sc[mt], p.scale_log2, row_max[mt], row_sum[mt], acc[mt], pa[mt]);
    }
    accumulate_pv<D, kNTiles / 2, kMTiles>(acc, pa, v_tile, lane);
    __syncthreads();  // every warp is done with this stage before it is refilled
  }

  // Epilogue: normalise, write the rows the tile owns (never more: the next rows may belong to
  // another sequence), and LSE = ln(sum exp(scale*s)) = (max + log2(sum)) * ln 2.
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const u32 local_row = warp_row0 + mt * 16 + lane / 4 + r * 8;
      if (local_row >= g.rows.query_rows) continue;
      const float inv = 1.f / sum;
      const std::size_t row = g.rows.first_query_row + local_row;
      bf16* o_row = p.o + row * q_stride + std::size_t(head) * D;
#pragma unroll
      for (int i = 0; i < kDTiles; ++i) {
        const __nv_bfloat162 v =
            __floats2bfloat162_rn(acc[mt][i][2 * r] * inv, acc[mt][i][2 * r + 1] * inv);
        *reinterpret_cast<__nv_bfloat162*>(o_row + i * 8 + 2 * (lane % 4)) = v;
      }
      if (lane % 4 == 0)
        p.lse[row * p.num_q_heads + head] = (row_max[mt][r] + log2f(sum)) * 0.69314718055994531f;
    }
  }
}

// ---- the persistent kernel ----------------------------------------------------------------------

// The scheduler loop of scheduler.hpp. Every thread calls first_work/advance (SchedulerSync::All:
// thread 0 fetches for the queued scheduler and a CTA barrier publishes the index); the pipeline
// slot alternates so a slow reader of one slot never sees the next index.
template <class Scheduler, int D, int BN, int MT>
__global__ void __launch_bounds__(threads_per_cta<MT>(), ctas_per_sm<MT>())
    attention_kernel(Scheduler sched, TileSummary summary, KernelParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* smem = reinterpret_cast<bf16*>(smem_raw);
  __shared__ u32 sidx[2];

  const BlockIndex block{blockIdx.x, blockIdx.y, blockIdx.z};
  const u32 cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  TileState st = sched.initial_state(sidx, summary, block);
  u32 pipeline_idx = 0;
  u32 step = 0;
  for (auto s = sched.template first_work<true, SchedulerSync::All>(summary, st, pipeline_idx); s;
       s = sched.template advance<true, SchedulerSync::All>(summary, st, pipeline_idx)) {
    const bool record = p.trace.events != nullptr && threadIdx.x == 0;
    const std::uint64_t start = record ? global_timer_ns() : 0;
    const TileGeometry g = tile_geometry<BN>(p, summary, *s);
    // Safe ragged mode never hands out a tile with no rows; should one come, it still takes part
    // in the protocol (the loop above) but computes nothing.
    if (g.rows.query_rows > 0) process_tile<D, BN, MT>(p, *s, g, smem);
    if (record) {
      const u32 slot = atomicAdd(p.trace.count, 1u);
      if (slot < p.trace.capacity) {
        DeviceTraceEvent e;
        e.cta = cta;
        e.step = step;
        e.linear_idx = st.idx;
        e.prompt_offset = s->prompt_offset;
        e.head_idx = s->head_idx;
        e.prompt_idx = s->prompt_idx;
        e.query_rows = g.rows.query_rows;
        e.kv_blocks =
            tile_cost(s->prompt_offset, g.rows.query_rows, g.seq_len, g.kv_len, kKernelBlockM,
                      p.trace_block_n, p.causal ? Mask::Causal : Mask::None)
                .kv_blocks;
        e.sm_id = sm_id();
        e.reserved = 0;
        e.start_ns = start;
        e.end_ns = global_timer_ns();
        p.trace.events[slot] = e;
      }
    }
    ++step;
    pipeline_idx ^= 1u;
  }
}

// Sets the queued scheduler's counter and the trace's event count before a launch (a kernel, not
// a memset: counter_start() is not a byte pattern). Stream-ordered, so graph-capturable.
__global__ void reset_counters(u32* counter, u32 counter_value, u32* trace_count) {
  if (counter != nullptr) *counter = counter_value;
  if (trace_count != nullptr) *trace_count = 0;
}

}  // namespace tilesched::gpu::detail
