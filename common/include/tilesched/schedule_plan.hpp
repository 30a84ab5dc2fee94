// The host half of the planned schedulers (planned_schedulers.hpp): the arrays they walk, built
// once per problem on the host (host only; the GPU host code uploads them, the simulator reads
// them in place).
//
// - valid_tiles: every tile that starts inside its sequence, in DEFAULT order, with its cost.
// - l2_sections: runs of whole rounds (C tiles) of the DEFAULT order whose (sequence, KV head)
//   units' K and V fit a share of L2. While every CTA works inside one section, the keys and
//   values it reads stay in L2 for the other query heads of the group and the other tiles of the
//   sequence.
// - longest_first_order (lpt, lpt_queued): the sections in DEFAULT order, and within each the
//   tiles by decreasing cost. Longest first is the classic rule for balancing (Graham's LPT): the
//   short tiles at the end fill the gaps the long ones leave. Under a causal mask a tile's cost
//   grows with its offset, so the order starts every section with its last tiles.
// - balanced_lists (planned): the same order, each tile onto the CTA with the least planned load
//   (greedy list scheduling), one list per CTA in CSR form.
// - sequence_tile_prefix (ragged_queued): B+1 prefix sums of the tiles of each sequence.
// - split_plan (split_kv, stream_k): the valid tiles in DEFAULT order with their KV blocks laid
//   end to end, each tile's pieces (fixed chunks, or the stream cut into C ranges of equal
//   predicted cost) and the workspace slots of the tiles cut into several (split_schedules.hpp).
//
// The cost of a tile is the caller's: a function of its KV-block counts (the simulator passes its
// fitted cost model), so common/ does not depend on the simulator.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "tilesched/workload.hpp"

namespace tilesched {

// Predicted time (any unit) of a tile with these KV-block counts.
using TileCostFn = std::function<double(const TileCost&)>;

// The share of L2 one section's K and V may fill: the rest holds the Q and O tiles streaming
// through and the next section's first loads. A choice, not a measurement.
inline constexpr double kL2SectionShare = 0.5;

// One tile a plan hands out.
struct PlannedTile {
  u32 id = 0;  // the DEFAULT mapping's linear index (b * H + h) * T + t
  u32 prompt = 0;
  u32 head = 0;  // scheduled head: query head (prefill) or KV head (decoding)
  u32 prompt_offset = 0;
  double cost = 0;
};

// Every tile that starts inside its sequence, in DEFAULT order (sequence, head, tile).
inline std::vector<PlannedTile> valid_tiles(const Workload& w, const TileCostFn& cost) {
  const TileSummary summary = w.summary(nullptr);  // T only: padded or not, ids are the same
  const MappingParams mapping(TileMapping{w.tile_shape(), w.scheduled_heads(), Schedule::Default});
  std::vector<PlannedTile> tiles;
  tiles.reserve(static_cast<std::size_t>(w.valid_tile_count()));
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 h = 0; h < w.scheduled_heads(); ++h)
      for (u32 t = 0; t * w.tile_shape() < w.q_lens[b]; ++t) {
        const u32 offset = t * w.tile_shape();
        tiles.push_back(PlannedTile{summary.tile_index(mapping, t, h, b), b, h, offset,
                                    cost(w.tile_cost(b, offset))});
      }
  return tiles;
}

// Bytes of K and V (bf16) one (sequence, KV head) unit reads.
inline std::uint64_t kv_unit_bytes(const Workload& w, u32 prompt) {
  return 2ull * w.key_len(prompt) * w.head_dim * 2ull;
}

// The section budget of a workload: its L2 share (0 when l2_bytes is 0: no sections).
inline std::uint64_t l2_section_budget(const Workload& w) {
  return static_cast<std::uint64_t>(double(w.l2_bytes) * kL2SectionShare);
}

// The L2 section of each tile of `tiles` (valid_tiles' DEFAULT order): runs of whole rounds of C
// tiles, a round joining the current section while the K and V of every (sequence, KV head) unit
// the section touches fit `budget_bytes`, or while the section has fewer than w.l2_min_rounds
// rounds (docs/schedulers.md).
// Sections start on round boundaries so that a static walk of C CTAs meets every section with
// whole rounds, which keeps the snake's balance from one section to the next. A budget of 0 puts
// every tile in section 0 (no grouping).
inline std::vector<u32> l2_sections(const Workload& w, const std::vector<PlannedTile>& tiles,
                                    std::uint64_t budget_bytes) {
  std::vector<u32> section(tiles.size(), 0);
  if (budget_bytes == 0) return section;
  const std::size_t round = w.num_ctas;
  const auto unit_of = [&](const PlannedTile& t) {
    return std::make_pair(t.prompt, w.tile_kv_head(t.head));
  };
  u32 current = 0;
  std::uint64_t filled = 0;  // bytes of the units the current section touches
  std::size_t rounds = 0;    // rounds in the current section
  for (std::size_t first = 0; first < tiles.size(); first += round) {
    const std::size_t end = std::min(tiles.size(), first + round);
    // The round's units: all of them (for a new section), and those that do not continue the
    // unit of the tile before (for the current one: DEFAULT order keeps a unit's tiles together).
    std::uint64_t all_units = 0, new_units = 0;
    for (std::size_t i = first; i < end; ++i) {
      const bool new_unit = i == 0 || unit_of(tiles[i]) != unit_of(tiles[i - 1]);
      if (new_unit || i == first) all_units += kv_unit_bytes(w, tiles[i].prompt);
      if (new_unit) new_units += kv_unit_bytes(w, tiles[i].prompt);
    }
    if (filled > 0 && filled + new_units > budget_bytes && rounds >= w.l2_min_rounds) {
      ++current;
      filled = all_units;
      rounds = 1;
    } else {
      filled += new_units;
      ++rounds;
    }
    std::fill(section.begin() + std::ptrdiff_t(first), section.begin() + std::ptrdiff_t(end),
              current);
  }
  return section;
}

// The valid tiles in L2 sections, longest first within each (ties keep DEFAULT order, so tiles
// of equal cost from neighbouring heads stay together).
inline std::vector<PlannedTile> longest_first_tiles(const Workload& w, const TileCostFn& cost) {
  std::vector<PlannedTile> tiles = valid_tiles(w, cost);
  const std::vector<u32> section = l2_sections(w, tiles, l2_section_budget(w));
  std::vector<std::size_t> rank(tiles.size());
  for (std::size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  std::stable_sort(rank.begin(), rank.end(), [&](std::size_t a, std::size_t b) {
    return section[a] != section[b] ? section[a] < section[b] : tiles[a].cost > tiles[b].cost;
  });
  std::vector<PlannedTile> sorted;
  sorted.reserve(tiles.size());
  for (const std::size_t i : rank) sorted.push_back(tiles[i]);
  return sorted;
}

// The lpt and lpt_queued order: tile ids of longest_first_tiles.
inline std::vector<u32> longest_first_order(const Workload& w, const TileCostFn& cost) {
  std::vector<u32> order;
  for (const PlannedTile& t : longest_first_tiles(w, cost)) order.push_back(t.id);
  return order;
}

// Per-CTA tile lists in CSR form: CTA c processes tiles[offsets[c] .. offsets[c + 1]).
struct TileLists {
  std::vector<u32> offsets;   // min(C, M) + 1 entries: the CTAs that are launched
  std::vector<u32> tiles;     // M tile ids
  std::vector<double> loads;  // each list's planned cost
};

// Greedy list scheduling over longest_first_tiles: each tile goes to the CTA with the least
// planned load so far (ties: the lower CTA), and is appended to its list. A CTA's last tile
// started when its load was the smallest, at most total / C, so the longest list costs at most
// total / C + the longest tile; with one section (l2_bytes 0) this is Graham's LPT, within 4/3 of
// the best possible. Only min(C, M) CTAs can receive a tile (an empty CTA of lower id is always
// preferred), so only they have lists.
inline TileLists balanced_lists(const Workload& w, const TileCostFn& cost) {
  const std::vector<PlannedTile> tiles = longest_first_tiles(w, cost);
  const std::size_t ctas = std::min<std::size_t>(w.num_ctas, tiles.size());
  TileLists out;
  out.loads.assign(ctas, 0.0);
  std::vector<std::vector<u32>> lists(ctas);
  using Load = std::pair<double, std::size_t>;  // (planned load, CTA)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (std::size_t c = 0; c < ctas; ++c) least.push({0.0, c});
  for (const PlannedTile& t : tiles) {
    const auto [load, c] = least.top();
    least.pop();
    lists[c].push_back(t.id);
    out.loads[c] = load + t.cost;
    least.push({out.loads[c], c});
  }
  out.offsets.assign(1, 0);
  for (const auto& list : lists) {
    out.tiles.insert(out.tiles.end(), list.begin(), list.end());
    out.offsets.push_back(static_cast<u32>(out.tiles.size()));
  }
  return out;
}

// B+1 prefix sums of the tiles that start inside each sequence (ragged_queued).
inline std::vector<u32> sequence_tile_prefix(const Workload& w) {
  std::vector<u32> prefix(1, 0);
  for (u32 len : w.q_lens) prefix.push_back(prefix.back() + ceil_div(len, w.tile_shape()));
  return prefix;
}

// The predicted cost of one KV block of a tile in the split stream, from a tile cost function:
// the marginal cost of an unmasked or a masked block, and a tile's fixed cost carried by its
// first block (so that a range of many short tiles, as in decoding, pays for each of them).
struct StreamBlockCosts {
  double fixed = 0, unmasked = 0, masked = 0;

  explicit StreamBlockCosts(const TileCostFn& cost)
      : fixed(cost(TileCost{0, 0})),
        unmasked(cost(TileCost{1, 0}) - fixed),
        masked(cost(TileCost{1, 1}) - fixed) {}

  // Block j of a tile of cost c: the masked blocks are a tile's last ones (geometry.hpp).
  double of(const TileCost& c, u32 j) const {
    return (j == 0 ? fixed : 0.0) + (j >= c.kv_blocks - c.masked_blocks ? masked : unmasked);
  }
};

// The arrays of split_kv and stream_k (SplitArrays in split_schedules.hpp describes each).
struct SplitPlan {
  std::vector<u32> tiles;         // M tile ids, DEFAULT order
  std::vector<u32> block_start;   // M+1
  std::vector<u32> piece_start;   // M+1 (split_kv)
  std::vector<u32> slot_start;    // M+1
  std::vector<u32> split_tiles;   // S ordinals
  std::vector<u32> range_bounds;  // R+1 (stream_k)
};

// stream_k's range count over `blocks` KV blocks: R = min(C, blocks), so that every CTA's range
// holds at least one block.
inline std::uint64_t stream_k_range_count(const Workload& w, std::uint64_t blocks) {
  return std::min<std::uint64_t>(w.num_ctas, blocks);
}

// stream_k's ranges: R = min(C, P) bounds over the P blocks of `costs` (each tile's TileCost, in
// stream order), bound c the block boundary whose prefix cost is nearest to c / R of the total,
// kept strictly increasing so that every CTA has at least one block. Where no block costs more
// than an even share, each range's predicted cost is within one block's of that share.
inline std::vector<u32> stream_k_bounds(const Workload& w, const std::vector<TileCost>& costs,
                                        const StreamBlockCosts& block) {
  std::uint64_t blocks = 0;
  double total = 0;
  for (const TileCost& c : costs) {
    blocks += c.kv_blocks;
    for (u32 j = 0; j < c.kv_blocks; ++j) total += block.of(c, j);
  }
  const u32 ranges = static_cast<u32>(stream_k_range_count(w, blocks));
  std::vector<u32> bounds(1, 0);
  if (ranges == 0) return bounds;
  u32 position = 0;   // blocks before (tile, j)
  double before = 0;  // their cost
  std::size_t tile = 0;
  u32 j = 0;
  for (u32 c = 1; c < ranges; ++c) {
    const double target = total * c / ranges;
    // Walk while the next block still ends at or below the target, then round to the nearer of
    // the two boundaries around it.
    for (;;) {
      while (tile < costs.size() && j >= costs[tile].kv_blocks) ++tile, j = 0;
      if (tile == costs.size()) break;  // rounding left the target at the very end
      const double next = block.of(costs[tile], j);
      if (before + next > target) {
        if (before + next - target < target - before) ++position, before += next, ++j;
        break;
      }
      ++position, before += next, ++j;
    }
    const u32 lowest = bounds.back() + 1, highest = static_cast<u32>(blocks) - (ranges - c);
    bounds.push_back(std::min(std::max(position, lowest), highest));
  }
  bounds.push_back(static_cast<u32>(blocks));
  return bounds;
}

// split_kv's pieces of a tile of cost `c`: chunks of split_kv_blocks blocks from its first.
inline u32 split_kv_pieces(const Workload& w, const TileCost& c) {
  return ceil_div(c.kv_blocks, w.split_kv_blocks);
}

// The split schedules' arrays for w (valid, scheduler split_kv or stream_k), with block costs from
// `cost` (stream_k's ranges).
inline SplitPlan split_plan(const Workload& w, const TileCostFn& cost) {
  SplitPlan plan;
  std::vector<TileCost> costs;
  for (const PlannedTile& t : valid_tiles(w, [](const TileCost&) { return 0.0; })) {
    plan.tiles.push_back(t.id);
    costs.push_back(w.tile_cost(t.prompt, t.prompt_offset));
  }
  const bool stream_k = w.scheduler == SchedulerKind::StreamK;
  plan.block_start.assign(1, 0);
  for (const TileCost& c : costs) plan.block_start.push_back(plan.block_start.back() + c.kv_blocks);
  if (stream_k) plan.range_bounds = stream_k_bounds(w, costs, StreamBlockCosts(cost));
  // The range holding block position x.
  const auto range_of = [&](u32 x) {
    return static_cast<u32>(
        std::upper_bound(plan.range_bounds.begin(), plan.range_bounds.end() - 1, x) -
        plan.range_bounds.begin() - 1);
  };
  plan.piece_start.assign(1, 0);
  plan.slot_start.assign(1, 0);
  for (std::size_t o = 0; o < costs.size(); ++o) {
    const u32 pieces =
        stream_k ? range_of(plan.block_start[o + 1] - 1) - range_of(plan.block_start[o]) + 1
                 : split_kv_pieces(w, costs[o]);
    plan.piece_start.push_back(plan.piece_start.back() + pieces);
    plan.slot_start.push_back(plan.slot_start.back() + (pieces > 1 ? pieces : 0));
    if (pieces > 1) plan.split_tiles.push_back(static_cast<u32>(o));
  }
  if (stream_k) plan.piece_start.clear();  // stream_k walks ranges, not piece numbers
  return plan;
}

// What a splitting schedule hands out for w (valid, scheduler split_tail, split_kv or stream_k),
// known from the workload alone: the work items (whole tiles and pieces) and the workspace slots
// of the split tiles. split_tail's exactly, from its walk (work_items, and piece_slots where the
// tail has tiles). split_kv's exactly, the ends of split_plan's piece_start and slot_start, since
// its chunks follow from each tile's own blocks. stream_k's at most, since where its ranges cut
// depends on the cost model: each of its R - 1 inner bounds (R = min(C, KV blocks)) lies inside at
// most one tile, adding one piece to it and making it split at most once, so at most M + R - 1
// pieces and 2 (R - 1) slots.
struct SplitCounts {
  std::uint64_t pieces = 0;
  std::uint64_t slots = 0;
};
inline SplitCounts split_counts(const Workload& w) {
  SplitCounts n;
  if (w.scheduler == SchedulerKind::SplitTail) {
    const runtime::SplitTailScheduler s = split_tail_scheduler(w);
    n.pieces = s.work_items();
    n.slots = s.tail_tiles() == 0 ? 0 : s.piece_slots();
    return n;
  }
  if (w.scheduler == SchedulerKind::StreamK) {
    const std::uint64_t ranges = stream_k_range_count(w, w.total_kv_blocks());
    const std::uint64_t inner = ranges == 0 ? 0 : ranges - 1;
    n.pieces = w.valid_tile_count() + inner;
    n.slots = 2 * inner;
    return n;
  }
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 offset = 0; offset < w.q_lens[b]; offset += w.tile_shape()) {
      const u32 pieces = split_kv_pieces(w, w.tile_cost(b, offset));
      n.pieces += pieces;
      if (pieces > 1) n.slots += pieces;
    }
  n.pieces *= w.scheduled_heads();
  n.slots *= w.scheduled_heads();
  return n;
}

// The arrays a workload's scheduler walks (empty for the seed's schedulers, which need none).
struct SchedulePlan {
  u32 tile_count = 0;               // M: valid tiles
  std::vector<u32> order;           // lpt, lpt_queued
  std::vector<u32> list_offsets;    // planned
  std::vector<u32> list_tiles;      // planned
  std::vector<u32> sequence_tiles;  // ragged_queued
  SplitPlan split;                  // split_kv, stream_k

  // Pointers into this plan's vectors (host memory): valid while the plan lives unchanged.
  PlanArrays arrays() const {
    const auto data = [](const std::vector<u32>& v) { return v.empty() ? nullptr : v.data(); };
    PlanArrays a{tile_count, data(order), data(list_offsets), data(list_tiles),
                 data(sequence_tiles)};
    a.split.split_tile_count = static_cast<u32>(split.split_tiles.size());
    a.split.piece_count = split.piece_start.empty() ? 0u : split.piece_start.back();
    a.split.tiles = data(split.tiles);
    a.split.block_start = data(split.block_start);
    a.split.piece_start = data(split.piece_start);
    a.split.slot_start = data(split.slot_start);
    a.split.split_tiles = data(split.split_tiles);
    a.split.range_bounds = data(split.range_bounds);
    a.split.ranges = split.range_bounds.empty() ? 0u : u32(split.range_bounds.size() - 1);
    return a;
  }

  // Every array of the plan beside the field of `a` (arrays()' result) that points at it: the
  // one list a copy to the device walks, copying each array and pointing its field at the copy
  // (a null field, an empty array, stays null).
  struct ArrayField {
    const std::vector<u32>* values;
    const u32** field;
  };
  static constexpr std::size_t kArrays = 10;
  std::array<ArrayField, kArrays> array_fields(PlanArrays& a) const {
    return {{{&order, &a.order},
             {&list_offsets, &a.list_offsets},
             {&list_tiles, &a.list_tiles},
             {&sequence_tiles, &a.sequence_tiles},
             {&split.tiles, &a.split.tiles},
             {&split.block_start, &a.split.block_start},
             {&split.piece_start, &a.split.piece_start},
             {&split.slot_start, &a.split.slot_start},
             {&split.split_tiles, &a.split.split_tiles},
             {&split.range_bounds, &a.split.range_bounds}}};
  }
};

// Why `plan` cannot drive w.scheduler (empty when it can): its arrays must have the sizes the
// scheduler indexes, or a walk reads past their ends. Plans of build_schedule_plan for `w` fit;
// this catches a plan built for another workload (other lengths, heads or CTA count).
inline std::string schedule_plan_mismatch(const Workload& w, const SchedulePlan& plan) {
  if (!needs_schedule_plan(w.scheduler)) return {};
  const std::uint64_t tiles = w.valid_tile_count();
  const auto wrong = [&](const char* what, std::size_t got, std::uint64_t want) {
    return fmt::format(
        "the {} scheduler's plan does not fit the workload: {} has {} entries, not {}",
        to_string(w.scheduler), what, got, want);
  };
  if (plan.tile_count != tiles) return wrong("the tile count", plan.tile_count, tiles);
  switch (w.scheduler) {
    case SchedulerKind::Lpt:
    case SchedulerKind::LptQueued:
      if (plan.order.size() != tiles) return wrong("the order", plan.order.size(), tiles);
      break;
    case SchedulerKind::Planned: {
      const std::uint64_t lists = std::min<std::uint64_t>(w.num_ctas, tiles) + 1;
      if (plan.list_offsets.size() != lists)
        return wrong("list_offsets", plan.list_offsets.size(), lists);
      if (plan.list_tiles.size() != tiles)
        return wrong("list_tiles", plan.list_tiles.size(), tiles);
      break;
    }
    case SchedulerKind::RaggedQueued:
      if (plan.sequence_tiles.size() != w.batch_size() + 1u)
        return wrong("sequence_tiles", plan.sequence_tiles.size(), w.batch_size() + 1u);
      break;
    case SchedulerKind::SplitKv:
    case SchedulerKind::StreamK: {
      const SplitPlan& s = plan.split;
      if (s.tiles.size() != tiles) return wrong("tiles", s.tiles.size(), tiles);
      if (s.block_start.size() != tiles + 1)
        return wrong("block_start", s.block_start.size(), tiles + 1);
      if (s.slot_start.size() != tiles + 1)
        return wrong("slot_start", s.slot_start.size(), tiles + 1);
      if (w.scheduler == SchedulerKind::SplitKv && s.piece_start.size() != tiles + 1)
        return wrong("piece_start", s.piece_start.size(), tiles + 1);
      const std::uint64_t ranges = stream_k_range_count(w, s.block_start.back()) + 1;
      if (w.scheduler == SchedulerKind::StreamK && s.range_bounds.size() != ranges)
        return wrong("range_bounds", s.range_bounds.size(), ranges);
      break;
    }
    default: break;
  }
  return {};
}

// Builds what w.scheduler walks, with tile costs from `cost`. The workload must be valid.
inline SchedulePlan build_schedule_plan(const Workload& w, const TileCostFn& cost) {
  SchedulePlan plan;
  if (!needs_schedule_plan(w.scheduler)) return plan;
  plan.tile_count = static_cast<u32>(w.valid_tile_count());  // at most N: validated to fit
  switch (w.scheduler) {
    case SchedulerKind::Lpt:
    case SchedulerKind::LptQueued: plan.order = longest_first_order(w, cost); break;
    case SchedulerKind::Planned: {
      TileLists lists = balanced_lists(w, cost);
      plan.list_offsets = std::move(lists.offsets);
      plan.list_tiles = std::move(lists.tiles);
      break;
    }
    case SchedulerKind::RaggedQueued: plan.sequence_tiles = sequence_tile_prefix(w); break;
    case SchedulerKind::SplitKv:
    case SchedulerKind::StreamK: plan.split = split_plan(w, cost); break;
    default: break;
  }
  return plan;
}

}  // namespace tilesched
