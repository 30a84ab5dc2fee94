// Per-tile geometry (SPEC §7) on hand-computed cases: rows and keys in padded and ragged layouts,
// the keys a tile sees under the mask, and its KV-block counts.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "tilesched/geometry.hpp"
#include "tilesched/scheduler.hpp"

using namespace tilesched;

TEST_CASE("no mask: every tile processes ceil(num_keys / BN) blocks") {
  const TileCost c = tile_cost(0, 128, 1000, 1000, 128, 128, Mask::None);
  CHECK(c.kv_blocks == 8);      // ceil(1000 / 128)
  CHECK(c.masked_blocks == 1);  // the tail block [896, 1024) is partial
  CHECK(tile_cost(0, 128, 1024, 1024, 128, 128, Mask::None).masked_blocks == 0);
  CHECK(tile_cost(0, 0, 1024, 1024, 128, 128, Mask::None).kv_blocks == 0);  // a tile with no rows
}

TEST_CASE("causal, square: blocks up to the diagonal, one of them partial") {
  // Rows [256, 384) of a 1024-long sequence see keys [0, 384): blocks 0..2, block 2 crosses.
  const TileCost c = tile_cost(256, 128, 1024, 1024, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 3);
  CHECK(c.masked_blocks == 1);
  // The first tile: one block, on the diagonal.
  CHECK(tile_cost(0, 128, 1024, 1024, 128, 128, Mask::Causal).kv_blocks == 1);
  // BN = 64: rows [256, 384) → keys < 384 → 6 blocks; keys ≤ 256 seen by all rows → 4 full.
  const TileCost n64 = tile_cost(256, 128, 1024, 1024, 128, 64, Mask::Causal);
  CHECK(n64.kv_blocks == 6);
  CHECK(n64.masked_blocks == 2);
}

TEST_CASE("causal, bottom-right aligned with a cached prefix") {
  // 100 query rows after a 900-key prefix: the tile's first row sits at key position 900.
  const TileCost c = tile_cost(0, 100, 100, 1000, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 8);      // ceil(min(1000, 900 + 128) / 128)
  CHECK(c.masked_blocks == 1);  // keys ≤ 900 seen by all: 7 full blocks
}

TEST_CASE("causal, last partial tile of a ragged sequence") {
  // Sequence of 300 rows, tile at offset 256 with 44 rows: keys < 300 → 3 blocks.
  const TileCost c = tile_cost(256, 44, 300, 300, 128, 128, Mask::Causal);
  CHECK(c.kv_blocks == 3);
  CHECK(c.masked_blocks == 1);
}

TEST_CASE("row layouts: ragged at the offsets, padded at b * padded_len") {
  const std::vector<u32> offsets = {0, 300, 310, 310, 500};
  const RowLayout ragged{offsets.data(), 0};
  CHECK(ragged.start(1) == 300);
  CHECK(ragged.sequence(1).length == 10);
  CHECK(ragged.sequence(2).length == 0);  // an empty sequence
  CHECK(ragged.sequence(3).start == 310);
  CHECK(ragged.sequence(3).length == 190);
  const RowLayout padded{nullptr, 200};
  CHECK(padded.start(3) == 600);
  CHECK(padded.sequence(3).length == 200);
}

TEST_CASE("tile rows: at most BM, none past the sequence's end, placed by the layout") {
  const std::vector<u32> offsets = {0, 300, 310};
  const TileSummary ragged = TileSummary::make(2, 300, 128, offsets.data());
  SeqInfo s = ragged.seq_info(WorkInfo{256, 0, 0, true});
  TileRows r = tile_rows(ragged.query_layout(), s, 128);
  CHECK(r.first_query_row == 256);
  CHECK(r.query_rows == 44);  // the sequence's last 44 rows
  s = ragged.seq_info(WorkInfo{0, 0, 1, true});
  r = tile_rows(ragged.query_layout(), s, 128);
  CHECK(r.first_query_row == 300);
  CHECK(r.query_rows == 10);
  s = ragged.seq_info(WorkInfo{128, 0, 1, true});
  CHECK(tile_rows(ragged.query_layout(), s, 128).query_rows == 0);
  CHECK(faithful_query_rows(s, 128) == 128);  // upstream's wrap (SPEC §5)
  // A padded batch: the SeqInfo says start_of_seq 0 (as upstream's), the rows lie at b * S_max.
  const TileSummary padded = TileSummary::make(3, 200, 128);
  s = padded.seq_info(WorkInfo{128, 1, 2, true});
  CHECK(s.start_of_seq == 0);
  r = tile_rows(padded.query_layout(), s, 128);
  CHECK(r.first_query_row == 2 * 200 + 128);
  CHECK(r.query_rows == 72);
  CHECK(tile_first_row(padded.query_layout(), 2, 128) == r.first_query_row);
  CHECK(owning_tile_offset(199, 128) == 128);
  CHECK(owning_tile_offset(127, 128) == 0);
}

TEST_CASE("visible keys: all without a mask, bottom-right aligned diagonal with one") {
  CHECK(visible_key_end(0, 128, 100, 1000, Mask::None) == 1000);
  CHECK(visible_key_end(0, 1, 100, 1000, Mask::Causal) == 901);  // row 0 sees keys 0..900
  CHECK(visible_key_end(0, 100, 100, 1000, Mask::Causal) == 1000);
  CHECK(visible_key_end(10, 5, 300, 300, Mask::Causal) == 15);
  CHECK(visible_key_end(290, 128, 300, 300, Mask::Causal) == 300);  // clamped to the keys
}

namespace {
// Every field in one line, so a failure shows them all.
std::string show(const TileGeometry& g) {
  return fmt::format("rows {}+{} of {}, keys {}+{}, {} kv blocks, processing {}..{}",
                     g.rows.first_query_row, g.rows.query_rows, g.seq_len, g.kv_start, g.kv_len,
                     g.kv_blocks, g.kv_block_begin, g.kv_block_end);
}
void check_geometry(const TileGeometry& g, const TileGeometry& want) {
  CHECK(show(g) == show(want));
}
}  // namespace

TEST_CASE("tile geometry: query rows, the sequence's keys and the KV blocks, padded and ragged") {
  // Ragged: q_lens {300, 10}, kv_lens {300, 500} (a cached prefix for sequence 1).
  const std::vector<u32> q_off = {0, 300, 310}, kv_off = {0, 300, 800};
  const TileSummary summary = TileSummary::make(2, 300, 128, q_off.data());
  const RowLayout keys{kv_off.data(), 0};
  auto ragged = [&](u32 offset, u32 prompt) {
    return tile_geometry(summary.query_layout(), keys,
                         summary.seq_info(WorkInfo{offset, 0, prompt, true}), 128, 64,
                         Mask::Causal);
  };
  // Sequence 1's only tile sees every key: ceil(500 / 64) blocks.
  check_geometry(ragged(0, 1), TileGeometry{{300, 10}, 10, 300, 500, 8, 0, 8});
  // Rows 128..255 of sequence 0 see keys < 256.
  check_geometry(ragged(128, 0), TileGeometry{{128, 128}, 300, 0, 300, 4, 0, 4});
  // Padded: 2 x 200 query rows, 2 x 700 keys at b * 700, no mask.
  const TileSummary pad = TileSummary::make(2, 200, 128);
  check_geometry(tile_geometry(pad.query_layout(), RowLayout{nullptr, 700},
                               pad.seq_info(WorkInfo{128, 3, 1, true}), 128, 128, Mask::None),
                 TileGeometry{{328, 72}, 200, 700, 700, 6, 0, 6});
}

TEST_CASE("a piece's geometry clamps its block range, and its cost counts its own masked blocks") {
  const TileSummary pad = TileSummary::make(2, 200, 128);
  SeqInfo s = pad.seq_info(WorkInfo{0, 0, 0, true});
  s.kv_block_begin = 2;
  s.kv_block_end = 9;  // past the tile's 6 blocks: clamped
  const TileGeometry g =
      tile_geometry(pad.query_layout(), RowLayout{nullptr, 700}, s, 128, 128, Mask::None);
  CHECK(g.kv_blocks == 6);
  CHECK(g.kv_block_begin == 2);
  CHECK(g.kv_block_end == 6);
  CHECK(g.piece_blocks() == 4);
  // 700 keys in blocks of 128: the last of 6 is partial (masked).
  const TileCost whole{6, 1};
  CHECK(piece_cost(whole, 0, 3).kv_blocks == 3);
  CHECK(piece_cost(whole, 0, 3).masked_blocks == 0);
  CHECK(piece_cost(whole, 4, 6).masked_blocks == 1);
  CHECK(piece_cost(whole, 5, 99).kv_blocks == 1);
  CHECK(piece_cost(whole, 7, 9).kv_blocks == 0);
}

TEST_CASE("the transient scheduler's index is the inverse map's (linear_index)") {
  const TileSummary summary = TileSummary::make(3, 300, 64);  // T = 5
  for (bool flip : {false, true}) {
    const runtime::TransientScheduler sched(TileMapping{64, 4, Schedule::PromptRotate}, flip);
    for (u32 z = 0; z < 3; ++z)
      for (u32 y = 0; y < 4; ++y)
        for (u32 x = 0; x < 5; ++x) {
          const TileState st = sched.initial_state(nullptr, summary, BlockIndex{x, y, z});
          const WorkInfo w = sched.get_current_work_info(summary, st);
          CHECK(w.prompt_offset == (flip ? 4 - x : x) * 64);
          CHECK(w.head_idx == y);
          CHECK(w.prompt_idx == z);
          CHECK(summary.linear_index(sched.mapping, w.prompt_offset, y, z) == st.idx);
        }
  }
}

TEST_CASE("paged K/V blocks: the TMA boxes a block is loaded in") {
  // No pages, or pages of whole blocks: one copy per block.
  CHECK(page_rows(0, 128) == 0);
  CHECK(kv_block_boxes(0, 128) == 1);
  CHECK(page_rows(256, 128) == 0);
  CHECK(kv_block_boxes(128, 128) == 1);
  CHECK(kv_block_boxes(256, 64) == 1);
  // Other pages: boxes of gcd(page_size, BN) keys, each inside one page, tiling the block.
  CHECK(page_rows(16, 128) == 16);
  CHECK(kv_block_boxes(16, 128) == 8);
  CHECK(kv_block_boxes(1, 128) == 128);
  CHECK(kv_block_boxes(3, 128) == 128);
  CHECK(page_rows(96, 128) == 32);
  CHECK(kv_block_boxes(96, 128) == 4);
  CHECK(kv_block_boxes(64, 80) == 5);   // d = 256's BN 80: boxes of 16 keys
  CHECK(kv_block_boxes(200, 80) == 2);  // boxes of 40 keys
}
