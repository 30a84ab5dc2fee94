// The kernel's types for one configuration (configs.hpp): tile sizes, pipeline depths,
// shared-memory layouts, the warpgroup GEMMs and the TMA copy types. Everything else in the kernel
// is a runtime value (mask, lengths) or the scheduler type, so one instantiation per configuration
// and scheduler serves every workload.
#pragma once

#include <cutlass/numeric_types.h>

#include <cstdint>
// CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED (gpu/CMakeLists.txt): every wgmma N, so BN need not be a
// power of two.
#include <cute/tensor.hpp>  // also the MMA and copy atoms (GMMA, TMA)
#include <cutlass/pipeline/sm90_pipeline.hpp>
#include <utility>

#include "sm90/configs.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/types.hpp"

namespace tilesched::gpu::sm90 {

using Element = cutlass::bfloat16_t;

// The kernel's types and sizes for one configuration. It is the configuration (its switches are
// reached as Traits::kX), plus what follows from it.
template <class Config>
struct FmhaTraits : Config {
  // The configuration's values this struct's own definitions use (a dependent base's members
  // are not found unqualified).
  using Config::kBlockN, Config::kConsumerRegisters, Config::kConsumerWarpgroups, Config::kHeadDim,
      Config::kStagesKV, Config::kStagesQ, Config::kOStaging, Config::kClusterM;
  static constexpr int D = kHeadDim;
  // O staged in V stages (every consumer warpgroup, or with kStageOSplit all but warpgroup 0).
  static constexpr bool kStageOInV = kOStaging != OStaging::OwnBuffers;
  static constexpr bool kStageOSplit = kOStaging == OStaging::SplitInV;
  static_assert(!kStageOInV || kStagesKV >= kConsumerWarpgroups,
                "O staged in V needs a V stage per consumer warpgroup");
  static_assert(kClusterM == 1 || kClusterM == 2, "clusters of one or two CTAs");
  using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::_1, cute::_1>;

  // Roles: warpgroup 0 produces (scheduler + TMA), warpgroups 1.. consume, each owning 64 of the
  // tile's query rows.
  static constexpr int kWarpgroupThreads = 128;
  static constexpr int kWarpgroupRows = 64;
  static constexpr int kBlockM = kWarpgroupRows * kConsumerWarpgroups;  // the scheduler's BM
  // Three consumer warpgroups have 160 registers each: the K/V loop keeps the mask's values
  // (kv_len, the thread's last visible key) in shared memory rather than in registers, read only
  // where a block needs the mask (TileMask, softmax.cuh).
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
  // O of one warpgroup's 64 rows, staged for the TMA store: the K-major swizzled
  // layout of Q, written with stmatrix from the accumulator layout.
  using SmemLayoutO = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::Shape<cute::Int<kWarpgroupRows>, cute::Int<D>>{}));
  using TmaO = decltype(cute::make_tma_copy(cute::SM90_TMA_STORE{}, std::declval<GmemTensor>(),
                                            SmemLayoutO{}));
  static constexpr int kOStageElements = !kStageOInV
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
};

}  // namespace tilesched::gpu::sm90
