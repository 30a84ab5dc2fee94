// split_kv and stream_k (common/split_schedules.hpp) over seeded random prefill and decode
// workloads: every KV block of every valid tile handed out exactly once, split_of naming each
// piece's siblings and a slot no other piece has, the combine's list of split tiles, the counts
// the workload alone gives (split_counts), split_kv's chunks following each sequence alone
// (batch-invariant), and stream_k's ranges even to a block.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "random_problem.hpp"
#include "scheduler_walk.hpp"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/schedule_plan.hpp"

using namespace tilesched;

namespace {

// A cost with the shape of the simulator's: a fixed part per tile, masked blocks dearer.
double test_cost(const TileCost& c) {
  return 3.0 + 1.0 * (c.kv_blocks - c.masked_blocks) + 1.75 * c.masked_blocks;
}

struct Piece {
  u32 cta, idx, prompt, head, offset, begin, end;
};

// Every CTA's walk: all CTAs start, then advance in turn (the counter's order of a GPU whose
// pieces all take the same time). Whole tiles are given their block range.
std::vector<Piece> walk(const Workload& w, const runtime::AnyScheduler& s) {
  const std::vector<u32> offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(offsets.data());
  const GridDim g = s.grid_dim(summary);
  std::vector<u32> sidx(2 * g.x, 0);
  std::vector<TileState> st(g.x);
  std::vector<Optional<SeqInfo>> cur(g.x);
  for (u32 c = 0; c < g.x; ++c) {
    st[c] = s.initial_state(&sidx[2 * c], summary, BlockIndex{c, 0, 0});
    cur[c] = s.first_work(summary, st[c]);
  }
  std::vector<Piece> out;
  for (bool any = true; any;) {
    any = false;
    for (u32 c = 0; c < g.x; ++c) {
      if (!cur[c]) continue;
      any = true;
      const SeqInfo& si = *cur[c];
      const u32 nb = w.tile_cost(si.prompt_idx, si.prompt_offset).kv_blocks;
      out.push_back({c, st[c].idx, si.prompt_idx, si.head_idx, si.prompt_offset, si.kv_block_begin,
                     std::min(si.kv_block_end, nb)});
      cur[c] = s.advance(summary, st[c]);
    }
  }
  return out;
}

Workload random_workload(tilesched::testing::SplitMix64& rng, SchedulerKind kind) {
  Workload w;
  w.scheduler = kind;
  w.decoding = rng.chance(50);
  w.num_kv_heads = rng.uniform(1, 4);
  w.num_q_heads = w.num_kv_heads * rng.uniform(1, 4);
  w.mask = rng.chance(70) ? Mask::Causal : Mask::None;
  w.block_m = rng.chance(50) ? 64 : 128;
  w.block_n = rng.chance(50) ? 64 : 128;
  w.num_ctas = rng.uniform(1, 150);
  w.split_kv_blocks = rng.uniform(1, 12);
  const u32 batch = rng.uniform(1, 6);
  for (u32 b = 0; b < batch; ++b) {
    // A decoding batch mixes in a prefill sequence a quarter of the time (SPEC §6).
    const u32 q = !w.decoding       ? rng.uniform(1, 700)
                  : rng.chance(25) ? rng.uniform(kMaxDecodeTokens + 1, 700)
                                   : rng.uniform(1, kMaxDecodeTokens);
    w.q_lens.push_back(q);
    w.kv_lens.push_back(q + rng.uniform(0, w.decoding ? 5000 : 900));
  }
  return w;
}

runtime::AnyScheduler any_scheduler(const Workload& w, const SchedulePlan& plan, u32& counter) {
  return with_scheduler(w, SchedulerInputs{AtomicCounter{&counter}, plan.arrays()},
                        [](const auto& sc) { return runtime::AnyScheduler(sc); });
}

// What split_of says about a piece, whichever split schedule runs.
SplitPiece split_of(const runtime::AnyScheduler& s, u32 idx, u32 begin) {
  return s.kind == SchedulerKind::SplitKv ? s.split_kv.split_of(idx, begin)
                                          : s.stream_k.split_of(idx, begin);
}
const detail::SplitScheduler& split_base(const runtime::AnyScheduler& s) {
  if (s.kind == SchedulerKind::SplitKv) return s.split_kv;
  return s.stream_k;
}

}  // namespace

TEST_CASE(
    "split_kv and stream_k: every block of every tile once, slots unique, split tiles listed") {
  tilesched::testing::SplitMix64 rng(20261205);
  for (int problem = 0; problem < 1500; ++problem) {
    const SchedulerKind kind = problem % 2 ? SchedulerKind::StreamK : SchedulerKind::SplitKv;
    const Workload w = random_workload(rng, kind);
    REQUIRE(w.validate().empty());
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    REQUIRE(schedule_plan_mismatch(w, plan).empty());
    u32 counter = 0;
    const runtime::AnyScheduler s = any_scheduler(w, plan, counter);
    REQUIRE(s.kind == kind);
    if (kind == SchedulerKind::SplitKv) counter = s.counter_start();
    const detail::SplitScheduler& base = split_base(s);
    const std::vector<Piece> pieces = walk(w, s);
    CHECK(base.work_items() == pieces.size());

    // Coverage: the valid tiles, each of its blocks exactly once.
    std::map<u32, std::vector<std::pair<u32, u32>>> by_tile;
    std::set<std::tuple<u32, u32, u32>> tiles;
    std::set<u32> slots;
    for (const Piece& p : pieces) {
      REQUIRE(p.idx < w.valid_tile_count());
      REQUIRE(p.begin < p.end);
      by_tile[p.idx].push_back({p.begin, p.end});
      tiles.insert({p.prompt, p.head, p.offset});
      const SplitPiece sp = split_of(s, p.idx, p.begin);
      const u32 nb = w.tile_cost(p.prompt, p.offset).kv_blocks;
      CHECK(sp.is_split() == (p.end - p.begin < nb));
      if (!sp.is_split()) continue;
      CHECK(sp.rank < sp.pieces);
      CHECK(sp.first_slot + sp.rank < base.piece_slots());
      CHECK(slots.insert(sp.first_slot + sp.rank).second);  // no two pieces share a slot
    }
    CHECK(tiles.size() == w.valid_tile_count());
    REQUIRE(by_tile.size() == w.valid_tile_count());
    std::set<u32> split_tiles;
    for (auto& [idx, ranges] : by_tile) {
      tilesched::testing::check_blocks_once(ranges, base.tile_blocks(idx));
      CHECK(split_of(s, idx, 0).pieces == ranges.size());
      for (std::size_t k = 0; k < ranges.size(); ++k)
        CHECK(split_of(s, idx, ranges[k].first).rank == k);
      if (ranges.size() > 1) split_tiles.insert(idx);
    }
    // The combine's enumeration: exactly the tiles cut into several pieces.
    std::set<u32> listed;
    for (u32 i = 0; i < base.split_tile_count(); ++i) listed.insert(base.split_tile(i));
    CHECK(listed == split_tiles);
    CHECK(slots.size() == base.piece_slots());
    // What the workload alone tells (a kernel's workspace and trace): split_kv's counts, and
    // bounds of stream_k's, whose cuts depend on the cost.
    const SplitCounts counts = split_counts(w);
    if (kind == SchedulerKind::SplitKv) {
      CHECK(counts.pieces == base.work_items());
      CHECK(counts.slots == base.piece_slots());
    } else {
      CHECK(counts.pieces >= base.work_items());
      CHECK(counts.slots >= base.piece_slots());
    }

    if (kind == SchedulerKind::SplitKv) {
      // Chunks of split_kv_blocks from each tile's first block.
      for (const Piece& p : pieces) {
        CHECK(p.begin % w.split_kv_blocks == 0);
        CHECK(p.end - p.begin <= w.split_kv_blocks);
      }
    } else {
      // stream_k: each CTA's pieces are one contiguous run of the stream.
      std::map<u32, std::vector<const Piece*>> by_cta;
      for (const Piece& p : pieces) by_cta[p.cta].push_back(&p);
      for (const auto& [c, run] : by_cta)
        for (std::size_t k = 1; k < run.size(); ++k) {
          CHECK(run[k]->idx == run[k - 1]->idx + 1);
          CHECK(run[k]->begin == 0);
          CHECK(run[k - 1]->end == base.tile_blocks(run[k - 1]->idx));
        }
    }
  }
}

TEST_CASE("stream_k: every range's predicted cost within one block's cost of an even share") {
  tilesched::testing::SplitMix64 rng(20261206);
  const StreamBlockCosts block(test_cost);
  const double largest_block = block.fixed + std::max(block.unmasked, block.masked);
  int checked = 0;
  for (int problem = 0; problem < 1000; ++problem) {
    const Workload w = random_workload(rng, SchedulerKind::StreamK);
    REQUIRE(w.validate().empty());
    const SchedulePlan plan = build_schedule_plan(w, test_cost);
    const std::vector<u32>& bounds = plan.split.range_bounds;
    // The cost of each block of the stream.
    std::vector<double> costs;
    for (const PlannedTile& t : valid_tiles(w, test_cost)) {
      const TileCost c = w.tile_cost(t.prompt, t.prompt_offset);
      for (u32 j = 0; j < c.kv_blocks; ++j) costs.push_back(block.of(c, j));
    }
    REQUIRE(bounds.back() == costs.size());
    const u32 ranges = u32(bounds.size() - 1);
    CHECK(ranges == std::min<std::size_t>(w.num_ctas, costs.size()));
    double total = 0;
    for (double c : costs) total += c;
    const double share = total / ranges;
    for (u32 c = 0; c < ranges; ++c) CHECK(bounds[c] < bounds[c + 1]);
    // Where a block can cost more than a share, a range of one block is all that can be done.
    if (largest_block > share) continue;
    ++checked;
    for (u32 c = 0; c < ranges; ++c) {
      double range = 0;
      for (u32 x = bounds[c]; x < bounds[c + 1]; ++x) range += costs[x];
      CHECK(std::abs(range - share) <= largest_block + 1e-9 * total);
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("split_kv: a sequence's pieces are the same in any batch (batch-invariant)") {
  tilesched::testing::SplitMix64 rng(20261207);
  for (int problem = 0; problem < 300; ++problem) {
    const Workload batch = random_workload(rng, SchedulerKind::SplitKv);
    const u32 b = rng.uniform(0, batch.batch_size() - 1);
    Workload alone = batch;
    alone.q_lens = {batch.q_lens[b]};
    alone.kv_lens = {batch.kv_lens[b]};
    alone.num_ctas = rng.uniform(1, 150);  // another grid, too
    // (head, offset, begin, end) of every piece of sequence `prompt`.
    const auto pieces_of = [](const Workload& w, u32 prompt) {
      const SchedulePlan plan = build_schedule_plan(w, test_cost);
      u32 counter = 0;
      const runtime::AnyScheduler s = any_scheduler(w, plan, counter);
      counter = s.counter_start();
      std::set<std::tuple<u32, u32, u32, u32>> out;
      for (const Piece& p : walk(w, s))
        if (p.prompt == prompt) out.insert({p.head, p.offset, p.begin, p.end});
      return out;
    };
    CHECK(pieces_of(batch, b) == pieces_of(alone, 0));
  }
}

namespace {

// A split_kv decode workload of these new tokens and cache lengths.
Workload split_kv_decode(std::vector<u32> new_tokens, std::vector<u32> keys) {
  Workload w;
  w.decoding = true;
  w.q_lens = std::move(new_tokens);
  w.kv_lens = std::move(keys);
  w.scheduler = SchedulerKind::SplitKv;
  return w;
}

}  // namespace

TEST_CASE("split_kv: a one-token decode of 8k keys makes 8 chunks per KV head by default") {
  const Workload w = split_kv_decode({1}, {8192});
  REQUIRE(w.validate().empty());
  const SchedulePlan plan = build_schedule_plan(w, test_cost);
  CHECK(plan.split.piece_start.back() == 8 * w.num_kv_heads);
  CHECK(plan.split.split_tiles.size() == w.num_kv_heads);
}

TEST_CASE("split schedules: bad chunk sizes and plans of another workload are named") {
  Workload w = split_kv_decode({1, 4}, {300, 9000});
  w.split_kv_blocks = 0;
  CHECK(w.validate().find("split_kv_blocks is 0") != std::string::npos);
  w.split_kv_blocks = 2;
  REQUIRE(w.validate().empty());
  Workload other = w;
  other.kv_lens = {300};
  other.q_lens = {1};
  const SchedulePlan plan = build_schedule_plan(other, test_cost);
  CHECK(schedule_plan_mismatch(w, plan).find("does not fit the workload") != std::string::npos);
}

TEST_CASE("decoding: 1 to 16 new tokens a tile, more a mixed batch's prefill, none refused") {
  Workload w;
  w.decoding = true;
  w.kv_lens = {4096, 100};
  w.q_lens = {16, 1};
  CHECK(w.validate().empty());
  // 4 query heads per KV head at BM 128: 32 new tokens of each in a tile's 128 rows.
  CHECK(w.tile_shape() == 32);
  CHECK(w.decode_only());
  CHECK(w.valid_tile_count() == 2 * w.num_kv_heads);  // one tile per (sequence, KV head)
  // 17 new tokens make sequence 0 a prefill chunk (a mixed batch), still one tile per KV head;
  // 33 make it two.
  w.q_lens = {17, 1};
  CHECK(w.validate().empty());
  CHECK(w.mixed());
  CHECK(w.valid_tile_count() == 2 * w.num_kv_heads);
  w.q_lens = {33, 1};
  CHECK(w.valid_tile_count() == 3 * w.num_kv_heads);
  // The tile's new tokens per query head: the largest power of two from 16 whose rows for the
  // whole group fit BM.
  for (const auto& [q_heads, block_m, tokens] :
       {std::tuple<u32, u32, u32>{8, 128, 128}, {16, 128, 64}, {32, 128, 32}, {64, 128, 16},
        {128, 128, 16}, {24, 192, 64}, {8, 192, 128}, {48, 128, 16}}) {
    Workload g = w;
    g.num_q_heads = q_heads;
    g.block_m = block_m;
    CAPTURE(q_heads);
    CAPTURE(block_m);
    CHECK(g.decode_tile_tokens() == tokens);
    CHECK(g.tile_shape() == tokens);
  }
  w.q_lens = {0, 1};
  const std::string m = w.validate();
  CHECK(m.find("at least 1 new token per sequence") != std::string::npos);
  CHECK(m.find("sequence 0 has none") != std::string::npos);
  // Causal among the new tokens, bottom-right: token t of q sees keys up to kv - q + t, so the
  // tile's last block is masked when it holds keys the first token does not see.
  w.q_lens = {8, 1};
  w.kv_lens = {256, 100};
  w.block_n = 128;
  const TileCost c = w.tile_cost(0, 0);
  CHECK(c.kv_blocks == 2);
  CHECK(c.masked_blocks == 1);  // keys 249..255 hidden from the first tokens
  w.kv_lens = {264, 100};
  CHECK(w.tile_cost(0, 0).kv_blocks == 3);
  CHECK(w.tile_cost(0, 0).masked_blocks == 1);  // keys 257..263: the block from 256 only
}
