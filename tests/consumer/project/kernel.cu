// A consumer's persistent kernel skeleton, templated on a tilesched scheduler.
#include <tilesched/tilesched.hpp>

template <class Scheduler>
__global__ void consumer_kernel(Scheduler sched, tilesched::TileSummary summary, unsigned* count) {
  __shared__ tilesched::u32 sidx[2];
  tilesched::TileState st =
      sched.initial_state(sidx, summary, {blockIdx.x, blockIdx.y, blockIdx.z});
  for (auto s = sched.first_work(summary, st); s; s = sched.advance(summary, st))
    if (threadIdx.x == 0) atomicAdd(count, 1u);
}

template __global__ void consumer_kernel<tilesched::TileScheduler<128, 16>>(
    tilesched::TileScheduler<128, 16>, tilesched::TileSummary, unsigned*);
