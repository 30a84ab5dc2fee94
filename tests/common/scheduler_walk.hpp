// Running a scheduler's processing loop on the host the way the kernel does, for every CTA: in
// CTA order (schedulers that need no ordering between CTAs), with the CTAs' advances interleaved
// at random (counter schedulers, whose fetch order timing decides), or as the warp-specialized
// kernel's producer and consumer hand tiles over.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "random_problem.hpp"
#include "tilesched/scheduler.hpp"

namespace tilesched::testing {

// Checks that the KV block ranges [begin, end) a tile's pieces cover, sorted in place, are its
// blocks [0, blocks) exactly once: no gap, no overlap.
inline void check_blocks_once(std::vector<std::pair<u32, u32>>& ranges, u32 blocks) {
  std::sort(ranges.begin(), ranges.end());
  u32 next = 0;
  for (const auto& [begin, end] : ranges) {
    CHECK(begin == next);
    next = end;
  }
  CHECK(next == blocks);
}


// Each CTA's processed indices (state.idx), in order, CTA by CTA of the grid, alternating the
// pipeline slot as the kernel does and checking that get_current_work_info agrees with the tile
// handed out. Counter CTAs walked one after another take from the same counter, so two
// schedulers walked alike with counters started alike must agree.
template <class Scheduler>
std::vector<std::vector<u32>> walk_all(const Scheduler& sched, const TileSummary& summary) {
  const GridDim grid = sched.grid_dim(summary);
  std::vector<std::vector<u32>> per_cta;
  for (u32 z = 0; z < grid.z; ++z)
    for (u32 y = 0; y < grid.y; ++y)
      for (u32 x = 0; x < grid.x; ++x) {
        u32 sidx[2] = {0, 0};
        TileState st = sched.initial_state(sidx, summary, BlockIndex{x, y, z});
        std::vector<u32> seq;
        u32 slot = 0;
        for (auto s = sched.first_work(summary, st, slot); s;
             s = sched.advance(summary, st, slot)) {
          CHECK(s->prompt_offset == sched.get_current_work_info(summary, st).prompt_offset);
          seq.push_back(st.idx);
          slot ^= 1u;
        }
        per_cta.push_back(seq);
      }
  return per_cta;
}

// Each CTA's processed indices when every CTA first takes its static tile and then the CTAs still
// running advance in an order `rng` picks (as timing would), alternating pipeline slots.
template <class Scheduler>
std::vector<std::vector<u32>> walk_interleaved(const Scheduler& sched, const TileSummary& summary,
                                               SplitMix64& rng) {
  const GridDim grid = sched.grid_dim(summary);
  std::vector<std::vector<u32>> sidx(grid.x, std::vector<u32>(2, 0));
  std::vector<TileState> states;
  std::vector<std::vector<u32>> per_cta(grid.x);
  std::vector<u32> running, step(grid.x, 0);
  for (u32 c = 0; c < grid.x; ++c) {
    states.push_back(sched.initial_state(sidx[c].data(), summary, BlockIndex{c, 0, 0}));
    // Thread 0 of a counter scheduler publishes its static index; a wrong slot shows as ~0u.
    if (takes_from_counter(Scheduler::kind) && sidx[c][0] != c) per_cta[c].push_back(~0u);
    if (sched.first_work(summary, states[c], 0)) {
      per_cta[c].push_back(states[c].idx);
      running.push_back(c);
    }
  }
  while (!running.empty()) {
    const std::size_t k = rng.uniform(0, u32(running.size() - 1));
    const u32 c = running[k];
    ++step[c];
    if (sched.advance(summary, states[c], step[c] & 1u))
      per_cta[c].push_back(states[c].idx);
    else
      running.erase(running.begin() + std::ptrdiff_t(k));
  }
  return per_cta;
}

// The kernel's protocol for one CTA: per tile the producer advances first (writing the slot), then
// the consumer advances with producer = false and reads it. Returns the consumer's indices and
// checks that the producer saw the same.
template <class Scheduler>
std::vector<u32> hand_off(const Scheduler& sched, const TileSummary& summary, BlockIndex block) {
  u32 sidx[2] = {0, 0};
  TileState producer = sched.initial_state(sidx, summary, block);
  TileState consumer = sched.initial_state(sidx, summary, block);
  std::vector<u32> seq;
  for (u32 step = 0;; ++step) {
    const u32 slot = step % 2;
    const auto p =
        step == 0
            ? sched.template first_work<true, SchedulerSync::Producer>(summary, producer, slot)
            : sched.template advance<true, SchedulerSync::Producer>(summary, producer, slot);
    const auto c =
        step == 0
            ? sched.template first_work<false, SchedulerSync::Producer>(summary, consumer, slot)
            : sched.template advance<false, SchedulerSync::Producer>(summary, consumer, slot);
    REQUIRE(bool(p) == bool(c));
    if (!c) break;
    REQUIRE(producer.idx == consumer.idx);
    seq.push_back(consumer.idx);
  }
  return seq;
}

inline std::vector<u32> flatten_sorted(const std::vector<std::vector<u32>>& per_cta) {
  std::vector<u32> all;
  for (const auto& s : per_cta) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace tilesched::testing
