// Plain value types of the scheduler contract (SPEC §2). Names follow the MAX reference so the
// mapping stays obvious: WorkInfo / SeqInfo / TileSummary / TileState.
#pragma once

#include "tilesched/config.hpp"

namespace tilesched {

// How a linear work index walks the tiles of a head (SPEC §3).
enum class Schedule : u32 {
  Default = 0,       // tile index varies fastest, in order
  PromptRotate = 1,  // odd heads walk their tiles in reverse (cheap causal balance)
};

// How the threads of a CTA agree on the next index when one thread fetches it (queued only).
enum class SchedulerSync : u32 {
  None = 0,      // only the fetching thread calls advance (TMA-style producer)
  Producer = 1,  // fetching thread stores sidx[pipeline_idx], then a 128-thread named barrier
  All = 2,       // a CTA-wide barrier
  Default = Producer,
};

// What the schedulers do with tiles that start at or past their sequence's end (SPEC §5).
enum class RaggedMode : u32 {
  Safe = 0,      // skip them everywhere (first tile and every advance)
  Faithful = 1,  // upstream behaviour: check the first tile, step once, then process anything < N
};

enum class SchedulerKind : u32 {
  Tile = 0,          // persistent, static stride by num_ctas
  Queued = 1,        // persistent, dynamic: indices from a global atomic counter
  Transient = 2,     // one tile per CTA, grid (T, H, B)
  Lpt = 3,           // persistent, static: a host-built longest-first order, walked in a snake
  LptQueued = 4,     // persistent, dynamic: the queued counter over that order
  Planned = 5,       // persistent, static: host-planned per-CTA lists (greedy longest-first)
  RaggedQueued = 6,  // persistent, dynamic: a counter over the valid tiles only
  SplitTail = 7,     // persistent, static: tile's stride for the full waves, then the last
                     // partial wave's KV blocks split evenly over every CTA (split_tail.hpp)
  SplitKv = 8,       // persistent, dynamic: every tile's KV blocks cut into chunks of a fixed
                     // size, the pieces from a counter; batch-invariant (split_schedules.hpp)
  StreamK = 9,       // persistent, static: the (tile, KV block) space cut into C ranges of equal
                     // predicted cost, one per CTA (split_schedules.hpp)
};

// Whether a scheduler's CTAs take their tiles from a global counter: the order in which CTAs
// receive them depends on timing, only the set of tiles is deterministic (SPEC §4.2).
TS_HOST_DEVICE constexpr bool takes_from_counter(SchedulerKind k) {
  return k == SchedulerKind::Queued || k == SchedulerKind::LptQueued ||
         k == SchedulerKind::RaggedQueued || k == SchedulerKind::SplitKv;
}

// Whether a scheduler walks arrays the host builds for each problem (schedule_plan.hpp).
TS_HOST_DEVICE constexpr bool needs_schedule_plan(SchedulerKind k) {
  return k == SchedulerKind::Lpt || k == SchedulerKind::LptQueued || k == SchedulerKind::Planned ||
         k == SchedulerKind::RaggedQueued || k == SchedulerKind::SplitKv ||
         k == SchedulerKind::StreamK;
}

// Whether a scheduler hands out pieces of tiles (a KV block range each) that a combine finishes:
// split_tail, split_kv and stream_k.
TS_HOST_DEVICE constexpr bool splits_tiles(SchedulerKind k) {
  return k == SchedulerKind::SplitTail || k == SchedulerKind::SplitKv ||
         k == SchedulerKind::StreamK;
}

enum class Mask : u32 { None = 0, Causal = 1 };

// A work tile's coordinates. prompt_offset is a token offset (t * BM), not a tile number.
struct WorkInfo {
  u32 prompt_offset = 0;
  u32 head_idx = 0;
  u32 prompt_idx = 0;
  bool is_valid_tile = false;  // coordinates in range, i.e. idx < N

  TS_HOST_DEVICE constexpr bool is_valid() const { return is_valid_tile; }
};

// kv_block_end of a SeqInfo that processes all of its tile's KV blocks.
inline constexpr u32 kAllKvBlocks = 0xFFFFFFFFu;

// A tile placed in its sequence. A tile is only worth processing when it starts inside it.
// Every scheduler but the splitting ones (split_tail, split_kv, stream_k) hands out whole tiles:
// KV blocks [0, kAllKvBlocks), i.e. all the blocks the tile's rows see (geometry.hpp clamps the
// range to them). Their pieces process [kv_block_begin, kv_block_end) of them, in BN-wide blocks.
struct SeqInfo {
  u32 seq_len = 0;       // query rows of this sequence
  u32 start_of_seq = 0;  // first query row of the sequence in the packed (ragged) layout
  u32 prompt_offset = 0;
  u32 head_idx = 0;
  u32 prompt_idx = 0;
  u32 kv_block_begin = 0;
  u32 kv_block_end = kAllKvBlocks;

  TS_HOST_DEVICE constexpr bool is_valid() const { return seq_len > prompt_offset; }
  // Whether this is a piece of a tile rather than the whole of it (only the splitting schedulers').
  TS_HOST_DEVICE constexpr bool is_piece() const {
    return kv_block_begin != 0 || kv_block_end != kAllKvBlocks;
  }
};

// A device-friendly optional (std::optional is not usable in device code).
template <class T>
struct Optional {
  T value{};
  bool has_value = false;

  TS_HOST_DEVICE constexpr explicit operator bool() const { return has_value; }
  TS_HOST_DEVICE constexpr const T& operator*() const { return value; }
  TS_HOST_DEVICE constexpr const T* operator->() const { return &value; }
};

template <class T>
TS_HOST_DEVICE constexpr Optional<T> some(const T& v) {
  return Optional<T>{v, true};
}

// Launch shape of a scheduler (a host/device-neutral dim3).
struct GridDim {
  u32 x = 1, y = 1, z = 1;
  TS_HOST_DEVICE constexpr u32 count() const { return x * y * z; }
};

// Which block a scheduler call is made for. The kernel passes blockIdx; the simulator any CTA.
struct BlockIndex {
  u32 x = 0, y = 0, z = 0;
};

}  // namespace tilesched
