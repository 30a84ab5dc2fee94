// Host entry points of the warp-specialized sm90 attention kernel, one explicit instantiation per
// head dim, tile height and K/V block (kernel_d64.cu, kernel_d64_bm192.cu, kernel_d128.cu,
// kernel_d256.cu, kernel_d256_bn64.cu: CuTe kernels compile slowly, so each is a translation unit
// of its own and they build in parallel), and the table of which kernel each scheduler kind runs.
// Plain C++: no CuTe here.
#pragma once

#include "tilesched/any_scheduler.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu::sm90 {

// The kernel each scheduler kind runs: its own instantiation (whose per-tile path carries only
// its scheduler's code: docs/gpu-performance.md, "A kernel per scheduler kind") or the
// AnyScheduler one, and the configuration of the shape's KernelSet (configs.hpp) it takes.
struct KindKernel {
  SchedulerKind kind;
  bool own_kernel;
  KernelVariant variant;     // by default
  KernelVariant short_rows;  // where every sequence has at most kShortRowKeys keys
  bool clusters;             // Cluster where the rows allow it (cluster_policy_allows)
};
inline constexpr KindKernel kKindKernels[] = {
    // kind                     own kernel  configuration           on short rows           clusters
    {SchedulerKind::Tile,         true,  KernelVariant::Dense,  KernelVariant::Dense,  true},
    {SchedulerKind::Queued,       true,  KernelVariant::Queued, KernelVariant::Queued, false},
    {SchedulerKind::LptQueued,    true,  KernelVariant::Causal, KernelVariant::Queued, false},
    {SchedulerKind::SplitTail,    true,  KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::SplitKv,      true,  KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::StreamK,      true,  KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::Transient,    false, KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::Lpt,          false, KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::Planned,      false, KernelVariant::Dense,  KernelVariant::Dense,  false},
    {SchedulerKind::RaggedQueued, false, KernelVariant::Dense,  KernelVariant::Dense,  false},
};
constexpr KindKernel kind_kernel(SchedulerKind kind) {
  for (const KindKernel& k : kKindKernels)
    if (k.kind == kind) return k;
  return kKindKernels[0];  // unreachable: the table lists every kind (checked below)
}
static_assert(sizeof(kKindKernels) / sizeof(kKindKernels[0]) ==
                  static_cast<u32>(SchedulerKind::StreamK) + 1,
              "the table names every scheduler kind");

// lpt_queued runs its short-row configuration where every sequence has at most this many keys.
inline constexpr u32 kShortRowKeys = 1024;
// ClusterPolicy::Auto takes clusters from this many keys.
inline constexpr u32 kClusterMinKeys = 8192;

// The configuration `kind`'s kernel runs for `w` (valid), given whether a cluster grid may run it
// (cluster_pairs_allowed, and a device that holds it).
KernelVariant kernel_variant(SchedulerKind kind, const Workload& w, bool cluster_grid);

// Whether the tile kind's kernel may run `w` (valid, C = w.num_ctas, `tiles` tiles per sequence,
// `grid` CTAs) in clusters of two under `policy`: dense rows of one length, even tiles, C and
// grid, and with Auto from kClusterMinKeys keys. The device must still hold the grid.
bool cluster_pairs_allowed(const Workload& w, ClusterPolicy policy, u32 tiles, u32 grid);

// For head dim D, tiles of BM query rows and K/V blocks of BN keys: fills the plan's kernel
// fields (variant, config, cluster_ctas, threads, shared_bytes) for `args` (already validated)
// and the plan's scheduler, summary and grid (already set).
template <int D, int BM, int BN>
Status plan_kernel(const AttentionArgs& args, LaunchPlan& plan);

// Launches `plan`'s kernel on `args` (and for the splitting kinds the combine kernel after it).
// Queue counter and trace count must already be reset on the stream.
template <int D, int BM, int BN>
Status launch(const AttentionArgs& args, const LaunchPlan& plan);

// CTAs of that shape's Dense kernel that one SM holds (asked once per process and device).
template <int D, int BM, int BN>
Status resident_ctas_per_sm(int& out);

// The kernels that exist, one (head dim, BM, BN) each: the one list the declarations below, the
// launch's dispatch, kernel_block_ms and kernel_block_ns (attention.cu) expand. At d = 256 the
// first BN listed is kernel_block_n's (long rows, and the splitting kinds), the second
// recommended_block_n's for short rows.
#define TILESCHED_SM90_KERNELS(X) \
  X(64, 128, 128) X(64, 192, 128) X(128, 128, 128) X(256, 128, 80) X(256, 128, 64)

#define TILESCHED_SM90_KERNEL(D, BM, BN)                                                  \
  extern template Status plan_kernel<D, BM, BN>(const AttentionArgs&, LaunchPlan&);      \
  extern template Status launch<D, BM, BN>(const AttentionArgs&, const LaunchPlan&);     \
  extern template Status resident_ctas_per_sm<D, BM, BN>(int&);
TILESCHED_SM90_KERNELS(TILESCHED_SM90_KERNEL)
#undef TILESCHED_SM90_KERNEL

}  // namespace tilesched::gpu::sm90
