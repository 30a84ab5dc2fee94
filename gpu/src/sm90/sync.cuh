// Synchronisation helpers of the sm90 kernel: named-barrier ids, the two warpgroups' GEMM
// ordering, and pipeline waits that trap instead of hanging when the protocol breaks.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "tilesched/scheduler.hpp"

// A wait that never completes is a protocol bug; on a shared device it would hold a 10-minute
// call. Debug builds (and builds configured with TILESCHED_GPU_HANG_TRAP) give every mbarrier
// wait a time limit and trap past it, naming the barrier.
#if !defined(NDEBUG) && !defined(TILESCHED_GPU_HANG_TRAP)
#define TILESCHED_GPU_HANG_TRAP 1
#endif

namespace tilesched::gpu::sm90 {

// Hardware named barriers. 0 is __syncthreads; kSchedulerBarrierId (1) belongs to the producer
// warpgroup's scheduler hand-off (scheduler.hpp).
// With N consumer warpgroups (two or three): barrier 2 + w, consumer warpgroup w may issue its
// GEMMs (the turns below); barrier 2 + N + w, consumer warpgroup w's 128 threads around its O
// staging for the TMA store; barrier 8, the producer warpgroup (kProducerBarrier). Ids 2..8 of
// the 16 at most.
enum class NamedBarrier : std::uint32_t {};
constexpr std::uint32_t kIssueBarrier0 = 2;
constexpr int kMaxConsumerWarpgroups = 3;
// The producer warpgroup's 128 threads, once per tile: the loader has the hand-off slot.
constexpr NamedBarrier kProducerBarrier{kIssueBarrier0 + 2 * kMaxConsumerWarpgroups};  // 8
static_assert(kSchedulerBarrierId < kIssueBarrier0,
              "the kernel's named barriers start after the scheduler's");
// Written as a choice between constants for two warpgroups (the ids then stay immediates, as
// the two-consumer kernels had them before the three-consumer one existed: computing them as
// 2 + w measured 1-2 % slower at d = 128; docs/gpu-performance.md, "Warp specialization and
// GEMM turns").
template <int N>
__device__ __forceinline__ NamedBarrier epilogue_barrier(int warpgroup) {
  if constexpr (N == 2) return NamedBarrier(warpgroup == 0 ? 4u : 5u);
  return NamedBarrier(kIssueBarrier0 + N + static_cast<std::uint32_t>(warpgroup));
}

__device__ __forceinline__ void named_barrier_sync(NamedBarrier id, std::uint32_t threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(static_cast<std::uint32_t>(id)), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(NamedBarrier id, std::uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(static_cast<std::uint32_t>(id)), "r"(threads) : "memory");
}

// Turns of the consumer warpgroups, in a ring 0, 1, .., N - 1, 0, ..: each issues its GEMMs only
// while it holds the turn and passes it to the next right after issuing, so one warpgroup's
// tensor-core work runs while the others do their softmax (with two, a ping-pong). Every
// warpgroup takes the same number of turns per tile (one per K/V block and one more), so the
// ring never skips one. Warpgroup 0 gets the first turn (the last warpgroup hands it over at
// start); the turn the last warpgroup passes after its last GEMMs is absorbed by finish(), so
// every arrive has its sync when the kernel ends. Each barrier joins the warpgroup that waits
// and the one that passes: 256 threads.
template <int N>
class PingPong {
 public:
  static_assert(N >= 2 && N <= kMaxConsumerWarpgroups, "a ring of two or three warpgroups");
  static constexpr std::uint32_t kThreads = 256;

  __device__ explicit PingPong(int warpgroup) : warpgroup_(warpgroup) {
    if (warpgroup_ == N - 1) named_barrier_arrive(issue(0), kThreads);
  }
  __device__ void wait_turn() const { named_barrier_sync(own(), kThreads); }
  __device__ void pass_turn() const { named_barrier_arrive(next(), kThreads); }
  __device__ void finish() const {
    if (warpgroup_ == 0) named_barrier_sync(issue(0), kThreads);
  }

 private:
  static __device__ NamedBarrier issue(int warpgroup) {
    return NamedBarrier(kIssueBarrier0 + static_cast<std::uint32_t>(warpgroup));
  }
  // For two warpgroups a choice between constants, as epilogue_barrier (the ids stay immediates).
  __device__ NamedBarrier own() const {
    if constexpr (N == 2) return warpgroup_ == 0 ? issue(0) : issue(1);
    return issue(warpgroup_);
  }
  __device__ NamedBarrier next() const {
    if constexpr (N == 2) return warpgroup_ == 0 ? issue(1) : issue(0);
    return warpgroup_ == N - 1 ? issue(0) : issue(warpgroup_ + 1);
  }
  int warpgroup_;
};

#if TILESCHED_GPU_HANG_TRAP
__device__ __forceinline__ std::uint64_t hang_clock_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// Polls `ready` until it returns true; traps after two seconds (no legitimate wait in this kernel
// lasts longer than one tile, microseconds to milliseconds).
template <class Ready>
__device__ __forceinline__ void wait_or_trap(Ready&& ready, const char* what) {
  if (ready()) return;
  const std::uint64_t start = hang_clock_ns();
  while (!ready()) {
    if (hang_clock_ns() - start > 2000000000ull) {
      printf("tilesched: %s wait timed out in block (%d,%d,%d) thread %d\n", what, blockIdx.x,
             blockIdx.y, blockIdx.z, threadIdx.x);
      __trap();
    }
  }
}
#endif

// A wait the kernel makes: hang-trap builds poll `ready` (a try-wait) under a time limit, the
// others block in `wait`.
template <class Ready, class Wait>
__device__ __forceinline__ void guarded_wait([[maybe_unused]] Ready&& ready,
                                             [[maybe_unused]] Wait&& wait,
                                             [[maybe_unused]] const char* what) {
#if TILESCHED_GPU_HANG_TRAP
  wait_or_trap(ready, what);
#else
  wait();
#endif
}

template <class Pipeline, class State>
__device__ __forceinline__ void consumer_wait(Pipeline& pipe, State state, const char* what) {
  guarded_wait([&] { return pipe.consumer_try_wait(state) == cutlass::BarrierStatus::WaitDone; },
               [&] { pipe.consumer_wait(state); }, what);
}

// In hang-trap builds the producer's acquire waits first, then arrives with the transaction bytes
// (a token that says the wait is done).
template <class Pipeline, class State>
__device__ __forceinline__ void producer_acquire(Pipeline& pipe, State state, const char* what) {
#if TILESCHED_GPU_HANG_TRAP
  guarded_wait(
      [&] { return pipe.producer_try_acquire(state) == cutlass::BarrierStatus::WaitDone; }, [] {},
      what);
  pipe.producer_acquire(state, cutlass::ProducerToken(cutlass::BarrierStatus::WaitDone));
#else
  (void)what;
  pipe.producer_acquire(state);
#endif
}

// A wait on one mbarrier's phase parity (a pipeline's empty barrier, or o_released).
__device__ __forceinline__ void barrier_wait(const cutlass::arch::ClusterBarrier& barrier,
                                             std::uint32_t phase, const char* what) {
  guarded_wait([&] { return barrier.test_wait(phase); }, [&] { barrier.wait(phase); }, what);
}

// The (stage, phase) of the fill `back` fills before the fill at (stage, phase) of a ring of
// Stages stages (back < Stages): going below stage 0 wraps to the previous pass, whose phase
// parity is the other one. A fill before the first one gets parity 1, whose wait returns at once
// on a barrier that has not completed a phase.
template <int Stages>
__device__ __forceinline__ cute::tuple<int, std::uint32_t> earlier_fill(int stage,
                                                                        std::uint32_t phase,
                                                                        int back) {
  stage -= back;
  if (stage < 0) return {stage + Stages, phase ^ 1u};
  return {stage, phase};
}

}  // namespace tilesched::gpu::sm90
