// The epilogue: each row's O / rowsum and LSE, and their stores. A consumer warpgroup whose 64 rows
// all belong to the tile stages O in shared memory (stmatrix) and stores it with a TMA store; a
// partial tile's warpgroups store from registers ("O through shared memory and a TMA store").
// Where O is staged (OStaging, configs.hpp) decides a release protocol with the producer when the
// staging buffer is a V stage: the producer loads no V into it before the store has read it.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "sm90/problem.cuh"
#include "sm90/softmax.cuh"
#include "sm90/sync.cuh"
#include "sm90/traits.cuh"
#include "tilesched/geometry.hpp"

namespace tilesched::gpu::sm90 {

// The TMA descriptor of O (parameter space).
template <class Traits>
struct EpilogueParams {
  typename Traits::TmaO tma_o;
};

// Each consumer warpgroup's O staging buffer (OStaging::OwnBuffers), or warpgroup 0's
// (SplitInV); one element where O is staged in V.
template <class Traits>
struct EpilogueBuffers {
  cute::array_aligned<Element, Traits::kOStageElements, 1024> o;
};

// With O staged in V: each consumer warpgroup arrives on o_released once per tile with work when
// the V stage holding its O may be loaded again; the producer waits for it before that tile's
// successor's first V load. With SplitInV, per V stage, warpgroup 1's release of the O it staged
// there (o_released_v).
template <class Traits>
struct EpilogueBarriers {
  cutlass::arch::ClusterBarrier o_released;
  cutlass::arch::ClusterBarrier o_released_v[Traits::kStagesKV];

  // By one thread, before the CTA barrier that publishes the barriers.
  __device__ __forceinline__ void init() {
    if constexpr (Traits::kStageOInV) {
      o_released.init(Traits::kConsumerWarpgroups);
      if constexpr (Traits::kStageOSplit)
        for (int stage = 0; stage < Traits::kStagesKV; ++stage)
          o_released_v[stage].init(Traits::kConsumerWarpgroups - 1);
      cutlass::arch::fence_barrier_init();
    }
  }
};

// The first tile row a consumer thread holds (its second is 8 below): the rows of the
// warpgroup's m64 accumulator fragment, 16 per warp, as normalize_rows and the stores take them.
template <class Traits>
__device__ __forceinline__ int consumer_thread_row(int warpgroup, int thread) {
  return warpgroup * Traits::kWarpgroupRows + (thread / 32) * 16 + (thread % 32) / 4;
}

// Epilogue, first part: each row's sum across its quad, O / rowsum as bf16 and LSE = ln(sum
// exp(scale s)) = (max + log2 sum) ln 2 stored for the rows the tile owns (output_row: the rest
// of a partial tile's BM rows belong to another sequence or lie past the tensor, and a decode
// tile owns only its heads' tokens). thread_row is the thread's first row in the tile (its
// second is 8 below).
template <class Params, class FragmentO, class FragmentOut>
__device__ __forceinline__ void normalize_rows(const Params& p, const FragmentO& o,
                                               const RowState& rs, const TileRows& rows,
                                               u32 head_idx, int thread_row, FragmentOut& o_out) {
  const int lane = threadIdx.x % 32;
  float inv[2];
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    float sum = rs.sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    // rcp.approx (one MUFU.RCP, at most 1 ulp off): the IEEE division adds a range check and a
    // call to its slow path, and the product is rounded to bf16 anyway.
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(inv[r]) : "f"(sum));
    const OutputRow out =
        output_row(p.problem, rows, head_idx, static_cast<u32>(thread_row + 8 * r));
    if constexpr (Params::Traits::kPredicatedLse) {
      // LSE as one predicated store, not a branch around its address and value (the row's
      // address is formed whether or not the thread owns it), and log2 by lg2.approx.ftz: the
      // sum is 0 or at least 1 (the row's max weighs exp2(0)), never a denormal, which is all
      // __log2f's extra instructions handle.
      float* const lse_at = p.outputs.lse + out.row * p.problem.num_q_heads + out.head;
      float log2_sum;
      asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_sum) : "f"(sum));
      const float lse = (rs.max[r] + log2_sum) * 0.69314718055994531f;
      const u32 owned = lane % 4 == 0 && out.owned;
      asm volatile(
          "{\n .reg .pred p;\n setp.ne.u32 p, %2, 0;\n @p st.global.f32 [%0], %1;\n}\n" ::"l"(
              lse_at),
          "f"(lse), "r"(owned)
          : "memory");
    } else if (lane % 4 == 0 && out.owned) {
      p.outputs.lse[out.row * p.problem.num_q_heads + out.head] =
          (rs.max[r] + __log2f(sum)) * 0.69314718055994531f;
    }
  }
  CUTE_UNROLL
  for (int e = 0; e < cute::size(o); ++e) o_out(e) = Element(o(e) * inv[(e / 2) % 2]);
}

// Epilogue, second part, from registers: O's rows the tile owns, two columns per store.
template <class Params, class FragmentOut>
__device__ __forceinline__ void store_tile_outputs(const Params& p, const FragmentOut& o_out,
                                                   const TileRows& rows, u32 head_idx,
                                                   int thread_row) {
  constexpr int D = Params::Traits::kHeadDim;
  const int lane = threadIdx.x % 32;
  const std::size_t q_stride = std::size_t(p.problem.num_q_heads) * D;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const OutputRow out =
        output_row(p.problem, rows, head_idx, static_cast<u32>(thread_row + 8 * r));
    if (!out.owned) continue;
    __nv_bfloat16* o_row = p.outputs.o + out.row * q_stride + std::size_t(out.head) * D;
    CUTE_UNROLL
    for (int e = 2 * r; e < cute::size(o_out); e += 4) {
      const int col = 8 * (e / 4) + 2 * (lane % 4);
      __nv_bfloat162 two;
      two.x = __ushort_as_bfloat16(o_out(e).raw());
      two.y = __ushort_as_bfloat16(o_out(e + 1).raw());
      *reinterpret_cast<__nv_bfloat162*>(o_row + col) = two;
    }
  }
}

// Epilogue, second part, of a warpgroup whose 64 rows all belong to the tile: O
// written to this warpgroup's staging buffer with stmatrix and stored by one thread with a TMA
// store, which the warpgroup does not wait for (the next epilogue waits until that store has read
// the buffer). Fewer, wider shared-memory stores replace d / 4 four-byte global stores per thread,
// and the global writes leave the warpgroup's path to its next GEMMs. Rows of another sequence
// never lie in a full warpgroup's 64 rows, so the box writes only the tile's own rows. The storing
// thread is warp 1's first (kTmaStoreThread), not warp 0's: the last warpgroup's thread 0 records
// the trace, and a warp that did both would delay its warpgroup's next GEMM by the sum.
constexpr int kTmaStoreThread = 32;

template <class Params, class FragmentOut>
__device__ __forceinline__ void store_tile_outputs_tma(const Params& p, Element* staging,
                                                       const FragmentOut& o_out,
                                                       const TileRows& rows, u32 head_idx,
                                                       int warpgroup, int thread) {
  using namespace cute;
  using Traits = typename Params::Traits;
  constexpr int D = Traits::kHeadDim;
  constexpr int kRows = Traits::kWarpgroupRows;
  const NamedBarrier staged = epilogue_barrier<Traits::kConsumerWarpgroups>(warpgroup);
  // The previous store has read the buffer (with kStageOInV the caller waited for that; with
  // kStageOSplit warpgroup 0's buffer is its own).
  if (!Traits::kStageOInV || (Traits::kStageOSplit && warpgroup == 0))
    if (thread == kTmaStoreThread) tma_store_wait<0>();
  named_barrier_sync(staged, Traits::kWarpgroupThreads);
  Tensor sO = make_tensor(make_smem_ptr(staging), typename Traits::SmemLayoutO{});
  typename Traits::TiledMmaPV mma_pv;
  auto stage_copy = make_tiled_copy_C(Copy_Atom<SM90_U32x4_STSM_N, Element>{}, mma_pv);
  auto thr_stage = stage_copy.get_thread_slice(thread);
  copy(stage_copy, thr_stage.retile_S(o_out), thr_stage.partition_D(sO));
  tma_store_fence();  // the stmatrix writes, visible to the TMA
  named_barrier_sync(staged, Traits::kWarpgroupThreads);
  if (thread == kTmaStoreThread) {
    Tensor mO = p.epilogue.tma_o.get_tma_tensor(
        make_shape(p.problem.q_rows, Int<D>{}, int(p.problem.num_q_heads)));
    Tensor gO = local_tile(
        domain_offset(make_coord(static_cast<int>(rows.first_query_row) + warpgroup * kRows, _0{}),
                      mO(_, _, static_cast<int>(head_idx))),
        Shape<Int<kRows>, Int<D>>{}, make_coord(_0{}, _0{}));
    auto tma = p.epilogue.tma_o.get_slice(_0{});
    copy(p.epilogue.tma_o, tma.partition_S(sO), tma.partition_D(gO));
    tma_store_arrive();
  }
}

// A consumer warpgroup's epilogue over the tiles it processes.
template <class Params>
class EpilogueConsumer {
  using Traits = typename Params::Traits;
  // A V stage's elements (the staging buffer where O is staged in V), a warpgroup's rows.
  static constexpr int kStageElements = Traits::kBlockN * Traits::kHeadDim;
  static constexpr int kRows = Traits::kWarpgroupRows;

 public:
  __device__ EpilogueConsumer(const Params& p, int warpgroup, int thread)
      : p_(p), warpgroup_(warpgroup), thread_(thread) {}

  // O / rowsum and LSE of the rows the tile owns, then O's stores: with a TMA store when the
  // warpgroup's 64 rows all belong to the tile, else from registers. v_last: the V fill that held
  // the tile's last K/V block.
  template <class Storage, class FragmentO, class VState>
  __device__ __forceinline__ void store(Storage& smem, const FragmentO& o, const RowState& rs,
                                        const TileRows& rows, u32 head_idx, const VState& v_last) {
    const int thread_row = consumer_thread_row<Traits>(warpgroup_, thread_);
    cute::Tensor out = cute::make_tensor_like<Element>(o);
    normalize_rows(p_, o, rs, rows, head_idx, thread_row, out);
    // The TMA store writes a warpgroup's 64 rows to consecutive rows of O of one head: a decode
    // tile's rows are that only for one query head per KV head (its tokens in rows [0, T)).
    const bool full = (!p_.problem.decoding || p_.problem.group == 1) &&
                      rows.query_rows >= static_cast<u32>((warpgroup_ + 1) * kRows);
    if (full) {
      Element* const staging = staging_buffer(smem, v_last);
      store_tile_outputs_tma(p_, staging, out, rows, head_idx, warpgroup_, thread_);
    } else {
      store_tile_outputs(p_, out, rows, head_idx, thread_row);
    }
    release(smem, full, v_last);
  }

  // The warpgroup's last TMA store of O must be done (written, not only read) before it exits.
  __device__ __forceinline__ void finish() const {
    if (thread_ == kTmaStoreThread) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }

 private:
  // Where this warpgroup stages O, once that buffer is free.
  template <class Storage, class VState>
  __device__ __forceinline__ Element* staging_buffer(Storage& smem, const VState& v_last) {
    auto& v_empty = smem.mainloop_barriers.pipe_v.empty_barrier_;
    Element* const v_stages = smem.mainloop_buffers.v.data();
    if constexpr (Traits::kStageOSplit) {
      // Warpgroup 0 stages in its own buffer (store_tile_outputs_tma waits for its last store);
      // warpgroup 1 in V(0)'s stage, which the producer loads again only after warpgroup 1
      // arrives on that stage's o_released_v (release).
      if (warpgroup_ == 0) return smem.epilogue_buffers.o.data();
      barrier_wait(v_empty[v_last.index()], v_last.phase(), "V stage for O (consumer)");
      return v_stages + v_last.index() * kStageElements;
    } else if constexpr (Traits::kStageOInV) {
      // Warpgroup w stages O in the V stage filled W - 1 - w fills before V(0)'s (V(0)'s for the
      // last): the turns run warpgroup 0 first, so the stage it takes was released earliest.
      // Every warpgroup has released that fill once its empty barrier completes the fill's
      // phase, and the producer loads no V of the next tile before this warpgroup arrives on
      // o_released (release). The stage may have held another warpgroup's O of the previous
      // tile: its store has read it once o_released completed that tile's phase.
      const auto [stage, phase] = earlier_fill<Traits::kStagesKV>(
          v_last.index(), v_last.phase(), Traits::kConsumerWarpgroups - 1 - warpgroup_);
      if (tiles_stored_ > 0)
        barrier_wait(smem.epilogue_barriers.o_released, (tiles_stored_ - 1) % 2,
                     "O staged in V (consumer)");
      barrier_wait(v_empty[stage], phase, "V stage for O (consumer)");
      return v_stages + stage * kStageElements;
    } else {
      return smem.epilogue_buffers.o.data() + warpgroup_ * cosize(typename Traits::SmemLayoutO{});
    }
  }

  // O staged in V: the warpgroup's arrive that lets the producer load the stage again, once its
  // store (if it staged) has read it.
  template <class Storage, class VState>
  __device__ __forceinline__ void release(Storage& smem, bool full, const VState& v_last) {
    if constexpr (Traits::kStageOSplit) {
      // Warpgroup 1: one arrive per tile with work on V(0)'s stage.
      if (warpgroup_ != 0 && thread_ == kTmaStoreThread) {
        if (full) cute::tma_store_wait<0>();
        smem.epilogue_barriers.o_released_v[v_last.index()].arrive();
      }
    } else if constexpr (Traits::kStageOInV) {
      // One arrive per warpgroup and tile with work.
      if (thread_ == kTmaStoreThread) {
        if (full) cute::tma_store_wait<0>();
        smem.epilogue_barriers.o_released.arrive();
      }
      ++tiles_stored_;
    }
  }

  const Params& p_;
  int warpgroup_;
  int thread_;
  u32 tiles_stored_ = 0;  // tiles with work whose O this warpgroup has stored (O staged in V)
};

// The producer's side of the release protocol with O staged in V: before a V load into a stage
// that may still hold a staged O, wait for its release.
template <class Traits>
class OReleaseWait {
 public:
  __device__ explicit OReleaseWait(EpilogueBarriers<Traits>& barriers) : barriers_(barriers) {}

  // Whether this tile's first V load (its last K/V block's) waits for the previous tile's O
  // stores (InV: every warpgroup's arrive on o_released).
  __device__ __forceinline__ bool waits() const {
    return Traits::kStageOInV && !Traits::kStageOSplit && tiles_loaded_ > 0;
  }
  // Before a V load into `stage`; `wait`: the tile's first V load, where waits() holds.
  __device__ __forceinline__ void before_v_load(bool wait, u32 stage) {
    if (wait)
      barrier_wait(barriers_.o_released, (tiles_loaded_ - 1) % 2, "O staged in V (producer)");
    if constexpr (Traits::kStageOSplit) {
      if ((o_pending_ >> stage) & 1u) {
        barrier_wait(barriers_.o_released_v[stage], (o_parity_ >> stage) & 1u,
                     "O staged in V (producer)");
        o_parity_ ^= 1u << stage;
        o_pending_ &= ~(1u << stage);
      }
    }
  }
  // After a tile's loads; `last_stage`: the V stage its last V load (V(0)) filled.
  __device__ __forceinline__ void after_tile(u32 last_stage) {
    if constexpr (Traits::kStageOSplit) o_pending_ |= 1u << last_stage;
    ++tiles_loaded_;
  }

 private:
  EpilogueBarriers<Traits>& barriers_;
  u32 tiles_loaded_ = 0;  // tiles with work whose loads were issued (o_released's phases)
  // SplitInV: V stages holding a staged O not yet released (a bit per stage), and the parity of
  // each stage's next o_released_v phase.
  u32 o_pending_ = 0, o_parity_ = 0;
};

}  // namespace tilesched::gpu::sm90
