// Compiles the scheduler layer with nvcc for sm_90a and instantiates every scheduler in a kernel
// that runs the processing loop, so host/device portability of common/ cannot rot even in CI
// (which has nvcc but no GPU). The gpu test suite runs these kernels on a device.
#include "tilesched/any_scheduler.hpp"
#include "tilesched/planned_schedulers.hpp"
#include "tilesched/tilesched.hpp"

namespace tilesched::device_check {

// Each CTA appends the linear index of every tile it processes to its row of `out`.
template <class Scheduler, bool Producer, SchedulerSync Sync>
__global__ void walk_kernel(Scheduler sched, TileSummary summary, u32* out, u32 row_stride) {
  __shared__ u32 sidx[2];
  TileState st = sched.initial_state(sidx, summary, BlockIndex{blockIdx.x, blockIdx.y, blockIdx.z});
  const u32 cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  u32 step = 0;
  u32 pipeline_idx = 0;
  if constexpr (Sync != SchedulerSync::None) __syncthreads();  // sidx[0] visible to all
  for (auto s = sched.template first_work<Producer, Sync>(summary, st, pipeline_idx); s;
       s = sched.template advance<Producer, Sync>(summary, st, pipeline_idx)) {
    if (threadIdx.x == 0 && step + 1 < row_stride) out[cta * row_stride + 1 + step] = st.idx;
    ++step;
    pipeline_idx ^= 1u;  // alternate slots so a late reader never sees the next index
  }
  if (threadIdx.x == 0) out[cta * row_stride] = step;
}

template __global__ void walk_kernel<runtime::TileScheduler, true, SchedulerSync::Default>(
    runtime::TileScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::QueuedTileScheduler, true, SchedulerSync::All>(
    runtime::QueuedTileScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::QueuedTileScheduler, true, SchedulerSync::Producer>(
    runtime::QueuedTileScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::TransientScheduler, true, SchedulerSync::Default>(
    runtime::TransientScheduler, TileSummary, u32*, u32);
// The kernel's form: one instantiation for every scheduler, and the producer hand-off's two sides.
template __global__ void walk_kernel<runtime::AnyScheduler, true, SchedulerSync::Producer>(
    runtime::AnyScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::AnyScheduler, false, SchedulerSync::Producer>(
    runtime::AnyScheduler, TileSummary, u32*, u32);
// The planned schedulers, static and counter ones, on both sides of the producer hand-off.
template __global__ void walk_kernel<runtime::LptScheduler, true, SchedulerSync::Default>(
    runtime::LptScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::PlannedListScheduler, true, SchedulerSync::Default>(
    runtime::PlannedListScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::LptQueuedScheduler, true, SchedulerSync::Producer>(
    runtime::LptQueuedScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::LptQueuedScheduler, false, SchedulerSync::Producer>(
    runtime::LptQueuedScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::SplitTailScheduler, true, SchedulerSync::Producer>(
    runtime::SplitTailScheduler, TileSummary, u32*, u32);
// The split schedules: the counter one on both sides of the producer hand-off, and the static one.
template __global__ void walk_kernel<runtime::SplitKvScheduler, true, SchedulerSync::Producer>(
    runtime::SplitKvScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::SplitKvScheduler, false, SchedulerSync::Producer>(
    runtime::SplitKvScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::StreamKScheduler, true, SchedulerSync::Default>(
    runtime::StreamKScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::RaggedQueuedScheduler, true, SchedulerSync::All>(
    runtime::RaggedQueuedScheduler, TileSummary, u32*, u32);
template __global__ void walk_kernel<runtime::RaggedQueuedScheduler, true, SchedulerSync::None>(
    runtime::RaggedQueuedScheduler, TileSummary, u32*, u32);
template __global__ void
walk_kernel<TileScheduler<128, 32, 132, Schedule::PromptRotate>, true, SchedulerSync::Default>(
    TileScheduler<128, 32, 132, Schedule::PromptRotate>, TileSummary, u32*, u32);
template __global__ void walk_kernel<QueuedTileScheduler<1, 8, true>, true, SchedulerSync::All>(
    QueuedTileScheduler<1, 8, true>, TileSummary, u32*, u32);
template __global__ void walk_kernel<TransientScheduler<128, 16, true>, true,
                                     SchedulerSync::Default>(TransientScheduler<128, 16, true>,
                                                             TileSummary, u32*, u32);

}  // namespace tilesched::device_check
