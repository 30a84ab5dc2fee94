// The schedulers that walk arrays the host builds for each problem (schedule_plan.hpp builds
// them):
//   LptScheduler           static: a longest-first order, walked by the CTAs in a snake
//   LptQueuedScheduler     dynamic: the queued counter over that order
//   PlannedListScheduler   static: one list of tiles per CTA (CSR), planned greedily on the host
//   RaggedQueuedScheduler  dynamic: the queued counter over the valid tiles only
// They keep the contract of scheduler.hpp (grid_dim, initial_state, get_current_work_info,
// first_work, advance, unsafe_seq_info), so the kernel and the simulator run them unchanged. The
// arrays are plain pointers, like TileSummary's row offsets: host memory for the simulator, device
// copies for the kernel. A CTA reads one entry per tile (the ragged queued scheduler: a binary
// search over B+1 entries), never a scan of the batch.
//
// A tile in an order or a list is named by its tile id, the DEFAULT mapping's linear index
// (b * H + h) * T + t (SPEC §3), which TileSummary decodes. state.idx is each scheduler's own
// index: a position in the order (lpt, lpt_queued), in the list array (planned), or among the
// valid tiles (ragged_queued); traces record it as linear_idx. Every index below max_idx is a tile
// that starts inside its sequence, so these schedulers skip nothing (SPEC §5 holds by
// construction).
#pragma once

#include <cstdint>

#include "tilesched/scheduler.hpp"
#include "tilesched/split_schedules.hpp"

namespace tilesched {

// A schedule plan's arrays as a scheduler reads them (host or device pointers). Only the arrays
// the workload's scheduler walks are set.
struct PlanArrays {
  u32 tile_count = 0;                   // M: the tiles the plan hands out (the valid tiles)
  const u32* order = nullptr;           // lpt, lpt_queued: M tile ids, longest first per section
  const u32* list_offsets = nullptr;    // planned: min(C, M) + 1 offsets into list_tiles
  const u32* list_tiles = nullptr;      // planned: M tile ids, CTA c's at [off[c], off[c + 1])
  const u32* sequence_tiles = nullptr;  // ragged_queued: B+1 prefix sums of tiles per sequence
  SplitArrays split{};                  // split_kv, stream_k (split_schedules.hpp)

  // Whether the arrays scheduler `kind` walks are set (true for kinds that walk none).
  TS_HOST_DEVICE constexpr bool has_arrays_for(SchedulerKind kind) const {
    switch (kind) {
      case SchedulerKind::Lpt:
      case SchedulerKind::LptQueued: return order != nullptr;
      case SchedulerKind::Planned: return list_offsets != nullptr && list_tiles != nullptr;
      case SchedulerKind::RaggedQueued: return sequence_tiles != nullptr;
      case SchedulerKind::SplitKv: return split.has_arrays(false);
      case SchedulerKind::StreamK: return split.has_arrays(true);
      default: return true;
    }
  }
};

namespace detail {

// What the planned schedulers share: the DEFAULT mapping that decodes tile ids, the CTA count and
// the number of tiles, and the look-ups that follow from the derived class's tile_work(s, idx).
template <class Derived>
class PlannedScheduler {
 public:
  MappingParams mapping{};  // always the DEFAULT walk: it decodes tile ids
  u32 num_ctas = 132;
  u32 tile_count = 0;  // M

  constexpr PlannedScheduler() = default;
  TS_HOST_DEVICE constexpr PlannedScheduler(TileMapping m, u32 ctas, u32 tiles)
      : mapping(TileMapping{m.tile_shape, m.num_heads, Schedule::Default}),
        num_ctas(ctas),
        tile_count(tiles) {}

  // Persistent: min(C, M) CTAs.
  TS_HOST_DEVICE constexpr GridDim grid_dim(const TileSummary&) const {
    return GridDim{min_u32(num_ctas, tile_count), 1, 1};
  }

  TS_HOST_DEVICE constexpr SeqInfo unsafe_seq_info(const TileSummary& s, u32 idx) const {
    return s.seq_info(self().tile_work(s, idx));
  }

  // Every planned scheduler's first tile is the one initial_state placed it on.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                                        u32 = 0) const {
    return current(s, st);
  }

  // The tile at state.idx; invalid (and all zero) past the scheduler's last index, where there is
  // no array entry to read.
  TS_HOST_DEVICE constexpr WorkInfo get_current_work_info(const TileSummary& s,
                                                          const TileState& st) const {
    return st.is_valid() ? self().tile_work(s, st.idx) : WorkInfo{};
  }

 protected:
  TS_HOST_DEVICE constexpr const Derived& self() const {
    return static_cast<const Derived&>(*this);
  }

  TS_HOST_DEVICE constexpr WorkInfo tile_of_id(const TileSummary& s, u32 id) const {
    return s.unsafe_get_current_work_info(mapping, id);
  }

  TS_HOST_DEVICE constexpr Optional<SeqInfo> current(const TileSummary& s,
                                                     const TileState& st) const {
    return st.is_valid() ? some(unsafe_seq_info(s, st.idx)) : Optional<SeqInfo>{};
  }
};

// The counter schedulers' half (lpt_queued, ragged_queued): the queued scheduler's counter
// (SPEC §4.2) over the derived class's indices. The first C indices are taken statically
// (blockIdx.x); the host sets the counter to C before every launch. Every index below M is a
// tile, so the fetch loop takes the first index it gets.
template <class Derived>
class CountedPlannedScheduler : public PlannedScheduler<Derived> {
  using Base = PlannedScheduler<Derived>;

 public:
  AtomicCounter counter{};

  constexpr CountedPlannedScheduler() = default;
  TS_HOST_DEVICE constexpr CountedPlannedScheduler(TileMapping m, u32 ctas, u32 tiles,
                                                   AtomicCounter c)
      : Base(m, ctas, tiles), counter(c) {}

  TS_HOST_DEVICE constexpr u32 counter_start() const { return this->num_ctas; }

  TS_HOST_DEVICE TileState initial_state(u32* sidx, const TileSummary&, BlockIndex block) const {
    if (thread_rank() == 0) sidx[0] = block.x;
    return TileState{block.x, sidx, this->tile_count};
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                           u32 pipeline_idx = 0) const {
    fetch_and_share<producer, sync>(counter, st, pipeline_idx, [](u32) { return true; });
    return this->current(s, st);
  }
};

}  // namespace detail

namespace runtime {

// Static longest-first: CTA c walks the order in a snake, round r covering positions
// [rC, rC + C) forwards when r is even and backwards when r is odd. The order is longest first
// within each L2 section, so plain striding (c, c + C, ...) would hand CTA 0 the longest tile of
// every round; the snake gives the CTA that got a round's longest tile the next round's shortest.
class LptScheduler : public detail::PlannedScheduler<LptScheduler> {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::Lpt;

  const u32* order = nullptr;
  FastDivmod ctas{};  // division by C: a position's place in its round

  constexpr LptScheduler() = default;
  TS_HOST_DEVICE constexpr LptScheduler(TileMapping m, u32 num_ctas, const u32* tile_order,
                                        u32 tiles)
      : PlannedScheduler(m, num_ctas, tiles), order(tile_order), ctas(num_ctas) {}

  TS_HOST_DEVICE constexpr WorkInfo tile_work(const TileSummary& s, u32 idx) const {
    return tile_of_id(s, order[idx]);
  }

  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary&,
                                                   BlockIndex block) const {
    return TileState{block.x, sidx, tile_count};
  }

  // From place x of round r to place C-1-x of round r+1: position + 2(C - x) - 1. Counted in 64
  // bits (the last step may pass 2^32 - 1), and parked at M once past the end.
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                                     u32 = 0) const {
    u32 place = 0;
    ctas.divmod(st.idx, place);
    const std::uint64_t next = std::uint64_t(st.idx) + 2u * std::uint64_t(num_ctas - place) - 1u;
    st.idx = next < tile_count ? static_cast<u32>(next) : tile_count;
    return current(s, st);
  }
};

// Dynamic longest-first: the counter (detail::CountedPlannedScheduler) over positions of the
// order.
class LptQueuedScheduler : public detail::CountedPlannedScheduler<LptQueuedScheduler> {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::LptQueued;

  const u32* order = nullptr;

  constexpr LptQueuedScheduler() = default;
  TS_HOST_DEVICE constexpr LptQueuedScheduler(TileMapping m, u32 num_ctas, const u32* tile_order,
                                              u32 tiles, AtomicCounter c)
      : CountedPlannedScheduler(m, num_ctas, tiles, c), order(tile_order) {}

  TS_HOST_DEVICE constexpr WorkInfo tile_work(const TileSummary& s, u32 idx) const {
    return tile_of_id(s, order[idx]);
  }

  // The counter's hand-off, then on the GPU a prefetch of the order entries the CTA's next index
  // will likely read: that read of order[idx] depends on the counter's atomic, so the two run in
  // series on the producer's path to the next tile's loads. About C indices are taken while a CTA
  // runs one tile, so the lines of [idx + C/2, idx + 3C) go to L1, one per producer thread. A hint
  // only: where the next index falls elsewhere, the read goes to L2 as before. Measured on an
  // NVIDIA H200, 2026-12-01: +2.1-2.5 % at d = 64 causal 2048-16384, neutral elsewhere
  // (docs/gpu-performance.md, "Early hand-off at d = 256").
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                           u32 pipeline_idx = 0) const {
    return prefetched<producer>(
        CountedPlannedScheduler::template advance<producer, sync>(s, st, pipeline_idx), st);
  }
  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE Optional<SeqInfo> first_work(const TileSummary& s, TileState& st,
                                              u32 pipeline_idx = 0) const {
    return prefetched<producer>(
        CountedPlannedScheduler::template first_work<producer, sync>(s, st, pipeline_idx), st);
  }

 private:
  // `work` as the hand-off left it in `st`, after a producer's prefetch from st.idx.
  template <bool producer>
  TS_HOST_DEVICE TS_FORCEINLINE Optional<SeqInfo> prefetched(const Optional<SeqInfo>& work,
                                                             const TileState& st) const {
    if constexpr (producer) prefetch_next_entries(st.idx);
    return work;
  }
  TS_HOST_DEVICE TS_FORCEINLINE void prefetch_next_entries(u32 idx) const {
#if TS_DEVICE_PASS
    constexpr u32 kEntriesPerLine = 128 / sizeof(u32);
    const std::uint64_t first = (std::uint64_t(idx) + num_ctas / 2) / kEntriesPerLine;
    const std::uint64_t last = (std::uint64_t(idx) + 3ull * num_ctas) / kEntriesPerLine;
    const std::uint64_t line = first + detail::thread_rank() % kSchedulerBarrierThreads;
    if (line <= last && line * kEntriesPerLine < tile_count)
      asm volatile("prefetch.L1 [%0];" ::"l"(order + line * kEntriesPerLine));
#else
    (void)idx;
#endif
  }
};

// Host-planned lists: CTA c processes list_tiles[list_offsets[c] .. list_offsets[c + 1]) in
// order. The host balanced the lists with its cost model (schedule_plan.hpp), so the device only
// reads its own list. state.max_idx is the end of the CTA's own list.
class PlannedListScheduler : public detail::PlannedScheduler<PlannedListScheduler> {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::Planned;

  const u32* list_offsets = nullptr;
  const u32* list_tiles = nullptr;

  constexpr PlannedListScheduler() = default;
  TS_HOST_DEVICE constexpr PlannedListScheduler(TileMapping m, u32 num_ctas, const u32* offsets,
                                                const u32* tiles, u32 tile_total)
      : PlannedScheduler(m, num_ctas, tile_total), list_offsets(offsets), list_tiles(tiles) {}

  TS_HOST_DEVICE constexpr WorkInfo tile_work(const TileSummary& s, u32 idx) const {
    return tile_of_id(s, list_tiles[idx]);
  }

  TS_HOST_DEVICE constexpr TileState initial_state(u32* sidx, const TileSummary&,
                                                   BlockIndex block) const {
    return TileState{list_offsets[block.x], sidx, list_offsets[block.x + 1]};
  }

  template <bool producer = true, SchedulerSync sync = SchedulerSync::Default>
  TS_HOST_DEVICE constexpr Optional<SeqInfo> advance(const TileSummary& s, TileState& st,
                                                     u32 = 0) const {
    ++st.idx;
    return current(s, st);
  }
};

// The queued scheduler over the valid tiles only: index j in [0, M), M = H * (tiles of every
// sequence), so a ragged batch wastes no fetch on tiles past a sequence's end. sequence_tiles[b]
// is the number of tiles of the sequences before b (B+1 entries); sequence b owns the indices
// [H * sequence_tiles[b], H * sequence_tiles[b + 1]), head-major inside, as in SPEC §3, and a claim
// finds its sequence by binary search. PROMPT_ROTATE reverses odd heads' tiles within their
// sequence.
class RaggedQueuedScheduler : public detail::CountedPlannedScheduler<RaggedQueuedScheduler> {
 public:
  static constexpr SchedulerKind kind = SchedulerKind::RaggedQueued;

  const u32* sequence_tiles = nullptr;
  Schedule schedule = Schedule::Default;

  constexpr RaggedQueuedScheduler() = default;
  TS_HOST_DEVICE constexpr RaggedQueuedScheduler(TileMapping m, u32 num_ctas,
                                                 const u32* tiles_before, u32 tiles,
                                                 AtomicCounter c)
      : CountedPlannedScheduler(m, num_ctas, tiles, c),
        sequence_tiles(tiles_before),
        schedule(m.schedule) {}

  // The sequence is the last b with H * sequence_tiles[b] <= j (an empty sequence starts where
  // the next one does, so the search passes over it); then head and tile within it.
  TS_HOST_DEVICE constexpr WorkInfo tile_work(const TileSummary& s, u32 j) const {
    const u32 heads = mapping.num_heads;
    u32 lo = 0, hi = s.batch_size;  // H * tiles[lo] <= j < H * tiles[hi]
    while (hi - lo > 1) {
      const u32 mid = lo + (hi - lo) / 2;
      if (sequence_tiles[mid] * heads <= j)
        lo = mid;
      else
        hi = mid;
    }
    const u32 tiles = sequence_tiles[lo + 1] - sequence_tiles[lo];
    const u32 rank = j - sequence_tiles[lo] * heads;
    const u32 head = rank / tiles;
    u32 t = rank - head * tiles;
    if (schedule == Schedule::PromptRotate && (head & 1u)) t = tiles - 1 - t;
    return WorkInfo{t * mapping.tile_shape, head, lo, true};
  }
};

}  // namespace runtime
}  // namespace tilesched
