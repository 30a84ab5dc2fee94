// The shipped kernels' configurations, one named struct each, grouped by tile shape (KernelSet;
// which scheduler kind runs which: launch.hpp's kKindKernels). Plain C++: the kernel's types follow
// from these in traits.cuh.
// Every choice here was measured; docs/gpu-performance.md ("Design decisions") holds the figures
// and the headings cited below.
#pragma once

namespace tilesched::gpu::sm90 {

// Where a consumer warpgroup stages its O for the TMA store (epilogue.cuh).
enum class OStaging {
  OwnBuffers,  // a 64 x d buffer per consumer warpgroup beside the tiles
  InV,         // a V stage the tile no longer reads ("O staged in V at d = 256")
  SplitInV,    // warpgroup 0 in a buffer of its own, warpgroup 1 in a V stage
};

// What every shipped kernel shares unless its struct says otherwise.
struct KernelDefaults {
  // Q buffers: two let the next tile's Q load under this tile's work.
  static constexpr int kStagesQ = 2;
  // Consumer warpgroups, each owning 64 query rows: the tile is 64 * kConsumerWarpgroups rows
  // (the scheduler's BM).
  static constexpr int kConsumerWarpgroups = 2;
  // The consumers' registers after setmaxnreg; the producer warpgroup gets the rest
  // ("Consumer registers").
  static constexpr int kConsumerRegisters = 232;
  // The consumers receive their next tile while the tile's last PV runs ("Next tile under the
  // last PV").
  static constexpr bool kPrefetchTile = false;
  // A warpgroup's first K/V block over its visible keys only ("Narrow first block").
  static constexpr bool kNarrowFirst = false;
  // O's rescale skipped for a warp none of whose rows' max moved in a block ("Skipping O's
  // rescale at d = 256").
  static constexpr bool kSkipUnitRescale = false;
  // The K/V loop rebuilds its QK^T operand's descriptors at every block ("Operand descriptors").
  static constexpr bool kRebuildQOperand = false;
  static constexpr OStaging kOStaging = OStaging::OwnBuffers;
  // The epilogue's LSE as one predicated store ("The LSE store").
  static constexpr bool kPredicatedLse = true;
  // A row keeps its max until a block's exceeds it by more than 2^kRescaleThreshold (0: at every
  // growth; "Rescale threshold").
  static constexpr int kRescaleThreshold = 0;
  // CTAs per cluster: 2 shares every K/V load between two CTAs ("Clusters of two CTAs").
  static constexpr int kClusterM = 1;
};

// A tile shape: head dim, keys per K/V block (BN) and K/V pipeline stages.
template <int D, int BN, int StagesKV>
struct TileShape : KernelDefaults {
  static constexpr int kHeadDim = D;
  static constexpr int kBlockN = BN;
  static constexpr int kStagesKV = StagesKV;
};

// d = 64, BM 128: BN 128, three K/V stages; 128 KB of tiles + 16 KB of O staging.
struct D64 : TileShape<64, 128, 3> {
  static constexpr const char* kName = "D64";
  static constexpr bool kNarrowFirst = true;
};
// d = 64, BM 192: three consumer warpgroups at 160 registers, the producer 32 ("192-row tiles at
// d = 64"); 96 KB of K/V + 48 KB Q + 24 KB O staging.
struct D64Bm192 : TileShape<64, 128, 3> {
  static constexpr const char* kName = "D64Bm192";
  static constexpr int kConsumerWarpgroups = 3;
  static constexpr int kConsumerRegisters = 160;
};
// d = 128: BN 128, two K/V stages; 192 KB of tiles + 32 KB of O staging.
struct D128 : TileShape<128, 128, 2> {
  static constexpr const char* kName = "D128";
  static constexpr int kConsumerRegisters = 224;
  static constexpr bool kPrefetchTile = true;
  static constexpr int kRescaleThreshold = 8;
};
// d = 256: BN 80, two K/V stages and one Q buffer (224 KB of tiles: a second Q buffer does not
// fit), O staged in V ("K/V blocks at d = 256", "Early hand-off at d = 256").
struct D256 : TileShape<256, 80, 2> {
  static constexpr const char* kName = "D256";
  static constexpr int kStagesQ = 1;
  static constexpr bool kSkipUnitRescale = true;
  static constexpr bool kRebuildQOperand = true;
  static constexpr OStaging kOStaging = OStaging::InV;
  static constexpr int kRescaleThreshold = 8;
};
// d = 256 with K/V blocks of 64 keys, for short rows (recommended_block_n).
struct D256Bn64 : D256 {
  static constexpr const char* kName = "D256Bn64";
  static constexpr int kBlockN = 64;
};

// The counter-fed kinds' kernels (queued, lpt_queued: the causal rows' schedulers) receive their
// next tile under the last PV everywhere; d = 256 BN 64's also stages warpgroup 0's O outside the
// V ring (its 192 KB of tiles leave room for one buffer).
template <class Config>
struct NextTileUnderLastPv : Config {
  static constexpr bool kPrefetchTile = true;
};
struct D64Causal : NextTileUnderLastPv<D64> {
  static constexpr const char* kName = "D64Causal";
};
struct D64Bm192Causal : NextTileUnderLastPv<D64Bm192> {
  static constexpr const char* kName = "D64Bm192Causal";
};
struct D256Causal : NextTileUnderLastPv<D256> {
  static constexpr const char* kName = "D256Causal";
};
struct D256Bn64Causal : NextTileUnderLastPv<D256Bn64> {
  static constexpr const char* kName = "D256Bn64Causal";
  static constexpr OStaging kOStaging = OStaging::SplitInV;
};
// d = 128's queued kernel (and lpt_queued's on short rows): the narrow first block, and the LSE
// store behind a branch.
struct D128Queued : D128 {
  static constexpr const char* kName = "D128Queued";
  static constexpr bool kNarrowFirst = true;
  static constexpr bool kPredicatedLse = false;
};
// d = 128's tile kernel on dense rows of one length from kClusterMinKeys keys.
struct D128Cluster : D128 {
  static constexpr const char* kName = "D128Cluster";
  static constexpr int kClusterM = 2;
};

// The configurations of one tile shape, one per KernelVariant (attention.hpp; which scheduler
// kind runs which: launch.hpp's kKindKernels). Cluster is void for a shape without one.
template <class DenseConfig, class CausalConfig, class QueuedConfig = CausalConfig,
          class ClusterConfig = void>
struct KernelSet {
  using Dense = DenseConfig;
  using Causal = CausalConfig;
  using Queued = QueuedConfig;
  using Cluster = ClusterConfig;
};

// The shipped kernels, one KernelSet per (head dim, BM, BN) of launch.hpp's list.
template <int D, int BM, int BN>
struct Kernels;
template <>
struct Kernels<64, 128, 128> : KernelSet<D64, D64Causal> {};
template <>
struct Kernels<64, 192, 128> : KernelSet<D64Bm192, D64Bm192Causal> {};
template <>
struct Kernels<128, 128, 128> : KernelSet<D128, D128, D128Queued, D128Cluster> {};
template <>
struct Kernels<256, 128, 80> : KernelSet<D256, D256Causal> {};
template <>
struct Kernels<256, 128, 64> : KernelSet<D256Bn64, D256Bn64Causal> {};

}  // namespace tilesched::gpu::sm90
