// The warp-specialized Hopper attention forward kernel (TMA + wgmma), driven by a scheduler of
// common/. One persistent CTA of three or four warpgroups per SM, each walking the scheduler's
// tiles:
//
//   warpgroup 0, the producer (registers lowered): owns the scheduler. Per tile it takes part in
//     the hand-off (hand_off.cuh: the scheduler's next tile, published to the consumers) and its
//     thread 0 issues the tile's TMA loads (mainloop.cuh: Q into a Q buffer, K and V blocks into
//     their stage rings).
//   warpgroups 1.. (two or three: configs.hpp), the consumers (registers raised), each owning 64
//     of the tile's BM = 64 * consumers query rows. Per tile: receive it from the hand-off, run
//     the K/V loop (mainloop.cuh, with the softmax of softmax.cuh), then the epilogue
//     (epilogue.cuh: O / rowsum and LSE, stored through shared memory and a TMA store), or for a
//     piece of a split tile (split_tail, split_kv, stream_k) save its partial state
//     (combine.cuh).
//
// In clusters of two CTAs (kClusterM, d = 128's dense rows of one length: launch.cuh) the two
// CTAs run tiles of the same head and keys; each loader loads half of every K/V block, multicast
// to both, and a stage is loaded again once both CTAs' consumers released it.
//
// Barriers: the tile hand-off (PipelineAsync, two slots), the Q, K and V pipelines (full/empty
// mbarrier pairs, PipelineTmaAsync), with O staged in V the epilogue's o_released barriers, and
// the named barriers of sync.cuh (the scheduler's, the producer warpgroup's, the consumers' GEMM
// turns, each consumer warpgroup's O staging). docs/gpu-kernel.md draws the map.
#pragma once

#include <cuda_bf16.h>
#include <cutlass/arch/reg_reconfig.h>

#include <cstdint>

#include "sm90/combine.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/hand_off.cuh"
#include "sm90/mainloop.cuh"
#include "sm90/problem.cuh"
#include "sm90/softmax.cuh"
#include "sm90/sync.cuh"
#include "sm90/trace.cuh"
#include "sm90/traits.cuh"
#include "tilesched/scheduler.hpp"

namespace tilesched::gpu::sm90 {

// With AttentionArgs::launch_done: each CTA counts itself done at its end and the grid's last
// leaves the words ready for the next launch (restore_launch_words): a counter scheduler's
// counter (queue_counter, null for the others) back at counter_start, while recording the
// trace's count moved to trace_last_count (null when not recording or not asked). Null
// launch_done: nothing restored.
struct LaunchWords {
  u32* launch_done = nullptr;
  u32* queue_counter = nullptr;
  u32 counter_start = 0;
  u32* trace_last_count = nullptr;
};

// Everything the kernel reads, built once on the host (launch.cuh). Passed as a __grid_constant__
// parameter: the TMA descriptors must live in parameter space, and come first.
template <class Scheduler, class Config>
struct FmhaParams {
  using Traits = FmhaTraits<Config>;
  MainloopParams<Traits> mainloop;  // Q, K and V's TMA descriptors
  EpilogueParams<Traits> epilogue;  // O's
  Scheduler scheduler;
  TileSummary summary;
  Problem problem;
  Outputs outputs;
  SoftmaxParams softmax;
  TraceParams trace;
  CombineParams combine;
  LaunchWords launch_words;
};

// The kernel's shared memory, by alignment: the tiles (1024 bytes, the swizzle's period), then the
// mbarriers, then 4-byte words; each collective's part in each.
template <class Traits>
struct SharedStorage {
  MainloopBuffers<Traits> mainloop_buffers;
  EpilogueBuffers<Traits> epilogue_buffers;
  MainloopBarriers<Traits> mainloop_barriers;
  typename Traits::PipelineTile::SharedStorage hand_off_barriers;
  EpilogueBarriers<Traits> epilogue_barriers;
  HandOffWords<Traits> hand_off_words;
  MaskWords<Traits> mask_words;
  MainloopWords mainloop_words;
};
template <class Config>
inline constexpr int kSharedBytes = static_cast<int>(sizeof(SharedStorage<FmhaTraits<Config>>));

template <class Traits>
struct FmhaPipelines {
  typename Traits::PipelineTile tile;
  typename Traits::PipelineQ q;
  typename Traits::PipelineKV k;
  typename Traits::PipelineKV v;
};

// Called by each CTA's fetching thread once its producer loop has ended (its last fetch and,
// while recording, its trace writer's last claim of an event slot are done: every schedule step
// passes the producers' barriers; a CTA with no tile fetches nothing): the last CTA of the grid
// to arrive puts the counter back at counter_start, moves the trace's count to last_count and
// zeroes it, and zeroes launch_done, so that the next launch on them needs no reset kernel
// (AttentionArgs::launch_ready). Every CTA has fetched and claimed for the last time when the
// count is full, so nothing of this launch can follow the restore.
template <class Params>
__device__ __forceinline__ void restore_launch_words(const Params& p) {
  const LaunchWords& w = p.launch_words;
  if (w.launch_done == nullptr) return;
  __threadfence();  // this CTA's fetches and claims before its arrival
  if (atomicAdd(w.launch_done, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
    __threadfence();
    if (w.queue_counter != nullptr) atomicExch(w.queue_counter, w.counter_start);
    if (w.trace_last_count != nullptr)
      atomicExch(w.trace_last_count, atomicExch(p.trace.buffer.count, 0u));
    atomicExch(w.launch_done, 0u);
  }
}

template <class Params, class Pipelines>
__device__ void run_producer(const Params& p, SharedStorage<typename Params::Traits>& smem,
                             Pipelines& pipes) {
  using Traits = typename Params::Traits;
  const bool loader = threadIdx.x == 0;  // the TMA-issuing thread, also the scheduler's thread 0
  if (loader) MainloopProducer<Params>::prefetch_descriptors(p);
  auto tile_w = cutlass::make_producer_start_state<typename Traits::PipelineTile>();
  auto writes = MainloopStates<Traits>::producer_start();
  MainloopProducer<Params> mainloop(p, smem.mainloop_buffers, writes, loader);
  HandOffProducer<Params> hand_off(p, smem.hand_off_words, pipes.tile, tile_w, loader);
  OReleaseWait<Traits> o_release(smem.epilogue_barriers);
  for (Optional<SeqInfo> work = hand_off.schedule(true); work;) {
    Optional<SeqInfo> next{};
    if constexpr (Traits::kStagesQ == 1) {
      // One Q buffer: the next tile's Q waits for this tile's last QK^T, and the scheduler's
      // advance (the counter's atomic, a plan read) then sat between this tile's last load and
      // the next one's first. For a sequence of at most 512 keys the next tile is scheduled right
      // after this tile's Q and first K instead; every producer thread takes part, so the loads
      // are split around it. Not for longer sequences: a CTA that holds its next tile one tile
      // sooner unbalanced the counter schedulers on long causal rows ("Early hand-off at
      // d = 256").
      const TileGeometry g = tile_geometry(p, *work);
      const bool early = g.kv_len <= 512u;
      mainloop.load_tile(pipes, o_release, *work, g, [&] {
        if (early) next = hand_off.schedule(false);
      });
      if (!early) next = hand_off.schedule(false);
    } else {
      if (mainloop.issues_loads())
        mainloop.load_tile(pipes, o_release, *work, tile_geometry(p, *work), [] {});
      next = hand_off.schedule(false);
    }
    work = next;
  }
  if (loader) restore_launch_words(p);
  mainloop.tail(pipes);
}

template <class Params, class Pipelines>
__device__ void run_consumer(const Params& p, SharedStorage<typename Params::Traits>& smem,
                             Pipelines& pipes) {
  using Traits = typename Params::Traits;
  // 0, 1..; through a shuffle, so that ptxas knows it is warp-uniform (the Q operand's
  // descriptors depend on it).
  const int warpgroup = cutlass::canonical_warp_group_idx() - 1;
  const int thread = static_cast<int>(threadIdx.x) % Traits::kWarpgroupThreads;
  const int warp = thread / 32;
  const int lane = thread % 32;
  MainloopConsumer<Params> mainloop(p, smem.mainloop_buffers, warpgroup, thread);
  typename Traits::PipelineTile::PipelineState tile_r;
  MainloopStates<Traits> reads;
  const PingPong<Traits::kConsumerWarpgroups> turns(warpgroup);
  // The last consumer warpgroup's first thread records the trace: every consumer warpgroup
  // receives a tile at the same hand-off, and the turns run the last one behind the others, so
  // its epilogue ends the tile. (A barrier of both warpgroups per tile cost 8-11 % at d = 128.)
  TileTraceRecorder<Params> trace(
      p, threadIdx.x == Traits::kConsumerWarpgroups * Traits::kWarpgroupThreads);
  HandOffConsumer<Params> hand_off(p, smem.hand_off_words, pipes.tile, tile_r);
  EpilogueConsumer<Params> epilogue(p, warpgroup, thread);
  for (Optional<SeqInfo> work = hand_off.receive(true, trace); work;) {
    Optional<SeqInfo> next{};
    bool received = false;
    // The tile's index (kPrefetchTile receives the next tile before the epilogue).
    [[maybe_unused]] const u32 work_idx = hand_off.tile_index();
    const TileGeometry g = tile_geometry(p, *work);
    trace.stamp_start();
    if (has_work(g)) {
      const TileMask<Params> mask(p, g, *work, smem.mask_words, warpgroup, warp, lane);
      // With kPrefetchTile the tile's last PV hides the receipt of the next tile (the hand-off
      // wait, the scheduler's advance), which otherwise sits between two tiles' GEMMs.
      const auto result = mainloop.run(pipes, reads, smem.mainloop_words, g, mask, turns, [&] {
        next = hand_off.receive(false, trace);
        received = true;
      });
      const TileRows rows =
          save_if_piece(p, *work, work_idx, g, warpgroup, thread, mainloop.o(), result.rs);
      epilogue.store(smem, mainloop.o(), result.rs, rows, work->head_idx, result.v_last);
    }
    // Trace: start when the consumer begins the tile, end after the epilogue's stores.
    trace.stamp_end();
    work = received ? next : hand_off.receive(false, trace);
  }
  epilogue.finish();
  turns.finish();
}

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
  auto& smem = *reinterpret_cast<SharedStorage<Traits>*>(smem_raw);
#if TILESCHED_GPU_HANG_TRAP
  // The swizzled layouts assume 1024-byte aligned buffers.
  if ((cute::cast_smem_ptr_to_uint(smem_raw) & 1023u) != 0) __trap();
#endif
  const bool producer = cutlass::canonical_warp_group_idx() == 0;

  typename PipelineTile::Params tile_params;
  tile_params.role =
      producer ? PipelineTile::ThreadCategory::Producer : PipelineTile::ThreadCategory::Consumer;
  // The producer's thread 0, and while recording also its trace writer.
  tile_params.producer_arv_count = p.trace.buffer.events != nullptr ? 2 : 1;
  tile_params.consumer_arv_count = Traits::kConsumerThreads;

  // Warp 0 initialises every barrier; the CTA barrier below publishes them.
  // Without a cluster (1, 1, 1); with two CTAs the Q and K/V stages are released by both CTAs'
  // consumers (Q's only so that its releases, which go to the cluster's CTAs, stay counted).
  const typename Traits::ClusterShape cluster_shape{};
  auto& barriers = smem.mainloop_barriers;
  FmhaPipelines<Traits> pipes{
      PipelineTile(smem.hand_off_barriers, tile_params),
      PipelineQ(barriers.pipe_q, tma_pipeline_params<PipelineQ, Traits>(producer, Traits::kQBytes),
                cluster_shape),
      PipelineKV(barriers.pipe_k,
                 tma_pipeline_params<PipelineKV, Traits>(producer, Traits::kKVBytes),
                 cluster_shape),
      PipelineKV(barriers.pipe_v,
                 tma_pipeline_params<PipelineKV, Traits>(producer, Traits::kKVBytes),
                 cluster_shape)};
  if (threadIdx.x == 0) smem.epilogue_barriers.init();
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

}  // namespace tilesched::gpu::sm90
