// The compile-time shape of the warp-specialized sm90 attention kernel for one head dim: tile
// sizes, pipeline depths, shared-memory layouts, the two warpgroup GEMMs, the TMA copy types and
// the shared-storage struct. Everything else in the kernel is a runtime value (scheduler, mask,
// lengths), so one instantiation per head dim serves every workload.
#pragma once

#include <cutlass/numeric_types.h>

#include <cstdint>
// Every wgmma N (multiples of 8 up to 256), so BN need not be a power of two.
#ifndef CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#endif
#include <cute/tensor.hpp>  // also the MMA and copy atoms (GMMA, TMA)
#include <cutlass/pipeline/sm90_pipeline.hpp>
#include <utility>

#include "tilesched/gpu/attention.hpp"
#include "tilesched/types.hpp"

namespace tilesched::gpu::sm90 {

using Element = cutlass::bfloat16_t;

// Where a consumer's main loop waits for its PV GEMM, which runs while the softmax of the next
// block's scores does (run_consumer): Unpinned, where ptxas puts the wait (the top of the
// softmax's basic block: the whole softmax waits for the PV); AfterMax, after the row max (ptxas
// may still move some exponentials above it). Measured (docs/gpu-performance.md, eleventh
// session): with the descriptors in uniform registers, AfterMax over Unpinned +0.4..+2.7 % at
// d = 64 and 128 (but seq 512: -0.7..+0.6 %) and +1.0..+4.8 % at d = 256; before that fix
// AfterMax lost at d = 64 and 128. A wait pinned after the whole softmax lost everywhere
// (-1..-11 %) and was removed.
enum class PvWait { Unpinned, AfterMax };

// A kernel configuration: head dim, keys per K/V block (BN), K/V pipeline stages, Q buffers,
// whether O's rescale is skipped for a warp whose rows' max did not move in a block, whether the
// main loop rebuilds its QK^T operand's descriptors at every block (run_consumer says why), and
// how many eighths of the softmax weights are computed on the FMA pipe instead of the exp2 (MUFU)
// unit, whether O's rescale runs while the next QK^T is in flight (run_consumer), the consumers'
// registers after setmaxnreg (the producer gets the rest), whether the consumers receive their
// next tile while the current one's last PV runs (run_consumer), and whether a warpgroup whose 64
// rows all belong to the tile stores O through shared memory with a TMA store instead of from
// registers (store_tile_outputs), whether the consumer warpgroups take turns issuing their GEMMs
// (PingPong; off, each issues whenever it is ready), how many consumer warpgroups there are
// (each owns 64 query rows, so the tile is 64 * ConsumerWarpgroups rows: the scheduler's BM), and
// whether EpilogueTma stages O in the V ring's shared memory instead of buffers of its own
// (store_tile_outputs_tma says how), where the main loop waits for the PV (PvWait), and whether
// a warpgroup runs its QK^T and softmax of its tile's first (highest) K/V block narrow when its
// rows see none of the block's keys past the first kNarrowN (NarrowFirst, run_consumer).
template <int D, int BN, int StagesKV, int StagesQ, bool SkipUnitRescale = false,
          bool RebuildQOperand = false, int FmaExp2Eighths = 0, bool RescaleUnderQK = false,
          int ConsumerRegisters = 232, bool PrefetchTile = false, bool EpilogueTma = false,
          bool PingPongTurns = true, int ConsumerWarpgroups = 2, bool StageOInV = false,
          PvWait PvWaitAt = PvWait::AfterMax, bool NarrowFirst = false>
struct KernelConfig {
  static constexpr int kHeadDim = D;
  static constexpr int kBlockN = BN;
  static constexpr int kStagesKV = StagesKV;
  static constexpr int kStagesQ = StagesQ;
  static constexpr bool kSkipUnitRescale = SkipUnitRescale;
  static constexpr bool kRebuildQOperand = RebuildQOperand;
  static constexpr int kFmaExp2Eighths = FmaExp2Eighths;
  static constexpr bool kRescaleUnderQK = RescaleUnderQK;
  static constexpr int kConsumerRegisters = ConsumerRegisters;
  static constexpr bool kPrefetchTile = PrefetchTile;
  static constexpr bool kEpilogueTma = EpilogueTma;
  static constexpr bool kPingPong = PingPongTurns;
  static constexpr int kConsumerWarpgroups = ConsumerWarpgroups;
  static constexpr bool kStageOInV = StageOInV;
  static constexpr PvWait kPvWait = PvWaitAt;
  static constexpr bool kNarrowFirst = NarrowFirst;
  // NarrowFirst in the queued kind's kernel only (launch_config, fmha_launch.cuh); a
  // configuration that wants it there says so in a struct derived from this one.
  static constexpr bool kNarrowFirstQueued = false;
  // With kStageOInV: warpgroup 0 stages its O in a buffer of its own and only the others in V
  // stages, so the next tile's first V load waits for no O store. kStageOSplitQueued: only in the
  // queued kinds' kernels (launch_config, fmha_launch.cuh). A configuration with the shared memory
  // for one staging buffer says so in a derived struct.
  static constexpr bool kStageOSplit = false;
  static constexpr bool kStageOSplitQueued = false;
  // The epilogue's LSE as one predicated store with lg2.approx.ftz (normalize_rows) instead of a
  // branch around __log2f and the store: 24-40 fewer instructions per kernel, +1.6-1.9 % at
  // d = 64 seq 512-1024 causal, +0.4-1.7 % on short dense rows, within noise on long ones
  // (docs/gpu-performance.md, twenty-second session). kPredicatedLseQueued false: not in the
  // queued kind's kernel (launch_config, fmha_launch.cuh), as d = 128's, which measured 0.3 /
  // 1.0 % slower with it at seq 512 / 1024 causal.
  static constexpr bool kPredicatedLse = true;
  static constexpr bool kPredicatedLseQueued = true;
  // O's rescale only where a row's max grows by more than 2^kRescaleThreshold (softmax_max; 0:
  // at every growth). A configuration that takes it says so in a derived struct.
  static constexpr int kRescaleThreshold = 0;
  // CTAs per cluster (1 or 2). With 2, the two CTAs of a cluster run tiles of the same head and
  // keys at the same time (the tile kernel on dense rows of one length, launch_config) and each
  // loads half of every K and V block, multicast to both (TMA multicast); the K/V pipelines'
  // stages are released by both CTAs' consumers. kClusterPairsTile: the tile kind's kernel takes
  // the cluster kernel where the rows allow it (ClusterConfig, fmha_launch.cuh).
  static constexpr int kClusterM = 1;
  static constexpr bool kClusterPairsTile = false;
  // A block no mask touches takes its weights against the row's held max, without a row max
  // first, and checks them afterwards (softmax_held, run_consumer).
  static constexpr bool kHeldMax = true;
  static_assert(ConsumerWarpgroups == 2 || ConsumerWarpgroups == 3, "two or three consumers");
  // Each consumer warpgroup stages its 64 x d rows of O in a V stage of its own (that they fit
  // in one is FmhaTraits's check).
  static_assert(!StageOInV || (EpilogueTma && StagesKV >= ConsumerWarpgroups),
                "O staged in V needs the TMA epilogue and a V stage per consumer warpgroup");
  static_assert(FmaExp2Eighths >= 0 && FmaExp2Eighths <= 8, "a share in eighths");
};

// The configuration each head dim and BM runs, chosen by measurement (docs/gpu-performance.md).
// Shared memory per CTA is Q_buffers * BM * d + 2 * stages * BN * d bf16 elements (227 KB at
// most); at BM 128:
//   d =  64: BN 128, 2 * 16 KB + 2 * 3 * 16 KB = 128 KB, + 16 KB of O staging (EpilogueTma);
//            at BM 192, 2 * 24 KB + 96 KB + 24 KB
//   d = 128: BN 128, 2 * 32 KB + 2 * 2 * 32 KB = 192 KB, + 32 KB of O staging
//   d = 256: BN 80,  1 * 64 KB + 2 * 2 * 40 KB = 224 KB. A second Q buffer (64 KB) does not fit
//            beside two K/V stages, so at d = 256 the next tile's Q load waits until both
//            consumer warpgroups have issued their last QK^T of the current tile. BN 80 measured
//            +10-16 % over BN 64 at seq 8192 in the ninth session (within 0.3 % in the
//            twenty-first, when BN 64 won on short rows: DefaultConfig<256, 128, 64>), and skipping
//            O's 128-register rescale in blocks where no row's max moved another +3-13 % (at d = 64
//            and 128 the vote cost more than the rescale it saved, on the kernels of 2026-11-30).
// kRescaleThreshold 8 (a row keeps its max until a block's exceeds it by more than 2^8, so the
// vote skips O's rescale in most blocks of a long row): +1.4-3.5 % at d = 256 and +0.4-2.2 % at
// d = 128 (64 FMULs), but 1-3 % slower at d = 64, whose 32-register rescale costs less than the
// vote and the branch (docs/gpu-performance.md, twenty-fourth session).
// PrefetchTile (the next tile received under the last PV) gains 1-4 % at d = 128 seq <= 2048 and
// nothing longer; at d = 64 and 256 it gains 1-2 % short but loses 1-4 % on long dense rows (so
// there only the queued kinds' kernels take it: launch_config, fmha_launch.cuh).
// EpilogueTma (a warpgroup whose 64 rows all belong to the tile stages O with stmatrix and
// stores it with a TMA store) gains 1-8 % at d = 64 and 128; its two 64 x d staging buffers
// (16 / 32 KB) do not fit beside d = 256's tiles, which stage O in the V ring instead (below).
// Neither 240 consumer registers (the producer spills at 24) nor O's rescale under the next QK^T
// measured faster anywhere
// (docs/gpu-performance.md, candidates of 2026-11-30, third session). At d = 128, 224 consumer
// registers (the producer gets 56 and no longer spills around the trace writer) measured
// +1-2 % over 232 at every point; at d = 64 (no spills at 232) 0-2 % slower. Without the GEMM
// turns d = 64 ran 1-5 % slower, d = 128 and 256 dense up to 4-6 % slower, causal within -1..+2 %
// (sixth session).
// NarrowFirst (a warpgroup's first K/V block over its visible keys only: run_consumer) is d = 64
// BM 128's, the kernel of d = 64's short causal rows: +3.6 % at seq 512 causal, +0.6 % at 1024.
// At d = 128 it gained 1.0-1.5 % at seq 512-1024 causal but cost 0.5-0.8 % on long rows, dense
// ones included where it never runs (ptxas placed the pinned PV wait above the exponentials);
// at BM 192 and d = 256 the narrow accumulator pushed the consumers into local memory
// (docs/gpu-performance.md, seventeenth session).
template <int D, int BM, int BN>
struct DefaultConfig;
template <>
struct DefaultConfig<64, 128, 128> {
  using type = KernelConfig<64, 128, 3, 2, false, false, 0, false, 232, false,
                            /*EpilogueTma=*/true, true, 2, false, PvWait::AfterMax,
                            /*NarrowFirst=*/true>;
};
// d = 64 also runs 192-row tiles: three consumer warpgroups, whose 160 registers each leave the
// producer 32 (128 * 512 in all; 152 / 56 serializes the wgmma, ptxas C7512). +10-15 % over
// BM 128 on long dense rows, +3-10 % on long causal ones, but 7-16 % slower at seq <= 1024 (a
// causal tile's diagonal spans more masked blocks, and short sequences waste more of a 192-row
// tile), so the workload's block_m picks it (recommended_block_m, docs/gpu-performance.md).
template <>
struct DefaultConfig<64, 192, 128> {
  using type = KernelConfig<64, 128, 3, 2, false, false, 0, false, /*ConsumerRegisters=*/160, false,
                            /*EpilogueTma=*/true, /*PingPongTurns=*/true,
                            /*ConsumerWarpgroups=*/3, false, PvWait::AfterMax,
                            /*NarrowFirst=*/false>;
};
template <>
struct DefaultConfig<128, 128, 128> {
  struct type : KernelConfig<128, 128, 2, 2, false, false, 0, false, /*ConsumerRegisters=*/224,
                             /*PrefetchTile=*/true, /*EpilogueTma=*/true, true, 2, false,
                             PvWait::AfterMax, /*NarrowFirst=*/false> {
    static constexpr bool kNarrowFirstQueued = true;
    static constexpr bool kPredicatedLseQueued = false;
    static constexpr int kRescaleThreshold = 8;
    static constexpr bool kClusterPairsTile = true;
  };
};
// d = 256 has no shared memory left for O's staging buffers, so each consumer warpgroup stages
// its O in a V stage the tile no longer reads (StageOInV): +10-12 % at seq 512, +4-9 % at
// 1024-2048, +0.4-3 % from 4096 up over storing O from registers. At d = 128, whose staging
// buffers fit, the same aliasing measured 1-4 % slower (the next tile's first V load waits for
// the stores); docs/gpu-performance.md, ninth session.
// d = 256's configuration at K/V blocks of BN keys (80 for long rows, 64 for short ones).
template <int BN>
struct KernelConfig256
    : KernelConfig<256, BN, 2, 1, /*SkipUnitRescale=*/true, /*RebuildQOperand=*/true, 0, false, 232,
                   false, /*EpilogueTma=*/true, true, 2, /*StageOInV=*/true, PvWait::AfterMax,
                   /*NarrowFirst=*/false> {
  static constexpr int kRescaleThreshold = 8;
};
template <>
struct DefaultConfig<256, 128, 80> {
  using type = KernelConfig256<80>;
};
// The same kernel with K/V blocks of 64 keys, for short rows (recommended_block_n): a 512-key row
// is 8 blocks of 64 where BN 80 computes 7 blocks, 560 keys, and a causal tile's diagonal wastes
// less. Measured against BN 80 (twenty-first session): +3.1 / +4.9 % at seq 512 dense / causal,
// +1.7 % at 1024 causal, -0.7 % at 1024 dense, within +-0.8 % from 2048 up. Its 192 KB of tiles
// leave room for one warpgroup's O staging buffer (32 KB): kStageOSplit measured +1.5 / +1.0 % at
// seq 512 / 1024 causal but -1.3 % at 512 dense, so only the queued kinds' kernels (the causal
// rows') take it.
template <>
struct DefaultConfig<256, 128, 64> {
  struct type : KernelConfig256<64> {
    static constexpr bool kStageOSplitQueued = true;
  };
};

// The kernel's types and sizes for one configuration. It is the configuration (its switches are
// reached as Traits::kX), plus what follows from it.
template <class Config>
struct FmhaTraits : Config {
  // The configuration's values this struct's own definitions use (a dependent base's members
  // are not found unqualified).
  using Config::kBlockN, Config::kConsumerRegisters, Config::kConsumerWarpgroups,
      Config::kEpilogueTma, Config::kHeadDim, Config::kStagesKV, Config::kStagesQ,
      Config::kStageOInV, Config::kStageOSplit, Config::kClusterM;
  static constexpr int D = kHeadDim;
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of one or two CTAs");
  using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::_1, cute::_1>;

  // Roles: warpgroup 0 produces (scheduler + TMA), warpgroups 1.. consume, each owning 64 of the
  // tile's query rows.
  static constexpr int kWarpgroupThreads = 128;
  static constexpr int kWarpgroupRows = 64;
  static constexpr int kBlockM = kWarpgroupRows * kConsumerWarpgroups;  // the scheduler's BM
  // Three consumer warpgroups have 160 registers each: the K/V loop keeps the mask's values
  // (kv_len, the thread's last visible key) in shared memory rather than in registers, read only
  // where a block needs the mask (run_consumer).
  static constexpr bool kMaskFromShared = kConsumerWarpgroups == 3;
  static constexpr int kConsumerThreads = kConsumerWarpgroups * kWarpgroupThreads;
  static constexpr int kThreads = kWarpgroupThreads + kConsumerThreads;
  // Register split after setmaxnreg, within what the launch allocates (65536 / threads, rounded
  // down to a multiple of 8: 168 * 384 with two consumer warpgroups, 128 * 512 with three):
  // 40 * 128 + 232 * 256 at d = 64 and 256, 56 * 128 + 224 * 256 at d = 128. The producer needs
  // few (indices, TMA coordinates); the consumers hold O (d / 2 fp32 per thread), S (BN / 2) and
  // P (BN / 4 packed).
  static constexpr int kLaunchRegisters = (65536 / kThreads) / 8 * 8;
  static constexpr int kProducerRegisters =
      (kLaunchRegisters * (1 + kConsumerWarpgroups)) - kConsumerWarpgroups * kConsumerRegisters;
  static_assert(kProducerRegisters >= 24 && kProducerRegisters % 8 == 0 &&
                    kConsumerRegisters % 8 == 0 && kConsumerRegisters <= 256,
                "setmaxnreg takes multiples of 8 in [24, 256]");

  // Shared-memory tiles: rows x d, d contiguous, 128-byte swizzle (the canonical K-major GMMA
  // layout; a TMA box writes it directly).
  using SmemAtom = cute::GMMA::Layout_K_SW128_Atom<Element>;
  using SmemLayoutQ = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kBlockM>, cute::Int<D>, cute::Int<kStagesQ>>{}));
  // One Q buffer: the consumers' main loop builds its Q operand from a buffer's address.
  using SmemLayoutQBuffer =
      decltype(cute::tile_to_shape(SmemAtom{}, cute::Shape<cute::Int<kBlockM>, cute::Int<D>>{}));
  static_assert(cute::cosize_v<SmemLayoutQ> == kStagesQ * cute::cosize_v<SmemLayoutQBuffer>,
                "Q buffers lie one after another, each laid out as SmemLayoutQBuffer");
  using SmemLayoutKV = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kBlockN>, cute::Int<D>, cute::Int<kStagesKV>>{}));
  // V as the B operand of O += P V is (d, keys) with d contiguous: the same bytes as the K-major
  // (keys, d) tile, read MN-major, so V needs no transpose anywhere.
  using SmemLayoutVt = decltype(cute::composition(
      SmemLayoutKV{}, cute::make_ordered_layout(
                          cute::Shape<cute::Int<D>, cute::Int<kBlockN>, cute::Int<kStagesKV>>{},
                          cute::Step<cute::_2, cute::_1, cute::_3>{})));

  // One warpgroup's GEMMs: S = Q K^T (64 x BN, both operands in shared memory) and O += P V
  // (64 x d, P from registers).
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<
          Element, Element, float,
          cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<kBlockN>, cute::Int<D>>>()));
  // NarrowFirst's QK^T of a block of which a warpgroup's rows see no key past the first
  // kNarrowN: S over those keys only (S's first kNarrowN / 2 accumulators); P's other weights are
  // 0 and the PV stays whole. A multiple of 8 (a wgmma N) and of 16 (whole k slices of P).
  static constexpr int kNarrowN = (kBlockN / 2 + 15) / 16 * 16;
  static_assert(kNarrowN < kBlockN && kNarrowN % 16 == 0, "a narrow block is a k-slice multiple");
  using TiledMmaQKNarrow = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<
          Element, Element, float,
          cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<kNarrowN>, cute::Int<D>>>()));
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<
          Element, Element, float,
          cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<D>, cute::Int<kBlockN>>,
          cute::GMMA::Major::K, cute::GMMA::Major::MN>()));

  // Global Q/K/V as the TMA sees them: (rows, d, heads), d contiguous, row stride heads * d.
  using GmemLayout = cute::Layout<cute::Shape<int32_t, cute::Int<D>, int32_t>,
                                  cute::Stride<int64_t, cute::_1, cute::Int<D>>>;
  using GmemTensor = decltype(cute::make_tensor(
      cute::make_gmem_ptr(static_cast<Element const*>(nullptr)), GmemLayout{}));
  using TmaQ = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{}, std::declval<GmemTensor>(),
                                            SmemLayoutQ{}(cute::_, cute::_, cute::_0{})));
  // With kClusterM 2 each CTA's box is half a K/V block, multicast to the cluster.
  using TmaLoadKV =
      std::conditional_t<(kClusterM > 1), cute::SM90_TMA_LOAD_MULTICAST, cute::SM90_TMA_LOAD>;
  using TmaKV = decltype(cute::make_tma_copy(TmaLoadKV{}, std::declval<GmemTensor>(),
                                             SmemLayoutKV{}(cute::_, cute::_, cute::_0{}),
                                             cute::Int<kClusterM>{}));
  // O of one warpgroup's 64 rows, staged for the TMA store (kEpilogueTma): the K-major swizzled
  // layout of Q, written with stmatrix from the accumulator layout.
  using SmemLayoutO = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<D>>{}));
  using TmaO = decltype(cute::make_tma_copy(cute::SM90_TMA_STORE{}, std::declval<GmemTensor>(),
                                            SmemLayoutO{}));
  static constexpr int kOStageElements = kEpilogueTma && !kStageOInV
                                             ? kConsumerWarpgroups * cute::cosize_v<SmemLayoutO>
                                             : (kStageOSplit ? cute::cosize_v<SmemLayoutO> : 1);
  static_assert(!kStageOSplit || (kStageOInV && kConsumerWarpgroups == 2),
                "the split staging is for two consumer warpgroups staging O in V");
  // With kStageOInV a V stage holds a warpgroup's O: stages start 1024-byte aligned (the
  // swizzle's period) and O's 64 rows fit in one.
  static_assert(!kStageOInV || (kBlockN * D * sizeof(Element) % 1024 == 0 &&
                                cute::cosize_v<SmemLayoutO> <= kBlockN * D),
                "a V stage holds one warpgroup's O");

  static constexpr std::uint32_t kQBytes = kBlockM * D * sizeof(Element);
  static constexpr std::uint32_t kKVBytes = kBlockN * D * sizeof(Element);

  using PipelineQ = cutlass::PipelineTmaAsync<kStagesQ>;
  using PipelineKV = cutlass::PipelineTmaAsync<kStagesKV>;
  // The tile hand-off (SPEC §4.2): the producer publishes the next tile in sidx[slot] and arrives;
  // consumers wait, read the slot and release it. Two slots, so the producer can run one tile
  // ahead while consumers still read the other.
  static constexpr int kTileSlots = 2;
  using PipelineTile = cutlass::PipelineAsync<kTileSlots>;

  struct SharedStorage {
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>, 1024> q;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutKV>, 1024> v;
    cute::array_aligned<Element, kOStageElements, 1024> o;  // each consumer warpgroup's O
    typename PipelineQ::SharedStorage pipe_q;
    typename PipelineKV::SharedStorage pipe_k;
    typename PipelineKV::SharedStorage pipe_v;
    typename PipelineTile::SharedStorage pipe_tile;
    // With kStageOInV: each consumer warpgroup arrives once per tile with work when the V stage
    // holding its O may be loaded again; the producer waits for it before that tile's successor's
    // first V load.
    cutlass::arch::ClusterBarrier o_released;
    // With kStageOSplit: per V stage, warpgroup 1's release of the O it staged there.
    cutlass::arch::ClusterBarrier o_released_v[kStagesKV];
    u32 sidx[kTileSlots];
    u32 trace_slot[kTileSlots];  // while recording: the event slot of the tile in sidx[slot]
    // With kMaskFromShared, each consumer warp's mask values for its current tile (kv_len and its
    // first row's last visible key, written by its lane 0), read back where a block is masked.
    u32 mask_of_warp[kConsumerThreads / 32][2];
    u32 never_written;  // run_consumer's store that pins the PV wait (kPvWait); never happens
  };
  static constexpr int kSharedBytes = static_cast<int>(sizeof(SharedStorage));
  static_assert(kSharedBytes <= 227 * 1024, "shared storage exceeds the sm90 limit per CTA");
};

}  // namespace tilesched::gpu::sm90
