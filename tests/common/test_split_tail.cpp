// split_tail (common/split_tail.hpp): over seeded random uniform problems, every KV block of every
// tile is handed out exactly once, the full waves follow the tile scheduler's stride, the tail's
// ranges are even, and split_of names each piece's siblings and slots consistently.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "random_problem.hpp"
#include "scheduler_walk.hpp"
#include "tilesched/any_scheduler.hpp"
#include "tilesched/workload.hpp"

using namespace tilesched;

namespace {

struct Piece {
  u32 cta, idx, begin, end;
};

// Every CTA's walk, in order.
std::vector<Piece> walk(const Workload& w, const runtime::SplitTailScheduler& s) {
  const std::vector<u32> offsets = w.q_row_offsets();
  const TileSummary summary = w.summary(offsets.data());
  std::vector<Piece> out;
  u32 sidx[2] = {0, 0};
  const GridDim g = s.grid_dim(summary);
  for (u32 c = 0; c < g.x; ++c) {
    TileState st = s.initial_state(sidx, summary, BlockIndex{c, 0, 0});
    for (auto si = s.first_work(summary, st); si; si = s.advance(summary, st)) {
      const u32 nb = w.split_tail_tile_blocks();
      out.push_back({c, st.idx, si->kv_block_begin, std::min(si->kv_block_end, nb)});
    }
  }
  return out;
}

Workload uniform(u32 batch, u32 seq, u32 kv, u32 heads, u32 bm, u32 bn, u32 ctas) {
  Workload w;
  w.q_lens.assign(batch, seq);
  w.kv_lens.assign(batch, kv);
  w.padded = true;
  w.num_q_heads = w.num_kv_heads = heads;
  w.mask = Mask::None;
  w.block_m = bm;
  w.block_n = bn;
  w.num_ctas = ctas;
  w.scheduler = SchedulerKind::SplitTail;
  return w;
}

}  // namespace

TEST_CASE("split_tail: d = 128 at 16k tokens: 15 full waves, the tail's 68 tiles over 132 CTAs") {
  const Workload w = uniform(2, 8192, 8192, 16, 128, 128, 132);
  REQUIRE(w.validate().empty());
  const runtime::SplitTailScheduler s(w.mapping(), 132, 2048, 64);
  CHECK(s.full_tiles == 1980);
  CHECK(s.tail_tiles() == 68);
  CHECK(s.range == 33);  // ceil(68 * 64 / 132)
  const std::vector<Piece> pieces = walk(w, s);
  std::map<u32, u32> blocks_per_cta;
  for (const Piece& p : pieces) blocks_per_cta[p.cta] += p.end - p.begin;
  // Every CTA: 15 whole tiles (960 blocks) and 33 tail blocks, the last CTA 29.
  for (u32 c = 0; c + 1 < 132; ++c) CHECK(blocks_per_cta[c] == 15 * 64 + 33);
  CHECK(blocks_per_cta[131] == 15 * 64 + 68 * 64 - 131 * 33);
  // A full-wave step is the tile scheduler's stride.
  CHECK(pieces[0].idx == 0);
  CHECK(pieces[1].idx == 132);
  CHECK(s.work_items() == pieces.size());
}

TEST_CASE("split_tail: every KV block of every tile exactly once, pieces and slots consistent") {
  tilesched::testing::SplitMix64 rng(20261201);
  for (int problem = 0; problem < 2000; ++problem) {
    const u32 batch = 1 + rng.next() % 3, heads = 1 + rng.next() % 6;
    const u32 bm = (rng.next() % 2) ? 64 : 128, bn = (rng.next() % 2) ? 80 : 128;
    const u32 seq = 1 + rng.next() % 1500, kv = seq + rng.next() % 700;
    const u32 ctas = 1 + rng.next() % 40;
    const Workload w = uniform(batch, seq, kv, heads, bm, bn, ctas);
    REQUIRE(w.validate().empty());
    const u32 n = static_cast<u32>(w.valid_tile_count()), nb = w.split_tail_tile_blocks();
    u32 counter = 0;
    const runtime::AnyScheduler any = with_scheduler(
        w, AtomicCounter{&counter}, [](const auto& sc) { return runtime::AnyScheduler(sc); });
    REQUIRE(any.kind == SchedulerKind::SplitTail);
    const runtime::SplitTailScheduler& s = any.split_tail;
    const std::vector<Piece> pieces = walk(w, s);
    CHECK(s.work_items() == pieces.size());
    // Coverage: each tile's blocks [0, nb) exactly once.
    std::map<u32, std::vector<std::pair<u32, u32>>> by_tile;
    std::set<u32> slots;
    for (const Piece& p : pieces) {
      REQUIRE(p.idx < n);
      REQUIRE(p.begin < p.end);
      by_tile[p.idx].push_back({p.begin, p.end});
      const SplitPiece sp = s.split_of(p.idx, p.begin);
      if (p.idx < s.full_tiles) {
        CHECK(!sp.is_split());
        CHECK(p.cta == p.idx % ctas);
        continue;
      }
      // A piece covers its whole tile exactly when its tile is not split.
      CHECK(sp.is_split() == (p.end - p.begin < nb));
      if (!sp.is_split()) continue;
      CHECK(sp.tail_tile == p.idx - s.full_tiles);
      CHECK(sp.rank < sp.pieces);
      CHECK(sp.first_slot + sp.rank < s.piece_slots());
      CHECK(slots.insert(sp.first_slot + sp.rank).second);  // no two pieces share a slot
    }
    REQUIRE(by_tile.size() == n);
    std::set<u32> split_tiles;
    for (auto& [idx, ranges] : by_tile) {
      tilesched::testing::check_blocks_once(ranges, nb);
      if (ranges.size() > 1) {
        split_tiles.insert(idx);
        CHECK(s.split_of(idx, ranges[0].first).pieces == ranges.size());
        for (std::size_t k = 0; k < ranges.size(); ++k)
          CHECK(s.split_of(idx, ranges[k].first).rank == k);
      }
    }
    // The combine's enumeration: the tail's tiles, which hold every split tile; the others are
    // one piece each.
    std::set<u32> listed;
    for (u32 i = 0; i < s.split_tile_count(); ++i) {
      listed.insert(s.split_tile(i));
      if (!split_tiles.count(s.split_tile(i))) CHECK(!s.split_of(s.split_tile(i), 0).is_split());
    }
    CHECK(listed.size() == n - s.full_tiles);
    for (const u32 idx : split_tiles) CHECK(listed.count(idx) == 1);
    // The tail is even: no CTA has more than W tail blocks.
    std::map<u32, u32> tail;
    for (const Piece& p : pieces)
      if (p.idx >= s.full_tiles) tail[p.cta] += p.end - p.begin;
    for (const auto& [c, b] : tail) CHECK(b <= s.range);
  }
}

TEST_CASE("split_tail refuses tiles of different costs, with a sentence naming why") {
  Workload w = uniform(2, 1024, 1024, 4, 128, 128, 8);
  w.mask = Mask::Causal;
  CHECK(w.validate().find("split_tail needs mask none") != std::string::npos);
  w = uniform(2, 1024, 1024, 4, 128, 128, 8);
  w.padded = false;
  w.q_lens = {1024, 512};
  w.kv_lens = {1024, 512};
  CHECK(w.validate().find("one query length and one key length") != std::string::npos);
  w = uniform(2, 1024, 1024, 4, 128, 128, 8);
  w.decoding = true;
  w.q_lens = {1, 1};
  CHECK(w.validate().find("decoding") != std::string::npos);
}
