// The schedulers (SPEC §4). Each has two faces over one arithmetic:
//   tilesched::runtime::X  — tile shape, heads, CTAs and schedule as values (the CLI, the simulator
//                            and the kernel's host code pick them at run time);
//   tilesched::X<...>      — the reference's compile-time form, a thin wrapper that fixes them.
//
// Every scheduler exposes the same calls, so a kernel (or the simulator) does not know which one it
// runs:
//   grid_dim(summary)                              launch shape
//   initial_state(sidx, summary, block)            this CTA's starting TileState
//   get_current_work_info(summary, state)          WorkInfo at state.idx (SPEC §3)
//   fetch_next_work(summary, state)                upstream's raw step (static only)
//   first_work<producer, sync>(summary, state, p)  the first tile to process, or none (SPEC §5)
//   advance<producer, sync>(summary, state, p)     the next tile to process, or none
//   unsafe_seq_info(summary, idx)
//
// Arguments -> Params: a scheduler is built on the host from a TileMapping and its own choices
// (CTAs, ragged mode, counter), and its constructor prepares the division by H (MappingParams,
// tile_summary.hpp) as TileSummary::make prepares the division by T; the kernel takes both by
// value and maps indices without dividing.
//
// The processing loop, the same on the GPU and in the simulator:
//   TileState st = sched.initial_state(sidx, summary, block);
//   for (auto s = sched.first_work<P, S>(summary, st, p); s;
//        s = sched.advance<P, S>(summary, st, p))
//     process(*s);
#pragma once

#include "tilesched/tile_summary.hpp"
#include "tilesched/types.hpp"

namespace tilesched {

// Where this CTA is. Held per thread (registers on the GPU). sidx points at a small array of
// shared-memory slots through which the queued scheduler hands fetched indices to other threads.
struct TileState {
  u32 idx = 0;
  u32* sidx = nullptr;
  u32 max_idx = 0;
  // split_tail only: this CTA's next and end position in the tail's KV blocks.
  u32 tail_pos = 0;
  u32 tail_end = 0;

  TS_HOST_DEVICE constexpr bool is_valid(u32 i) const { return i < max_idx; }
  TS_HOST_DEVICE constexpr bool is_valid() const { return idx < max_idx; }
};

// The named barrier the queued scheduler uses with SchedulerSync::Producer. Kernels must not use
// this id for anything else.
inline constexpr u32 kSchedulerBarrierId = 1;
inline constexpr u32 kSchedulerBarrierThreads = 128;

namespace detail {

// Linear thread index within the CTA; 0 on the host, where one caller plays every role.
TS_HOST_DEVICE TS_FORCEINLINE u32 thread_rank() {
#if TS_DEVICE_PASS
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
#else
  return 0;
#endif
}

template <SchedulerSync sync>
TS_HOST_DEVICE TS_FORCEINLINE void scheduler_barrier() {
#if TS_DEVICE_PASS
  if constexpr (sync == SchedulerSync::Producer) {
    asm volatile("bar.sync %0, %1;" ::"r"(kSchedulerBarrierId), "r"(kSchedulerBarrierThreads)
                 : "memory");
  } else if constexpr (sync == SchedulerSync::All) {
    __syncthreads();
  }
#endif
}

}  // namespace detail

// The queued scheduler's global counter: atomicAdd on the GPU, an atomic builtin on the host (the
// simulator drives it from one thread in a deterministic order).
struct AtomicCounter {
  u32* value = nullptr;

  TS_HOST_DEVICE TS_FORCEINLINE u32 fetch_add(u32 n = 1) const {
#if TS_DEVICE_PASS
    return atomicAdd(value, n);
#else
    return __atomic_fetch_add(value, n, __ATOMIC_RELAXED);
#endif
  }
};

namespace detail {

// The counter hand-off of SPEC §4.2, shared by every scheduler that takes tiles from a counter.
// Thread 0 of a producer fetches until it gets an index `accepts` takes or runs past the state's
// max_idx, and publishes it in sidx[pipeline_idx]; the others read that slot after the barrier
// (or, with SchedulerSync::None, after the kernel's own barrier that orders the slot). Leaves the
// index in state.idx.
template <bool producer, SchedulerSync sync, class Accepts>
TS_HOST_DEVICE TS_FORCEINLINE void fetch_and_share(const AtomicCounter& counter, TileState& st,
                                                   u32 pipeline_idx, Accepts&& accepts) {
  if (producer && thread_rank() == 0) {
    u32 i = 0;
    for (;;) {
      i = counter.fetch_add(1);
      if (!st.is_valid(i) || accepts(i)) break;
    }
    st.sidx[pipeline_idx] = i;
    if constexpr (sync == SchedulerSync::None) {
      st.idx = i;
      return;
    }
  }
  if constexpr (producer) scheduler_barrier<sync>();
  st.idx = st.sidx[pipeline_idx];
}

// What every scheduler shares: the index mapping it walks (SPEC §3), and the two look-ups that
// only depend on it.
struct MappedScheduler {
  MappingParams mapping{};

  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const TileSummary& s,
                                                          const TileState& st) const {
    return s.get_current_work_info(mapping, st.idx);
  }

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const TileSummary& s, u32 idx) const {
    return s.unsafe_seq_info(mapping, idx);
  }

  // Persistent grids launch min(C, N) CTAs; the stride stays C even when fewer are launched.
  TS_HOST_DEVICE constexpr GridDim persistent_grid(const TileSummary& s, u32 num_ctas) const {
    return GridDim{min_u32(num_ctas, s.max_idx(mapping.num_heads)), 1, 1};
  }
};

}  // namespace detail

namespace runtime {

// SPEC §4.1: persistent, static. CTA c visits c, c+C, c+2C, ... below N (safe mode: only tiles
// that start inside their sequence).
class TileScheduler : public detail::MappedScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::Tile;

  u32 num_ctas = 132;
  RaggedMode ragged_mode = RaggedMode::Safe;

  constexpr TileScheduler() = default;
  TS_HOST_DEVICE constexpr TileScheduler(TileMapping m, u32 ctas, RaggedMode r = RaggedMode::Safe)
      : MappedScheduler{MappingParams(m)}, num_ctas(ctas), ragged_mode(r) {}

  // The stride is num_ctas even when fewer CTAs are launched (N < C).
  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary& s) const {
    return persistent_grid(s, num_ctas);
  }

  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary& s,
                                                   BlockIndex block) const {
    return TileState{block.x, sidx, s.max_idx(mapping.num_heads)};
  }

  // Upstream's raw step: no skipping, no range check beyond is_valid_tile.
  TS_HOST_DEVICE constexpr WorkInfo fetch_next_work(const TileSummary& s, TileState& st) const {
    st.idx += num_ctas;
    return get_current_work_info(s, st);
  }

  // Upstream checks a CTA's first tile and, when it starts past its sequence, steps once; safe
  // mode's advance keeps stepping, faithful mode's takes whatever index comes next.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                                        u32 pipeline_idx = 0) const {
    if (!st.is_valid()) return {};
    const SeqInfo si = unsafe_seq_info(s, st.idx);
    if (si.is_valid()) return some(si);
    return advance<producer, sync>(s, st, pipeline_idx);
  }

  // producer, sync and pipeline_idx do not change the result: every thread steps its own copy
  // of the state and they agree by construction. The host has checked that idx + C never wraps.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                                     u32 /*pipeline_idx*/ = 0) const {
    for (;;) {
      st.idx += num_ctas;
      if (!st.is_valid()) return {};
      const SeqInfo si = unsafe_seq_info(s, st.idx);
      if (ragged_mode == RaggedMode::Faithful || si.is_valid()) return some(si);
    }
  }
};

// SPEC §4.2: persistent, dynamic. The first C indices are taken statically (blockIdx.x); the rest
// come from a global counter that the host sets to C before every launch. Tiles that start past
// their sequence are skipped in the fetch loop (upstream does this too, so ragged_mode does not
// apply). Where a decoding workload has no prefill sequence (Workload::decode_only) every index
// below N is a tile, and the `decoding` flag skips that check.
class QueuedTileScheduler : public detail::MappedScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::Queued;

  u32 num_ctas = 132;
  bool decoding = false;
  AtomicCounter counter{};

  constexpr QueuedTileScheduler() = default;
  TS_HOST_DEVICE constexpr QueuedTileScheduler(TileMapping m, u32 ctas, AtomicCounter c,
                                               bool decode = false)
      : MappedScheduler{MappingParams(m)}, num_ctas(ctas), decoding(decode), counter(c) {}

  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary& s) const {
    return persistent_grid(s, num_ctas);
  }

  // The value the host stores in the counter before each launch.
  TS_HOST_DEVICE constexpr u32 counter_start() const { return num_ctas; }

  TS_HOST_DEVICE TileState initial_state(u32* sidx, const TileSummary& s, BlockIndex block) const {
    if (detail::thread_rank() == 0) sidx[0] = block.x;
    return TileState{block.x, sidx, s.max_idx(mapping.num_heads)};
  }

  TS_HOST_DEVICE constexpr bool accepts(const TileSummary& s, u32 idx) const {
    return decoding || unsafe_seq_info(s, idx).is_valid();
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                              u32 pipeline_idx = 0) const {
    if (!st.is_valid()) return {};
    if (accepts(s, st.idx)) return some(unsafe_seq_info(s, st.idx));
    return advance<producer, sync>(s, st, pipeline_idx);
  }

  // The counter hand-off (detail::fetch_and_share), skipping tiles that start past their
  // sequence.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                           u32 pipeline_idx = 0) const {
    detail::fetch_and_share<producer, sync>(counter, st, pipeline_idx,
                                            [&](u32 i) { return accepts(s, i); });
    return st.is_valid() ? some(unsafe_seq_info(s, st.idx)) : Optional<SeqInfo>{};
  }
};

// SPEC §4.3: one tile per CTA, grid (T, H, B). The tile's linear index (state.idx) is the DEFAULT
// mapping's, so traces of every scheduler speak of tiles the same way.
class TransientScheduler : public detail::MappedScheduler {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::Transient;

  // mapping.schedule is ignored: the grid is the walk
  bool flip_prompt_idx = false;

  constexpr TransientScheduler() = default;
  TS_HOST_DEVICE constexpr TransientScheduler(TileMapping m, bool flip)
      : MappedScheduler{MappingParams(TileMapping{m.tile_shape, m.num_heads, Schedule::Default})},
        flip_prompt_idx(flip) {}

  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary& s) const {
    return GridDim{s.max_num_prompt_tiles, mapping.num_heads, s.batch_size};
  }

  // Upstream flips for causal prefill so the most expensive tiles get the lowest block ids.
  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary& s,
                                                   BlockIndex block) const {
    const u32 t = flip_prompt_idx ? s.max_num_prompt_tiles - 1 - block.x : block.x;
    return TileState{s.tile_index(mapping, t, block.y, block.z), sidx,
                     s.max_idx(mapping.num_heads)};
  }

  // A CTA whose tile starts past its sequence returns at once (both ragged modes).
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                                        u32 = 0) const {
    if (!st.is_valid()) return {};
    const SeqInfo si = unsafe_seq_info(s, st.idx);
    return si.is_valid() ? some(si) : Optional<SeqInfo>{};
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary&, TileState&,
                                                     u32 = 0) const {
    return {};
  }
};

}  // namespace runtime

// The reference's compile-time faces: thin wrappers that fix the runtime values. (Template
// parameters are capitalised because the base's members of the same name would hide them.)

template <u32 TileShape, u32 NumHeads, u32 NumCtas = 132, Schedule Sched = Schedule::Default,
          RaggedMode Ragged = RaggedMode::Safe>
struct TileScheduler : runtime::TileScheduler {
  TS_HOST_DEVICE constexpr TileScheduler()
      : runtime::TileScheduler(TileMapping{TileShape, NumHeads, Sched}, NumCtas, Ragged) {}
};

template <u32 TileShape, u32 NumHeads, bool Decoding, u32 NumCtas = 132,
          Schedule Sched = Schedule::Default>
struct QueuedTileScheduler : runtime::QueuedTileScheduler {
  TS_HOST_DEVICE constexpr explicit QueuedTileScheduler(AtomicCounter c)
      : runtime::QueuedTileScheduler(TileMapping{TileShape, NumHeads, Sched}, NumCtas, c,
                                     Decoding) {}
};

template <u32 TileShape, u32 NumHeads, bool FlipPromptIdx = false>
struct TransientScheduler : runtime::TransientScheduler {
  TS_HOST_DEVICE constexpr TransientScheduler()
      : runtime::TransientScheduler(TileMapping{TileShape, NumHeads, Schedule::Default},
                                    FlipPromptIdx) {}
};

}  // namespace tilesched
