// The warp-specialized Hopper attention forward kernel (TMA + wgmma), driven by a scheduler of
// common/. One CTA of three or four warpgroups per SM:
//
//   warpgroup 0, the producer (registers lowered): owns the scheduler. All 128 threads call
//     first_work / advance<producer = true, SchedulerSync::Producer> (a counter scheduler's
//     thread 0 fetches and publishes the index in sidx[slot], then the 128-thread named barrier
//     kSchedulerBarrierId; the planned schedulers read their host-built arrays from global
//     memory), and thread 0 arrives on the tile hand-off mbarrier of that slot (while a trace is
//     recorded, thread 32 too, after writing the tile's event: TileTraceRecorder).
//     Thread 0 then issues the tile's TMA loads: Q into one of the Q buffers, K and V blocks into
//     their stage rings, each stage guarded by a full/empty mbarrier pair (PipelineTmaAsync). The
//     next hand-off follows the last load, or with one Q buffer and a sequence of at most 512
//     keys the tile's Q and first K (run_producer).
//   warpgroups 1.. (two or three: configs.hpp), the consumers (registers raised): each owns 64 of
//     the tile's BM = 64 * consumers query rows. Per tile: wait on the hand-off mbarrier,
//     advance<producer = false> (reads the slot), release the slot; then for every K/V block, last
//     to first (masked blocks come first): S = Q K^T with wgmma from shared memory, the online
//     softmax in fp32 registers, O += P V with P from registers and V from shared memory. The QK^T
//     of block j is issued together with the PV of block j + 1, and the warpgroups take turns
//     issuing (PingPong), so one's softmax runs under the others' GEMMs. In a block a mask
//     touches, the row max runs under the warpgroup's own PV: the PV wait is pinned after it
//     (ptxas would put it before the softmax). A block no mask touches takes no row max: its
//     weights are taken against the row's held max after the PV wait and checked afterwards
//     (softmax_held).
//     Epilogue: O / rowsum and LSE, only rows the tile owns; O from registers or, for a
//     warpgroup whose rows all belong to the tile, through shared memory (at d = 256 a V stage
//     the tile no longer reads: OStaging::InV) and a TMA store.
//
// In clusters of two CTAs (kClusterM, d = 128's dense rows of one length from 8192 keys:
// fmha_launch.cuh) the two CTAs run tiles of the same head and keys; each loader loads half of
// every K/V block, multicast to both, and a stage is loaded again once both CTAs' consumers
// released it.
//
// Every role walks the same tile sequence, including tiles with no work and the final "none":
// the producer commits every hand-off slot it acquires and consumers wait for every one, so no
// role waits on a barrier the others skip.
#pragma once

#include <cuda_bf16.h>
#include <cutlass/arch/reg_reconfig.h>

#include <cstdint>
#include <type_traits>

#include "sm90/fmha_sync.cuh"
#include "sm90/fmha_traits.cuh"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/geometry.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/scheduler.hpp"

namespace tilesched::gpu::sm90 {

// Everything the kernel reads (the host's Arguments -> Params). Passed as a __grid_constant__
// parameter: the TMA descriptors must live in parameter space.
template <class Scheduler, class Config>
struct FmhaParams {
  using Traits = FmhaTraits<Config>;
  typename Traits::TmaQ tma_q;
  typename Traits::TmaKV tma_k;
  typename Traits::TmaKV tma_v;
  typename Traits::TmaO tma_o;
  Scheduler scheduler;
  TileSummary summary;
  std::int32_t q_rows = 0;   // rows of Q and O (the TMA's bound)
  std::int32_t kv_rows = 0;  // rows of K and V
  u32 num_q_heads = 0;
  u32 num_kv_heads = 0;
  u32 group = 1;  // query heads per KV head
  RowLayout kv;   // where each sequence's keys are in K and V
  __nv_bfloat16* o = nullptr;
  float* lse = nullptr;
  float scale_log2 = 0.f;  // softmax scale * log2(e)
  bool causal = false;
  TraceBuffer trace;
  u32 trace_block_n = 0;  // the workload's BN: a trace's kv_blocks use it (SPEC §7)
  // split_tail: the pieces' slots (attention.hpp's SplitWorkspaceLayout)
  float* split_partials = nullptr;
  // With AttentionArgs::launch_done: each CTA counts itself done at its end and the grid's last
  // leaves the words ready for the next launch (restore_launch_words): a counter scheduler's
  // counter (queue_counter, null for the others) back at counter_start, while recording the
  // trace's count moved to trace_last_count (null when not recording or not asked). Null
  // launch_done: nothing restored.
  u32* launch_done = nullptr;
  u32* queue_counter = nullptr;
  u32 counter_start = 0;
  u32* trace_last_count = nullptr;
};

// Where a tile's rows and keys are (SPEC §7, common's geometry), the same for producer and
// consumers.
template <class Params>
__device__ __forceinline__ TileGeometry tile_geometry(const Params& p, const SeqInfo& s) {
  using Traits = typename Params::Traits;
  return tilesched::tile_geometry(p.summary.query_layout(), p.kv, s, Traits::kBlockM,
                                  Traits::kBlockN, p.causal ? Mask::Causal : Mask::None);
}

// Whether a tile has anything to compute; both roles decide it from the same SeqInfo.
__device__ __forceinline__ bool has_work(const TileGeometry& g) {
  return g.rows.query_rows > 0 && g.kv_blocks > 0;  // a piece is never empty (split_tail)
}

// Whether a kernel's scheduler hands out pieces of tiles (split_tail; the AnyScheduler kernel
// never runs it: any_scheduler.hpp). The other kernels keep their code as it was without
// pieces (the block range's bounds as constants: one instruction less per K/V block).
template <class Params>
inline constexpr bool kHandsOutPieces =
    std::is_same_v<std::decay_t<decltype(Params::scheduler)>, runtime::SplitTailScheduler>;

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
// 2^x in one MUFU.EX2; results below 2^-126 flush to zero, which no softmax weight next to the
// row's max (weight 1) notices.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ---- producer ------------------------------------------------------------------------------

// Called by each CTA's fetching thread once its producer loop has ended (its last fetch and,
// while recording, its trace writer's last claim of an event slot are done: every schedule step
// passes the producers' barriers; a CTA with no tile fetches nothing): the last CTA of the grid
// to arrive puts the counter back at counter_start, moves the trace's count to last_count and
// zeroes it, and zeroes launch_done, so that the next launch on them needs no reset kernel
// (AttentionArgs::launch_ready). Every CTA has fetched and claimed for the last time when the
// count is full, so nothing of this launch can follow the restore.
template <class Params>
__device__ __forceinline__ void restore_launch_words(const Params& p) {
  if (p.launch_done == nullptr) return;
  __threadfence();  // this CTA's fetches and claims before its arrival
  if (atomicAdd(p.launch_done, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
    __threadfence();
    if (p.queue_counter != nullptr) atomicExch(p.queue_counter, p.counter_start);
    if (p.trace_last_count != nullptr)
      atomicExch(p.trace_last_count, atomicExch(p.trace.count, 0u));
    atomicExch(p.launch_done, 0u);
  }
}

template <class Params, class Storage, class Pipelines>
__device__ void run_producer(const Params& p, Storage& smem, Pipelines& pipes) {
  using namespace cute;
  using Traits = typename Params::Traits;
  constexpr int D = Traits::kHeadDim;
  using PipelineTile = typename Traits::PipelineTile;
  using PipelineQ = typename Traits::PipelineQ;
  using PipelineKV = typename Traits::PipelineKV;

  const bool loader = threadIdx.x == 0;  // the TMA-issuing thread, also the scheduler's thread 0
  if (loader) {
    prefetch_tma_descriptor(p.tma_q.get_tma_descriptor());
    prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
  }
  // TMA coordinate tensors over the whole Q and K/V, (rows, d, heads), and the shared buffers.
  Tensor mQ = p.tma_q.get_tma_tensor(make_shape(p.q_rows, Int<D>{}, int(p.num_q_heads)));
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(p.kv_rows, Int<D>{}, int(p.num_kv_heads)));
  Tensor mV = p.tma_v.get_tma_tensor(make_shape(p.kv_rows, Int<D>{}, int(p.num_kv_heads)));
  Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Traits::SmemLayoutQ{});
  Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), typename Traits::SmemLayoutKV{});
  Tensor sV = make_tensor(make_smem_ptr(smem.v.data()), typename Traits::SmemLayoutKV{});

  auto tile_w = cutlass::make_producer_start_state<PipelineTile>();
  auto q_w = cutlass::make_producer_start_state<PipelineQ>();
  auto k_w = cutlass::make_producer_start_state<PipelineKV>();
  auto v_w = cutlass::make_producer_start_state<PipelineKV>();

  const BlockIndex block{blockIdx.x, blockIdx.y, blockIdx.z};
  TileState st = p.scheduler.initial_state(smem.sidx, p.summary, block);
  // While recording, warp 1's first thread (the trace writer, see TileTraceRecorder) writes each
  // tile's event but its times and arrives on the hand-off as a second producer (the mbarrier then
  // counts two arrivals).
  const bool tracer = p.trace.events != nullptr && threadIdx.x == 32;
  const u32 cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  u32 step = 0;
  // Tiles with work whose loads were issued (kStageOInV's o_released phases).
  [[maybe_unused]] u32 tiles_loaded = 0;
  // kStageOSplit: V stages holding a staged O not yet released (bit per stage), and the parity
  // of each stage's next o_released_v phase.
  [[maybe_unused]] u32 o_pending = 0, o_parity = 0;
  // One hand-off: every producer thread takes part (the scheduler's barrier); the loader (and
  // while recording the trace writer) acquires and commits the slot.
  auto schedule = [&](bool first) {
    // The hand-off slot must be free: consumers have read what it held two tiles ago. Only the
    // threads that write the slot (the loader, and while recording the trace writer) poll its
    // mbarrier; the warpgroup's other threads wait for the loader at a named barrier, where a
    // waiting warp issues nothing (polling it, three idle warps executed 54 M of the 619 M
    // instructions at d = 128, seq 8192; docs/gpu-performance.md).
    if (loader || tracer) producer_acquire(pipes.tile, tile_w, "tile hand-off (producer)");
    named_barrier_sync(kProducerBarrier, Traits::kWarpgroupThreads);
    const u32 slot = tile_w.index();
    const Optional<SeqInfo> work =
        first ? p.scheduler.template first_work<true, SchedulerSync::Producer>(p.summary, st, slot)
              : p.scheduler.template advance<true, SchedulerSync::Producer>(p.summary, st, slot);
    // Thread 0 wrote the slot (counter schedulers) before the named barrier inside advance; its
    // arrive releases that write to the consumers, who acquire it by waiting on the same mbarrier.
    if (loader) pipes.tile.producer_commit(tile_w);
    if (tracer) {
      u32 event = 0;
      if (work) {
        event = atomicAdd(p.trace.count, 1u);
        smem.trace_slot[slot] = event;
      }
      pipes.tile.producer_commit(tile_w);  // releases trace_slot[slot] as thread 0's does sidx
      // The event but its times, after the hand-off: the consumers write only the times.
      if (work) {
        if (event < p.trace.capacity)
          fill_event_head(p, p.trace.events[event], cta, step, st.idx, *work,
                          tile_geometry(p, *work));
        ++step;
      }
    }
    ++tile_w;
    return work;
  };
  // The loads of one tile, issued by the loader: Q and the highest K block, then `between` (in
  // every thread that called this), then the rest of the K/V blocks.
  auto load_tile = [&](const SeqInfo& work, const TileGeometry& g, auto&& between) {
    const bool loads = loader && has_work(g);
    const int head = static_cast<int>(work.head_idx);
    const int kv_head = static_cast<int>(work.head_idx / p.group);
    // Q: the tile's BM rows from its first row (a ragged tile need not start on a multiple
    // of BM). Rows past the tile's sequence are loaded but never stored; rows past the
    // tensor are zero-filled by the TMA.
    Tensor gQ = local_tile(
        domain_offset(make_coord(static_cast<int>(g.rows.first_query_row), _0{}), mQ(_, _, head)),
        Shape<Int<Traits::kBlockM>, Int<D>>{}, make_coord(_0{}, _0{}));
    auto [tQg, tQs] = tma_partition(p.tma_q, group_modes<0, 2>(sQ), group_modes<0, 2>(gQ));

    // K/V blocks of the sequence, (BN, d, block). Keys past the sequence's end may belong to
    // the next sequence: consumers mask them (scores -inf, so P = 0 whatever V holds).
    auto kv_blocks_of = [&](auto& m) {
      return local_tile(
          domain_offset(make_coord(static_cast<int>(g.kv_start), _0{}), m(_, _, kv_head)),
          Shape<Int<Traits::kBlockN>, Int<D>>{}, make_coord(_, _0{}));
    };
    Tensor gK = kv_blocks_of(mK);
    Tensor gV = kv_blocks_of(mV);
    // kClusterM 2: this CTA's half of each block (its rank's), multicast to both CTAs.
    constexpr int kCluster = Traits::kClusterM;
    [[maybe_unused]] const int rank =
        kCluster > 1 ? static_cast<int>(cute::block_rank_in_cluster()) : 0;
    auto kv_partition = [&](const auto& tma, const auto& s, const auto& g) {
      if constexpr (kCluster > 1)
        return tma_partition(tma, rank, Layout<Int<kCluster>>{}, group_modes<0, 2>(s),
                             group_modes<0, 2>(g));
      else
        return tma_partition(tma, group_modes<0, 2>(s), group_modes<0, 2>(g));
    };
    const auto k_parts = kv_partition(p.tma_k, sK, gK);
    const auto v_parts = kv_partition(p.tma_v, sV, gV);
    auto kv_tma = [&](const auto& tma, auto& barrier) {
      if constexpr (kCluster > 1)
        return tma.with(barrier, static_cast<std::uint16_t>((1u << kCluster) - 1u));
      else
        return tma.with(barrier);
    };
    auto load_k = [&](int block) {
      producer_acquire(pipes.k, k_w, "K stage (producer)");
      copy(kv_tma(p.tma_k, *pipes.k.producer_get_barrier(k_w)), get<0>(k_parts)(_, block),
           get<1>(k_parts)(_, k_w.index()));
      ++k_w;
    };
    // With kStageOInV the previous tile's O lies in V stages until its stores have read it.
    const bool wait_o = Traits::kStageOInV && !Traits::kStageOSplit && tiles_loaded > 0;
    auto load_v = [&](int block) {
      if (wait_o &&
          block == static_cast<int>(kHandsOutPieces<Params> ? g.kv_block_end : g.kv_blocks) - 1)
        barrier_wait(smem.o_released, (tiles_loaded - 1) % 2, "O staged in V (producer)");
      if constexpr (Traits::kStageOSplit) {
        const u32 stage = static_cast<u32>(v_w.index());
        if ((o_pending >> stage) & 1u) {
          barrier_wait(smem.o_released_v[stage], (o_parity >> stage) & 1u,
                       "O staged in V (producer)");
          o_parity ^= 1u << stage;
          o_pending &= ~(1u << stage);
        }
      }
      producer_acquire(pipes.v, v_w, "V stage (producer)");
      copy(kv_tma(p.tma_v, *pipes.v.producer_get_barrier(v_w)), get<0>(v_parts)(_, block),
           get<1>(v_parts)(_, v_w.index()));
      ++v_w;
    };
    // The consumers' order: QK^T(last), then for each j below it QK^T(j) with PV(j + 1), finally
    // PV(0). Loading K(j) before V(j + 1) keeps the next GEMM's operand first.
    // A split_tail piece loads its blocks [kv_block_begin, kv_block_end) alike.
    const int begin = kHandsOutPieces<Params> ? static_cast<int>(g.kv_block_begin) : 0;
    int block = static_cast<int>(kHandsOutPieces<Params> ? g.kv_block_end : g.kv_blocks) - 1;
    if (loads) {
      producer_acquire(pipes.q, q_w, "Q buffer (producer)");
      copy(p.tma_q.with(*pipes.q.producer_get_barrier(q_w)), tQg, tQs(_, q_w.index()));
      ++q_w;
      load_k(block);
    }
    between();
    if (loads) {
      for (; block > begin; --block) {
        load_k(block - 1);
        load_v(block);
      }
      [[maybe_unused]] const u32 o_stage = static_cast<u32>(v_w.index());  // V(0)'s
      load_v(begin);
      if constexpr (Traits::kStageOSplit) o_pending |= 1u << o_stage;
      ++tiles_loaded;
    }
  };
  for (Optional<SeqInfo> work = schedule(true); work;) {
    Optional<SeqInfo> next{};
    if constexpr (Traits::kStagesQ == 1) {
      // One Q buffer: the next tile's Q waits for this tile's last QK^T, and the scheduler's
      // advance (the counter's atomic, a plan read) then sat between this tile's last load and
      // the next one's first. For a sequence of at most 512 keys the next tile is scheduled right
      // after this tile's Q and first K instead; every producer thread takes part, so the loads
      // are split around it. Not for longer sequences: a CTA that holds its next tile one tile
      // sooner unbalanced the counter schedulers on long causal rows (docs/gpu-performance.md,
      // candidates L and LS2).
      const TileGeometry g = tile_geometry(p, *work);
      const bool early = g.kv_len <= 512u;
      load_tile(*work, g, [&] {
        if (early) next = schedule(false);
      });
      if (!early) next = schedule(false);
    } else {
      if (loader) load_tile(*work, tile_geometry(p, *work), [] {});
      next = schedule(false);
    }
    work = next;
  }
  if (loader) restore_launch_words(p);
  // In a cluster the other CTA's consumers release this CTA's stages (and its loads fill them):
  // the CTA stays until every stage it filled has been released by both, so no arrive lands on
  // an exited CTA.
  if constexpr (Traits::kClusterM > 1) {
    if (loader) {
      pipes.k.producer_tail(k_w);
      pipes.v.producer_tail(v_w);
      pipes.q.producer_tail(q_w);
    }
  }
}

// ---- consumers -----------------------------------------------------------------------------

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

// Operand slice k of a GEMM fragment (MMA, MMA_M or MMA_N, MMA_K). A shared-memory operand is a
// tensor of wgmma descriptors: CuTe advances one with a 32-bit add on its low word, and ptxas then
// rebuilds the constant high word beside every HGMMA (a UMOV each, 29 per K/V block and warp at
// d = 128). Advanced as one 64-bit value (the same value: the start-address field never carries
// out of the low word), each descriptor pair takes one 64-bit uniform add (UIADD3.64).
template <class Fragment>
__device__ __forceinline__ auto k_slice(const Fragment& t, int k) {
  using namespace cute;
  using Iterator = typename Fragment::iterator;
  if constexpr (std::is_base_of_v<GMMA::DescriptorIterator, Iterator>) {
    Iterator it = t.data();
    it.desc_.desc_ = t.data().desc_.desc_ + static_cast<std::uint64_t>(t.layout()(0, 0, k));
    return make_tensor(it, t(_, _, 0).layout());
  } else {
    return t(_, _, k);
  }
}

// One warpgroup GEMM batch: C (=|+=) A B over every k slice, issued asynchronously; the caller
// commits and waits. B's slices are always advanced with 64-bit adds; A's only with kWideA (Q's
// loop-invariant descriptors otherwise stay hoisted before the loop, which 64-bit adds undid:
// ptxas then recomputed them at every block, three instructions each).
template <bool kWideA = false, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void warpgroup_gemm(TiledMma& mma, const TA& a, const TB& b, TC& c,
                                               bool accumulate) {
  using namespace cute;
  mma.accumulate_ = accumulate ? GMMA::ScaleOut::One : GMMA::ScaleOut::Zero;
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  CUTE_UNROLL
  for (int k = 0; k < size<2>(a); ++k) {
    if constexpr (kWideA)
      cute::gemm(mma, k_slice(a, k), k_slice(b, k), c);
    else
      cute::gemm(mma, a(_, _, k), k_slice(b, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  warpgroup_fence_operand(c);
}

// Everything of a trace event but its start and end times (SPEC §7): which CTA, its step, the
// tile, its KV-block count in the workload's BN, the SM.
template <class Params>
__device__ __forceinline__ void fill_event_head(const Params& p, DeviceTraceEvent& e, u32 cta,
                                                u32 step, u32 linear_idx, const SeqInfo& work,
                                                const TileGeometry& g) {
  using Traits = typename Params::Traits;
  e.cta = cta;
  e.step = step;
  e.linear_idx = linear_idx;
  e.prompt_offset = work.prompt_offset;
  e.head_idx = work.head_idx;
  e.prompt_idx = work.prompt_idx;
  e.query_rows = g.rows.query_rows;
  e.kv_blocks = tile_cost(work.prompt_offset, g.rows.query_rows, g.seq_len, g.kv_len,
                          Traits::kBlockM, p.trace_block_n, p.causal ? Mask::Causal : Mask::None)
                    .kv_blocks;
  e.kv_block_begin = 0;
  // A piece (split_tail, whose workload's BN is the kernel's: validate()) counts its own blocks.
  if constexpr (kHandsOutPieces<Params>) {
    if (work.is_piece()) {
      e.kv_blocks = g.piece_blocks();
      e.kv_block_begin = g.kv_block_begin;
    }
  }
  e.sm_id = sm_id();
}

// Trace recording is split between the roles so that the consumers, whose every stall delays
// their GEMMs (and through the ping-pong the other warpgroup's), do as little as possible. The
// producer warpgroup's thread 32 (the trace writer, run_producer) claims each tile's event slot
// with an atomic, writes the event but its times, and publishes the slot beside the tile in the
// hand-off. One consumer thread (the recorder) takes the slot when its warpgroup receives the
// tile and stores the tile's start time (when the warpgroup begins it) and end time (after the
// epilogue's stores), each with one 8-byte store. Before this split the recorder claimed and
// filled the event itself: 2-4 % at d = 128 seq <= 2048 against 1-2 % now
// (docs/gpu-performance.md).
template <class Params>
class TileTraceRecorder {
 public:
  __device__ TileTraceRecorder(const Params& p, bool recorder)
      : p_(p), active_(p.trace.events != nullptr && recorder) {}

  // The slot published with the tile just received (read before the hand-off slot is released).
  // Every consumer thread keeps the slots, recorder or not, and only the stores depend on
  // active_: slots updated under a per-thread condition made ptxas treat the whole tile loop as
  // divergent, and it then built every wgmma descriptor in ordinary registers and moved it to
  // uniform ones before each HGMMA (48 R2UR per block at d = 128; docs/gpu-performance.md,
  // eleventh session).
  __device__ __forceinline__ void receive(const u32& published_slot) {
    next_slot_ = published_slot;
  }
  // The received tile begins.
  __device__ __forceinline__ void stamp_start() {
    slot_ = next_slot_;
    if (active_ && slot_ < p_.trace.capacity) p_.trace.events[slot_].start_ns = global_timer_ns();
  }
  __device__ __forceinline__ void stamp_end() {
    if (active_ && slot_ < p_.trace.capacity) p_.trace.events[slot_].end_ns = global_timer_ns();
  }

 private:
  const Params& p_;
  bool active_;
  u32 slot_ = 0;       // the current tile's event
  u32 next_slot_ = 0;  // the last received tile's (one ahead with kPrefetchTile)
};

// Epilogue, first part: each row's sum across its quad, O / rowsum as bf16 and LSE = ln(sum
// exp(scale s)) = (max + log2 sum) ln 2 stored for the rows the tile owns (the rest of a partial
// tile's BM rows belong to another sequence or lie past the tensor). thread_row is the thread's
// first row in the tile (its second is 8 below).
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
    const u32 row_in_tile = static_cast<u32>(thread_row + 8 * r);
    if constexpr (Params::Traits::kPredicatedLse) {
      // LSE as one predicated store, not a branch around its address and value (the row's
      // address is formed whether or not the thread owns it), and log2 by lg2.approx.ftz: the
      // sum is 0 or at least 1 (the row's max weighs exp2(0)), never a denormal, which is all
      // __log2f's extra instructions handle.
      const std::size_t row = std::size_t(rows.first_query_row) + row_in_tile;
      float* const lse_at = p.lse + row * p.num_q_heads + head_idx;
      float log2_sum;
      asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(log2_sum) : "f"(sum));
      const float lse = (rs.max[r] + log2_sum) * 0.69314718055994531f;
      const u32 owned = lane % 4 == 0 && row_in_tile < rows.query_rows;
      asm volatile(
          "{\n .reg .pred p;\n setp.ne.u32 p, %2, 0;\n @p st.global.f32 [%0], %1;\n}\n" ::"l"(
              lse_at),
          "f"(lse), "r"(owned)
          : "memory");
    } else if (lane % 4 == 0 && row_in_tile < rows.query_rows) {
      const std::size_t row = std::size_t(rows.first_query_row) + row_in_tile;
      p.lse[row * p.num_q_heads + head_idx] = (rs.max[r] + __log2f(sum)) * 0.69314718055994531f;
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
  const std::size_t q_stride = std::size_t(p.num_q_heads) * D;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const u32 row_in_tile = static_cast<u32>(thread_row + 8 * r);
    if (row_in_tile >= rows.query_rows) continue;
    const std::size_t row = std::size_t(rows.first_query_row) + row_in_tile;
    __nv_bfloat16* o_row = p.o + row * q_stride + std::size_t(head_idx) * D;
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
    Tensor mO = p.tma_o.get_tma_tensor(make_shape(p.q_rows, Int<D>{}, int(p.num_q_heads)));
    Tensor gO = local_tile(
        domain_offset(make_coord(static_cast<int>(rows.first_query_row) + warpgroup * kRows, _0{}),
                      mO(_, _, static_cast<int>(head_idx))),
        Shape<Int<kRows>, Int<D>>{}, make_coord(_0{}, _0{}));
    auto tma = p.tma_o.get_slice(_0{});
    copy(p.tma_o, tma.partition_S(sO), tma.partition_D(gO));
    tma_store_arrive();
  }
}

// split_tail: where piece `rank` of a split tile keeps one warpgroup's state. Per consumer thread
// its head_dim / 2 accumulators (unscaled O), then its two rows' max and its part of their sums;
// as float4 columns of the warpgroup's 128 threads, so that the stores and loads coalesce.
template <class Params>
__device__ __forceinline__ float* piece_state(const Params& p, const SplitPiece& piece, u32 rank,
                                              int warpgroup) {
  using Traits = typename Params::Traits;
  constexpr int kWarpgroupFloats = Traits::kWarpgroupThreads * (Traits::kHeadDim / 2 + 4);
  return p.split_partials +
         std::size_t(piece.first_slot + rank) * Traits::kConsumerWarpgroups * kWarpgroupFloats +
         warpgroup * kWarpgroupFloats;
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

template <class Params, class Storage, class Pipelines>
__device__ void run_consumer(const Params& p, Storage& smem, Pipelines& pipes) {
  using namespace cute;
  using Traits = typename Params::Traits;
  constexpr int D = Traits::kHeadDim;
  constexpr int kBlockN = Traits::kBlockN;
  constexpr int kRows = Traits::kWarpgroupRows;
  using PipelineTile = typename Traits::PipelineTile;
  using PipelineQ = typename Traits::PipelineQ;
  using PipelineKV = typename Traits::PipelineKV;

  // 0, 1..; through a shuffle, so that ptxas knows it is warp-uniform (the Q operand's
  // descriptors depend on it).
  const int warpgroup = cutlass::canonical_warp_group_idx() - 1;
  const int thread = static_cast<int>(threadIdx.x) % Traits::kWarpgroupThreads;
  const int warp = thread / 32;
  const int lane = thread % 32;

  typename Traits::TiledMmaQK mma_qk;
  typename Traits::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(thread);
  auto thr_pv = mma_pv.get_thread_slice(thread);

  // Operand views: this warpgroup's 64 Q rows of every Q buffer, every K stage, every V stage
  // read as (d, keys).
  Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Traits::SmemLayoutQ{});
  Tensor sQ_rows = local_tile(sQ, Shape<Int<kRows>, Int<D>, Int<Traits::kStagesQ>>{},
                              make_coord(warpgroup, _0{}, _0{}));
  Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), typename Traits::SmemLayoutKV{});
  Tensor sVt = make_tensor(make_smem_ptr(smem.v.data()), typename Traits::SmemLayoutVt{});
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ_rows);  // (MMA, MMA_M, MMA_K, Q buffer)
  Tensor tSrK = thr_qk.partition_fragment_B(sK);       // (MMA, MMA_N, MMA_K, stage)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);      // (MMA, MMA_N, MMA_K, stage)

  Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kRows>, Int<kBlockN>>{});
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kRows>, Int<D>>{});
  Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv, Shape<Int<kRows>, Int<kBlockN>>{}));
  static_assert(size(decltype(tSrS){}) == kBlockN / 2 && size(decltype(tOrO){}) == D / 2,
                "one warpgroup's 64 rows: N / 2 accumulators per thread");
  // NarrowFirst's QK^T over a K stage's first kNarrowN keys. Its operands are the full GEMM's
  // descriptors (a wgmma's N is its instruction's, not its operands'), its accumulator S's first
  // kNarrowN columns, an owning fragment of their kNarrowN / 2 elements in S's order (element e
  // covers column 8 (e / 4) + ...). Views of S's registers instead sent S to local memory.
  constexpr int kNarrowN = Traits::kNarrowN;
  typename Traits::TiledMmaQKNarrow mma_qk_narrow;
  Tensor tSrS_narrow = partition_fragment_C(mma_qk_narrow, Shape<Int<kRows>, Int<kNarrowN>>{});

  typename PipelineTile::PipelineState tile_r;
  typename PipelineQ::PipelineState q_r;
  typename PipelineKV::PipelineState k_r;
  typename PipelineKV::PipelineState v_r;

  const PingPong<Traits::kConsumerWarpgroups> ping_pong(warpgroup);
  // The last consumer warpgroup's first thread records the trace: every consumer warpgroup
  // receives a tile at the same hand-off, and the turns run the last one behind the others, so
  // its epilogue ends the tile. (A barrier of both warpgroups per tile cost 8-11 % at d = 128,
  // measured.)
  TileTraceRecorder<Params> trace(
      p, threadIdx.x == Traits::kConsumerWarpgroups * Traits::kWarpgroupThreads);
  const BlockIndex block{blockIdx.x, blockIdx.y, blockIdx.z};
  TileState st = p.scheduler.initial_state(smem.sidx, p.summary, block);
  // Tiles with work whose O this warpgroup has stored (kStageOInV's o_released phases).
  [[maybe_unused]] u32 tiles_stored = 0;
  // The next tile from the producer's hand-off slot (SPEC §4.2).
  auto receive_tile = [&](bool first) {
    consumer_wait(pipes.tile, tile_r, "tile hand-off (consumer)");
    const u32 slot = tile_r.index();
    const Optional<SeqInfo> next =
        first ? p.scheduler.template first_work<false, SchedulerSync::Producer>(p.summary, st, slot)
              : p.scheduler.template advance<false, SchedulerSync::Producer>(p.summary, st, slot);
    trace.receive(smem.trace_slot[slot]);
    pipes.tile.consumer_release(tile_r);
    ++tile_r;
    return next;
  };
  // With kPrefetchTile, a tile's last PV hides the receipt of the next tile (the hand-off wait,
  // the scheduler's advance), which otherwise sits between two tiles' GEMMs.
  for (Optional<SeqInfo> work = receive_tile(true); work;) {
    Optional<SeqInfo> next{};
    bool received = false;
    // The tile's index: kPrefetchTile moves st to the next tile before the epilogue.
    [[maybe_unused]] const u32 work_idx = st.idx;
    const TileGeometry g = tile_geometry(p, *work);
    trace.stamp_start();

    if (has_work(g)) {
      // Row positions in key space for the causal mask (bottom-right aligned): the thread's rows
      // see keys up to their limit; keys at or past kv_len (the next sequence's, or the TMA's
      // zero fill) are never visible.
      const u32 diag_shift = g.kv_len - g.seq_len;
      const u32 wg_row0 = work->prompt_offset + static_cast<u32>(warpgroup * kRows);
      u32 key_limit[2];
      for (int r = 0; r < 2; ++r)
        key_limit[r] = wg_row0 + static_cast<u32>(warp * 16 + lane / 4 + 8 * r) + diag_shift;
      // A block needs the mask when it reaches the key tail ((b + 1) BN > kv_len) or past the
      // warpgroup's first row's diagonal ((b + 1) BN > wg_row0 + diag_shift + 1); processed last
      // to first, such blocks come first. With kMaskFromShared the test is one block index kept
      // through the loop instead of the values it comes from (the tail's and the diagonal's first
      // such block), and the mask's values come from shared memory (below); two consumer
      // warpgroups keep the values (measured: the index form cost d = 256 1-1.6 % on short dense
      // rows, and moved d = 64 and 128 by -0.5..+1 %).
      const u32 first_masked_block =
          !Traits::kMaskFromShared ? 0u
          : p.causal               ? min(g.kv_len / kBlockN, (wg_row0 + diag_shift + 1) / kBlockN)
                                   : g.kv_len / kBlockN;
      auto needs_mask = [&](int block) {
        if constexpr (Traits::kMaskFromShared) {
          return static_cast<u32>(block) >= first_masked_block;
        } else {
          const u32 key0 = static_cast<u32>(block) * kBlockN;
          return key0 + kBlockN > g.kv_len ||
                 (p.causal && key0 + kBlockN > wg_row0 + diag_shift + 1);
        }
      };
      u32* const mask_slot =
          Traits::kMaskFromShared
              ? smem.mask_of_warp[warpgroup * (Traits::kWarpgroupThreads / 32) + warp]
              : nullptr;
      if constexpr (Traits::kMaskFromShared) {
        __syncwarp();  // the warp's reads of the previous tile's values are done
        if (lane == 0) {
          mask_slot[0] = g.kv_len;
          mask_slot[1] = wg_row0 + static_cast<u32>(warp * 16) + diag_shift;
        }
        __syncwarp();
      }
      auto mask_block = [&](auto& scores, u32 key0) {
        if constexpr (Traits::kMaskFromShared) {
          const volatile u32* const values = mask_slot;  // read here, not hoisted into the loop
          const u32 row_limit = values[1] + static_cast<u32>(threadIdx.x % 32) / 4;
          const u32 limits[2] = {row_limit, row_limit + 8};
          mask_scores(scores, key0, values[0], p.causal, limits);
        } else {
          mask_scores(scores, key0, g.kv_len, p.causal, key_limit);
        }
      };
      RowState rs{{-INFINITY, -INFINITY}, {0.f, 0.f}};
      // Never true (validate() bounds the rows), but ptxas cannot know: the PV wait's pinning store
      // and kRebuildQOperand's q_step depend on it.
      [[maybe_unused]] const bool never = p.q_rows < 0;
      float alpha[2];
      clear(tOrO);

      // The blocks [kv_block_begin, kv_block_end): all of the tile's but for split_tail's pieces.
      const int block_begin = kHandsOutPieces<Params> ? static_cast<int>(g.kv_block_begin) : 0;
      int block_idx = static_cast<int>(kHandsOutPieces<Params> ? g.kv_block_end : g.kv_blocks) - 1;

      // Block kv_blocks - 1: S only, once the tile's Q has arrived, in this warpgroup's turn.
      consumer_wait(pipes.q, q_r, "Q buffer (consumer)");
      const int q_buffer = q_r.index();
      // The loop's QK^T operand. By default its descriptors (a register pair per k slice) are
      // made once, before the loop, in uniform registers. With kRebuildQOperand the loop makes
      // them at every block, one 64-bit uniform add each, from the Q buffer's descriptor carried
      // through the loop: it moves by q_step at every block, which is 0 (`never`) but not to
      // ptxas, so the 16 descriptors of d = 256 are not hoisted out of the loop, where they had
      // pushed it into local memory (184 bytes of spills). (Before, the loop rebuilt them from
      // the buffer's address read back from shared memory: 2 R2UR and 2 more instructions per k
      // slice; docs/gpu-performance.md, twelfth session.)
      [[maybe_unused]] std::uint64_t q_desc = tSrQ(_, _, _, q_buffer).data().desc_.desc_;
      [[maybe_unused]] const std::uint64_t q_step = never ? 1u : 0u;
      auto q_operand_in_loop = [&] {
        if constexpr (Traits::kRebuildQOperand) {
          q_desc += q_step;
          auto it = tSrQ(_, _, _, 0).data();
          it.desc_.desc_ = q_desc;
          return make_tensor(it, tSrQ(_, _, _, 0).layout());
        } else {
          return tSrQ(_, _, _, q_buffer);
        }
      };
      // NarrowFirst: when the warpgroup's rows see none of this block's keys past its first
      // kNarrowN (a causal diagonal or the key tail inside the block), its QK^T and softmax of
      // the block run over those keys only, and P's other weights are 0. The PV stays whole
      // (a PV of fewer k slices, or none, in one iteration made ptxas serialize the loops'
      // wgmma: docs/gpu-performance.md). Only the first block can be narrow: the tile's rows
      // reach at most BM - 64 <= BN keys further than the warpgroup's.
      const u32 first_key0 = static_cast<u32>(block_idx) * kBlockN;
      bool narrow = false;
      // (Not for split_tail's pieces, whose kernel then kept S in local memory; its tiles have
      // no mask but the key tail.)
      if constexpr (Traits::kNarrowFirst && !kHandsOutPieces<Params>) {
        const u32 end = p.causal ? min(g.kv_len, wg_row0 + diag_shift + kRows) : g.kv_len;
        narrow = end <= first_key0 + kNarrowN;
      }
      ping_pong.wait_turn();
      consumer_wait(pipes.k, k_r, "K stage (consumer)");
      if (narrow)
        warpgroup_gemm(mma_qk_narrow, tSrQ(_, _, _, q_buffer), tSrK(_, _, _, k_r.index()),
                       tSrS_narrow, false);
      else
        warpgroup_gemm(mma_qk, tSrQ(_, _, _, q_buffer), tSrK(_, _, _, k_r.index()), tSrS, false);
      ping_pong.pass_turn();
      warpgroup_wait<0>();
      pipes.k.consumer_release(k_r);
      ++k_r;
      if (block_idx == block_begin) pipes.q.consumer_release(q_r);
      if (narrow) {
        // Keys past kNarrowN lie past some row's last, so a narrow block needs the mask.
        mask_block(tSrS_narrow, first_key0);
        softmax_block(tSrS_narrow, rs, p.scale_log2, alpha);
        convert_to_p(tSrS_narrow, tOrP);
        CUTE_UNROLL
        for (int e = kNarrowN / 2; e < size(tOrP); ++e) tOrP(e) = Element(0.f);
      } else {
        if (needs_mask(block_idx)) mask_block(tSrS, first_key0);
        softmax_block(tSrS, rs, p.scale_log2, alpha);
        convert_to_p(tSrS, tOrP);
      }

      // O's rescale by the last softmax's alpha, before the PV that accumulates its P.
      auto rescale_o = [&] {
        if constexpr (Traits::kSkipUnitRescale || Traits::kRescaleThreshold > 0) {
          // Once a row's max settles (long rows: most blocks), alpha is exactly 1.
          if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f))
            rescale_rows(tOrO, alpha);
        } else {
          rescale_rows(tOrO, alpha);
        }
      };

      // Blocks below: S of block j with O += P V of block j + 1 in flight.
      // The blocks that need the mask are the highest ones (needs_mask grows with the block), so
      // they come first: one loop runs them with the mask, a second runs the rest without testing
      // for it (the test took about 10 instructions and a branch per block).
      auto kv_block = [&](int block_idx, auto masked) {
        ping_pong.wait_turn();
        consumer_wait(pipes.k, k_r, "K stage (consumer)");
        warpgroup_gemm<Traits::kRebuildQOperand>(mma_qk, q_operand_in_loop(),
                                                 tSrK(_, _, _, k_r.index()), tSrS, false);
        consumer_wait(pipes.v, v_r, "V stage (consumer)");
        warpgroup_gemm(mma_pv, tOrP, tOrV(_, _, _, v_r.index()), tOrO, true);
        ping_pong.pass_turn();
        warpgroup_wait<1>();  // S ready; PV may still run
        pipes.k.consumer_release(k_r);
        ++k_r;
        if (block_idx == block_begin) pipes.q.consumer_release(q_r);
        if constexpr (decltype(masked)::value)
          mask_block(tSrS, static_cast<u32>(block_idx) * kBlockN);
        // A masked block's row max runs while the PV is in flight, and the wait for the PV comes
        // after it. ptxas moves the wait (WARPGROUP.DEPBAR) up to the top of its basic block,
        // right after the mask, unless something holds it: it keeps a shared-memory store before
        // the wait, so a store of a softmax result, on a condition that never holds but that
        // ptxas cannot prove, pins the wait after that result.
        [[maybe_unused]] float base[2];  // the softmax's second part subtracts it
        // A block no mask touches takes no row max (softmax_held, after the PV's wait).
        constexpr bool kHeld = !decltype(masked)::value;
        if constexpr (!kHeld) {
          softmax_max<Traits::kRescaleThreshold>(tSrS, rs, p.scale_log2, alpha, base);
          if (never) smem.never_written = __float_as_uint(base[0]) ^ __float_as_uint(base[1]);
        }
        warpgroup_wait<0>();  // PV done: its P and V stage are free, O may be rescaled
        pipes.v.consumer_release(v_r);
        ++v_r;
        if constexpr (kHeld) {
          softmax_held<Traits::kRescaleThreshold>(tSrS, tOrP, tOrO, rs, p.scale_log2);
        } else {
          rescale_o();
          softmax_exp(tSrS, rs, p.scale_log2, alpha, base);
          convert_to_p(tSrS, tOrP);
        }
      };
      for (--block_idx; block_idx >= block_begin && needs_mask(block_idx); --block_idx)
        kv_block(block_idx, std::true_type{});
      for (; block_idx >= block_begin; --block_idx) kv_block(block_idx, std::false_type{});

      // Block 0's PV.
      ping_pong.wait_turn();
      consumer_wait(pipes.v, v_r, "V stage (consumer)");
      warpgroup_gemm(mma_pv, tOrP, tOrV(_, _, _, v_r.index()), tOrO, true);
      ping_pong.pass_turn();
      if constexpr (Traits::kPrefetchTile) {
        next = receive_tile(false);
        received = true;
      }
      warpgroup_wait<0>();
      pipes.v.consumer_release(v_r);
      const auto v_last = v_r;  // the fill that held V(0)
      ++v_r;
      ++q_r;

      // split_tail: a piece of a split tile leaves its state for combine_split_tiles and stores
      // no rows.
      TileRows rows = g.rows;
      if constexpr (kHandsOutPieces<Params>) {
        if (work->is_piece()) {
          const SplitPiece piece = p.scheduler.split_of(work_idx, g.kv_block_begin);
          if (piece.is_split()) {
            save_piece(p, piece, warpgroup, thread, tOrO, rs);
            rows.query_rows = 0;
          }
        }
      }

      // Epilogue: O / rowsum as bf16 and LSE, then O's stores, with a TMA store when the
      // warpgroup's 64 rows all belong to the tile, else from registers.
      const int thread_row = warpgroup * kRows + warp * 16 + lane / 4;
      Tensor tOrOut = make_tensor_like<Element>(tOrO);
      normalize_rows(p, tOrO, rs, rows, work->head_idx, thread_row, tOrOut);
      const bool full = rows.query_rows >= static_cast<u32>((warpgroup + 1) * kRows);
      if (full) {
        Element* staging;
        if constexpr (Traits::kStageOSplit) {
          // Warpgroup 0 stages in its own buffer (store_tile_outputs_tma waits for its last
          // store); warpgroup 1 in V(0)'s stage, which the producer loads again only after
          // warpgroup 1 arrives on that stage's o_released_v (below).
          if (warpgroup == 0) {
            staging = smem.o.data();
          } else {
            barrier_wait(smem.pipe_v.empty_barrier_[v_last.index()], v_last.phase(),
                         "V stage for O (consumer)");
            staging = smem.v.data() + v_last.index() * kBlockN * D;
          }
        } else if constexpr (Traits::kStageOInV) {
          // Warpgroup w stages O in the V stage filled W - 1 - w fills before V(0)'s (V(0)'s
          // for the last): the turns run warpgroup 0 first, so the stage it takes was released
          // earliest. Every warpgroup has released that fill once its empty barrier completes
          // the fill's phase, and the producer loads no V of the next tile before this
          // warpgroup arrives on o_released (below). The stage may have held another
          // warpgroup's O of the previous tile: its store has read it once o_released
          // completed that tile's phase.
          const auto [stage, phase] = earlier_fill<Traits::kStagesKV>(
              v_last.index(), v_last.phase(), Traits::kConsumerWarpgroups - 1 - warpgroup);
          if (tiles_stored > 0)
            barrier_wait(smem.o_released, (tiles_stored - 1) % 2, "O staged in V (consumer)");
          barrier_wait(smem.pipe_v.empty_barrier_[stage], phase, "V stage for O (consumer)");
          staging = smem.v.data() + stage * kBlockN * D;
        } else {
          staging = smem.o.data() + warpgroup * cosize(typename Traits::SmemLayoutO{});
        }
        store_tile_outputs_tma(p, staging, tOrOut, rows, work->head_idx, warpgroup, thread);
      } else {
        store_tile_outputs(p, tOrOut, rows, work->head_idx, thread_row);
      }
      if constexpr (Traits::kStageOSplit) {
        // Warpgroup 1: one arrive per tile with work on V(0)'s stage, once its store has read.
        if (warpgroup != 0 && thread == kTmaStoreThread) {
          if (full) tma_store_wait<0>();
          smem.o_released_v[v_last.index()].arrive();
        }
      } else if constexpr (Traits::kStageOInV) {
        // One arrive per warpgroup and tile with work; a staging one once its store has read.
        if (thread == kTmaStoreThread) {
          if (full) tma_store_wait<0>();
          smem.o_released.arrive();
        }
        ++tiles_stored;
      }
    }

    // Trace: start when the consumer begins the tile, end after the epilogue's stores.
    trace.stamp_end();
    work = received ? next : receive_tile(false);
  }
  // The warpgroup's last TMA store of O must be done (written, not only read) before it exits.
  if (thread == kTmaStoreThread) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  ping_pong.finish();
}

// ---- the kernel ----------------------------------------------------------------------------

template <class Traits>
struct FmhaPipelines {
  typename Traits::PipelineTile tile;
  typename Traits::PipelineQ q;
  typename Traits::PipelineKV k;
  typename Traits::PipelineKV v;
};

// A TMA pipeline's parameters: thread 0 (the loader) arrives with the byte count, every consumer
// thread releases.
template <class Pipeline, class Traits>
__device__ __forceinline__ typename Pipeline::Params tma_pipeline_params(bool producer,
                                                                         std::uint32_t bytes) {
  typename Pipeline::Params params;
  params.transaction_bytes = bytes;
  params.role = producer ? Pipeline::ThreadCategory::Producer : Pipeline::ThreadCategory::Consumer;
  params.is_leader = threadIdx.x == 0;
  params.num_consumers = Traits::kConsumerThreads;
  return params;
}

template <class Scheduler, class Config>
__global__ void __launch_bounds__(FmhaTraits<Config>::kThreads, 1)
    fmha_kernel(const __grid_constant__ FmhaParams<Scheduler, Config> p) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Traits = FmhaTraits<Config>;
  using PipelineTile = typename Traits::PipelineTile;
  using PipelineQ = typename Traits::PipelineQ;
  using PipelineKV = typename Traits::PipelineKV;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  auto& smem = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);
#if TILESCHED_GPU_HANG_TRAP
  // The swizzled layouts assume 1024-byte aligned buffers.
  if ((cute::cast_smem_ptr_to_uint(smem_raw) & 1023u) != 0) __trap();
#endif

  const int warpgroup = cutlass::canonical_warp_group_idx();
  const bool producer = warpgroup == 0;

  typename PipelineTile::Params tile_params;
  tile_params.role =
      producer ? PipelineTile::ThreadCategory::Producer : PipelineTile::ThreadCategory::Consumer;
  // The producer's thread 0, and while recording also its trace writer.
  tile_params.producer_arv_count = p.trace.events != nullptr ? 2 : 1;
  tile_params.consumer_arv_count = Traits::kConsumerThreads;

  // Warp 0 initialises every barrier; the CTA barrier below publishes them.
  // Without a cluster (1, 1, 1); with two CTAs the Q and K/V stages are released by both CTAs'
  // consumers (Q's only so that its releases, which go to the cluster's CTAs, stay counted).
  const typename Traits::ClusterShape cluster_shape{};
  FmhaPipelines<Traits> pipes{
      PipelineTile(smem.pipe_tile, tile_params),
      PipelineQ(smem.pipe_q, tma_pipeline_params<PipelineQ, Traits>(producer, Traits::kQBytes),
                cluster_shape),
      PipelineKV(smem.pipe_k, tma_pipeline_params<PipelineKV, Traits>(producer, Traits::kKVBytes),
                 cluster_shape),
      PipelineKV(smem.pipe_v, tma_pipeline_params<PipelineKV, Traits>(producer, Traits::kKVBytes),
                 cluster_shape)};
  if constexpr (Traits::kStageOInV) {
    if (threadIdx.x == 0) {
      smem.o_released.init(Traits::kConsumerWarpgroups);
      if constexpr (Traits::kStageOSplit)
        for (int stage = 0; stage < Traits::kStagesKV; ++stage)
          smem.o_released_v[stage].init(Traits::kConsumerWarpgroups - 1);
      cutlass::arch::fence_barrier_init();
    }
  }
  if constexpr (Traits::kClusterM > 1)
    cute::cluster_sync();  // both CTAs' barriers initialised before any multicast or release
  else
    __syncthreads();

  if (producer) {
    cutlass::arch::warpgroup_reg_dealloc<Traits::kProducerRegisters>();
    run_producer(p, smem, pipes);
  } else {
    cutlass::arch::warpgroup_reg_alloc<Traits::kConsumerRegisters>();
    run_consumer(p, smem, pipes);
  }
#else
  // Only sm_90a has wgmma and setmaxnreg; the host never launches another build.
  (void)p;
  __trap();
#endif
}

// split_tail's second kernel, launched after the attention kernel on the same stream: block
// (t, w) finishes warpgroup w's rows of the tail's split tile t from its pieces' states, in
// KV-block order (the running maxima's max; sums and unscaled O rescaled to it), then O / sum
// and LSE as the attention kernel's epilogue writes them. 128 threads, each combining what the
// same consumer thread held.
template <class Params>
__global__ void __launch_bounds__(128) combine_split_tiles(const __grid_constant__ Params p) {
  using namespace cute;
  using Traits = typename Params::Traits;
  constexpr int D = Traits::kHeadDim;
  constexpr int kRows = Traits::kWarpgroupRows;
  constexpr int kThreads = Traits::kWarpgroupThreads;
  const auto& sched = p.scheduler;
  const u32 idx = sched.full_tiles + blockIdx.x;
  const SplitPiece piece = sched.split_of(idx, 0);
  if (!piece.is_split()) return;  // a tail tile in one CTA's range: stored by the kernel
  const int warpgroup = static_cast<int>(blockIdx.y);
  const int thread = static_cast<int>(threadIdx.x);
  const SeqInfo tile = sched.unsafe_seq_info(p.summary, idx);
  const TileGeometry g = tile_geometry(p, tile);

  typename Traits::TiledMmaPV mma_pv;
  Tensor o = partition_fragment_C(mma_pv, Shape<Int<kRows>, Int<D>>{});
  constexpr int kAcc = decltype(size(o))::value;
  RowState rs{{-INFINITY, -INFINITY}, {0.f, 0.f}};
  for (u32 k = 0; k < piece.pieces; ++k) {
    const float* const state = piece_state(p, piece, k, warpgroup);
    const float4 ms = __ldcg(reinterpret_cast<const float4*>(state + kAcc * kThreads + thread * 4));
    rs.max[0] = fmaxf(rs.max[0], ms.x);
    rs.max[1] = fmaxf(rs.max[1], ms.y);
  }
  clear(o);
  for (u32 k = 0; k < piece.pieces; ++k) {
    const float* const state = piece_state(p, piece, k, warpgroup);
    const float4 ms = __ldcg(reinterpret_cast<const float4*>(state + kAcc * kThreads + thread * 4));
    // A row no piece saw a key of keeps max -inf and weight 0.
    const float w[2] = {rs.max[0] == -INFINITY ? 0.f : fast_exp2(ms.x - rs.max[0]),
                        rs.max[1] == -INFINITY ? 0.f : fast_exp2(ms.y - rs.max[1])};
    rs.sum[0] += w[0] * ms.z;
    rs.sum[1] += w[1] * ms.w;
    CUTE_UNROLL
    for (int e = 0; e < kAcc; e += 4) {
      const float4 a =
          __ldcg(reinterpret_cast<const float4*>(state + (e / 4) * kThreads * 4 + thread * 4));
      o(e) += w[(e / 2) % 2] * a.x;
      o(e + 1) += w[(e / 2) % 2] * a.y;
      o(e + 2) += w[((e + 2) / 2) % 2] * a.z;
      o(e + 3) += w[((e + 2) / 2) % 2] * a.w;
    }
  }
  const int thread_row = warpgroup * kRows + (thread / 32) * 16 + (thread % 32) / 4;
  Tensor out = make_tensor_like<Element>(o);
  normalize_rows(p, o, rs, g.rows, tile.head_idx, thread_row, out);
  store_tile_outputs(p, out, g.rows, tile.head_idx, thread_row);
}

}  // namespace tilesched::gpu::sm90
