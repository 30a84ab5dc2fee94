// The simulator's split schedules and partial outputs: decode tiles of 1-16 new tokens (causal
// among themselves), split_kv and stream_k pieces combined to the reference, split_kv's results
// bit-identical whatever the batchmates, the combine's predicted time, decode tiles sharing the
// HBM, and partial results over explicit KV ranges that merge to the whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim_test_util.hpp"

using namespace tilesched;
using tilesched::simtest::contains;
using tilesched::simtest::Rng;

namespace {

Workload random_workload(Rng& rng, SchedulerKind kind, bool decoding) {
  Workload w;
  w.scheduler = kind;
  w.decoding = decoding;
  w.num_kv_heads = rng.uniform(1, 2);
  w.num_q_heads = w.num_kv_heads * rng.uniform(1, 3);
  w.head_dim = 16;
  w.mask = rng.uniform(0, 3) ? Mask::Causal : Mask::None;
  w.block_m = 32;
  w.block_n = 32;
  w.num_ctas = rng.uniform(1, 40);
  w.split_kv_blocks = rng.uniform(1, 4);
  const u32 batch = rng.uniform(1, 4);
  for (u32 b = 0; b < batch; ++b) {
    // A decoding batch mixes in a prefill sequence a quarter of the time (SPEC §6).
    const u32 q = !decoding           ? rng.uniform(1, 90)
                  : rng.uniform(0, 3) ? rng.uniform(1, kMaxDecodeTokens)
                                      : rng.uniform(kMaxDecodeTokens + 1, 90);
    w.q_lens.push_back(q);
    w.kv_lens.push_back(q + rng.uniform(0, 300));
  }
  return w;
}

sim::AttentionResult run(const Workload& w, const sim::AttentionInputs& in) {
  return sim::tiled_attention(w, in, sim::replay(w), 0.f, 1);
}

// Sequence b's rows of Q (or O) and K/V alone, as a batch of one would hold them.
std::vector<float> rows_of(const std::vector<float>& buf, const std::vector<u32>& offsets, u32 b,
                           std::size_t per_row) {
  return std::vector<float>(buf.begin() + std::ptrdiff_t(offsets[b] * per_row),
                            buf.begin() + std::ptrdiff_t(offsets[b + 1] * per_row));
}

// A decoding workload of 2 KV heads and `q_heads` query heads, d = 16, BN = 32.
Workload small_decode(u32 q_heads, std::vector<u32> new_tokens, std::vector<u32> keys, u32 ctas) {
  Workload w;
  w.decoding = true;
  w.num_q_heads = q_heads;
  w.num_kv_heads = 2;
  w.head_dim = 16;
  w.block_n = 32;
  w.q_lens = std::move(new_tokens);
  w.kv_lens = std::move(keys);
  w.num_ctas = ctas;
  return w;
}

}  // namespace

TEST_CASE("decoding: 1 to 16 new tokens, each seeing the keys up to its own position") {
  Workload w = small_decode(4, {5, 1, 16}, {100, 40, 16}, 3);
  REQUIRE(w.validate().empty());
  sim::AttentionInputs in = sim::make_inputs(w, 7);
  const sim::AttentionResult tiled = run(w, in);
  CHECK(tiled.problems.empty());
  const sim::AttentionResult ref = sim::reference_attention(w, in);
  CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
  CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);

  // Changing sequence 0's last key and value (position 99) changes only its last new token
  // (t = 4 sees keys up to 100 - 5 + 4 = 99): the other four rows stay bit-identical.
  const std::vector<u32> kv_off = w.kv_row_offsets();
  for (u32 h = 0; h < w.num_kv_heads; ++h)
    for (u32 c = 0; c < w.head_dim; ++c) {
      const std::size_t at = ((kv_off[0] + 99) * w.num_kv_heads + h) * w.head_dim + c;
      in.k[at] = sim::round_to_bf16(in.k[at] * -0.5f + 0.25f);
      in.v[at] = sim::round_to_bf16(in.v[at] * -0.5f + 0.25f);
    }
  const sim::AttentionResult changed = run(w, in);
  const std::size_t row = std::size_t(w.num_q_heads) * w.head_dim;
  for (u32 t = 0; t < 5; ++t) {
    const bool same = std::equal(tiled.o.begin() + t * row, tiled.o.begin() + (t + 1) * row,
                                 changed.o.begin() + t * row);
    CHECK_MESSAGE(same == (t < 4), "new token ", t);
  }
}

TEST_CASE("mixed batch: a prefill sequence in tiles of T new tokens beside decode sequences") {
  // 3 query heads per KV head: tiles of 32 new tokens at BM 128 (70 and 17 new tokens are prefill
  // chunks of 3 and 1 tiles per KV head), of 16 at BM 64 (5 and 2).
  Workload w = small_decode(6, {1, 70, 3, 17}, {100, 200, 40, 17}, 5);
  REQUIRE(w.validate().empty());
  CHECK(w.mixed());
  CHECK_FALSE(w.decode_only());
  CHECK(w.tile_shape() == 32);
  CHECK(w.valid_tile_count() == (1 + 3 + 1 + 1) * 2);
  Workload narrow = w;
  narrow.block_m = 64;
  CHECK(narrow.tile_shape() == 16);
  CHECK(narrow.valid_tile_count() == (1 + 5 + 1 + 2) * 2);
  for (Workload shape : {w, narrow}) {
    CAPTURE(shape.tile_shape());
    const sim::AttentionInputs in = sim::make_inputs(shape, 11);
    const sim::AttentionResult ref = sim::reference_attention(shape, in);
    for (const SchedulerKind kind :
         {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::LptQueued,
          SchedulerKind::Planned, SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
      CAPTURE(std::string(to_string(kind)));
      shape.scheduler = kind;
      const Trace t = sim::replay(shape);
      CHECK(t.events.size() == sim::replayed_tile_count(shape));
      const sim::AttentionResult tiled = sim::tiled_attention(shape, in, t, 0.f, 1);
      CHECK(tiled.problems.empty());
      CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
      CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);
    }
  }
}

TEST_CASE("split_kv and stream_k: prefill and decode pieces combine to the reference") {
  Rng rng(20261205);
  for (int problem = 0; problem < 120; ++problem) {
    const SchedulerKind kind = problem % 2 ? SchedulerKind::StreamK : SchedulerKind::SplitKv;
    const Workload w = random_workload(rng, kind, problem % 4 >= 2);
    REQUIRE(w.validate().empty());
    const sim::AttentionInputs in = sim::make_inputs(w, problem);
    const Trace t = sim::replay(w);
    CHECK(t.events.size() == sim::replayed_tile_count(w));
    const sim::AttentionResult tiled = sim::tiled_attention(w, in, t, 0.f, 1);
    CHECK(tiled.problems.empty());
    const sim::AttentionResult ref = sim::reference_attention(w, in);
    CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
    CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);
  }
}

TEST_CASE("split_kv: a sequence's O and LSE in a random batch are bit-identical to it alone") {
  Rng rng(20261206);
  int split = 0;
  for (int problem = 0; problem < 200; ++problem) {
    Workload batch = random_workload(rng, SchedulerKind::SplitKv, problem % 2 == 0);
    const sim::AttentionInputs in = sim::make_inputs(batch, 1000 + problem);
    const u32 b = rng.uniform(0, batch.batch_size() - 1);
    Workload alone = batch;
    alone.q_lens = {batch.q_lens[b]};
    alone.kv_lens = {batch.kv_lens[b]};
    alone.num_ctas = rng.uniform(1, 40);
    const std::vector<u32> q_off = batch.q_row_offsets(), kv_off = batch.kv_row_offsets();
    const std::size_t q_row = std::size_t(batch.num_q_heads) * batch.head_dim;
    const std::size_t kv_row = std::size_t(batch.num_kv_heads) * batch.head_dim;
    const sim::AttentionInputs alone_in{rows_of(in.q, q_off, b, q_row),
                                        rows_of(in.k, kv_off, b, kv_row),
                                        rows_of(in.v, kv_off, b, kv_row)};
    const sim::AttentionResult in_batch = run(batch, in);
    const sim::AttentionResult by_itself = run(alone, alone_in);
    CHECK(rows_of(in_batch.o, q_off, b, q_row) == by_itself.o);
    CHECK(rows_of(in_batch.lse, q_off, b, batch.num_q_heads) == by_itself.lse);
    const Trace t = sim::replay(alone);
    split += std::any_of(t.events.begin(), t.events.end(),
                         [](const TraceEvent& e) { return e.kv_block_begin != 0; });
  }
  CHECK(split > 50);  // the property is about split tiles: enough of them were
}

TEST_CASE("stream_k: within tolerance of the unsplit result") {
  Rng rng(20261207);
  for (int problem = 0; problem < 60; ++problem) {
    Workload w = random_workload(rng, SchedulerKind::StreamK, problem % 2 == 0);
    const sim::AttentionInputs in = sim::make_inputs(w, problem);
    const sim::AttentionResult streamed = run(w, in);
    w.scheduler = SchedulerKind::Tile;
    const sim::AttentionResult whole = run(w, in);
    CHECK(sim::relative_error(streamed.o, whole.o) < 1e-5);
    CHECK(sim::relative_error(streamed.lse, whole.lse) < 1e-5);
  }
}

TEST_CASE("the combine of split tiles is costed after the kernel, and only where tiles split") {
  Workload w;
  w.decoding = true;
  w.q_lens = {1, 4};
  w.kv_lens = {8192, 8192};
  w.scheduler = SchedulerKind::SplitKv;
  const Trace split = sim::replay(w);
  CHECK(split.combine_us > 0);
  double last_end = 0;
  for (const TraceEvent& e : split.events) last_end = std::max(last_end, e.end_us);
  CHECK(sim::compute_metrics(split).makespan_us == doctest::Approx(last_end + split.combine_us));
  w.scheduler = SchedulerKind::Tile;
  CHECK(sim::replay(w).combine_us == 0);
  // A trace keeps it through its file.
  const simtest::TempDir dir;
  sim::write_trace(dir.path + "/t.json", split);
  CHECK(sim::read_trace(dir.path + "/t.json").combine_us == doctest::Approx(split.combine_us));
}

TEST_CASE("the combine's time follows the tile with the most pieces, not only its bytes") {
  // One sequence of one new token over 131072 keys, 32 query / 8 KV heads at d = 128: split_kv
  // cuts each of the 8 tiles into 131072 / (128 x split_kv_blocks) pieces; stream_k cuts the 8
  // tiles' blocks over the CTAs, so each tile has about C / 8 pieces.
  Workload w;
  w.decoding = true;
  w.q_lens = {1};
  w.kv_lens = {131072};
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  w.scheduler = SchedulerKind::SplitKv;
  const Trace split_kv = sim::replay(w);
  const double pieces = 131072.0 / (w.block_n * w.split_kv_blocks);
  CHECK(split_kv.combine_us ==
        doctest::Approx(cost.cta_launch_us(w.head_dim) + cost.combine_fixed_us +
                        cost.combine_us_per_piece_one_token * pieces));
  w.scheduler = SchedulerKind::StreamK;
  const Trace stream_k = sim::replay(w);
  CHECK(stream_k.combine_us < split_kv.combine_us);
  // Verify tiles (8 new tokens) take the per-piece cost without the lane-group spread.
  w.q_lens = {8};
  w.scheduler = SchedulerKind::SplitKv;
  CHECK(sim::replay(w).combine_us ==
        doctest::Approx(cost.cta_launch_us(w.head_dim) + cost.combine_fixed_us +
                        cost.combine_us_per_piece * pieces));
}

namespace {

// `batch` sequences of one new token over `keys` keys each, 32 query / 8 KV heads at d = 128.
Workload one_token_batch(u32 batch, u32 keys) {
  Workload w;
  w.decoding = true;
  w.q_lens.assign(batch, 1);
  w.kv_lens.assign(batch, keys);
  w.num_q_heads = 32;
  w.num_kv_heads = 8;
  w.head_dim = 128;
  return w;
}

}  // namespace

TEST_CASE("the combine of many split tiles runs its loop in waves of blocks") {
  // 128 sequences of one new token over 8192 keys, 32 query / 8 KV heads at d = 128: split_kv
  // cuts each of the 1024 tiles into 8 pieces. A tile's rows (4 query heads x T = 32 rows) reach
  // both consumer warpgroups, so the combine has 2048 working blocks, 4 waves at 4 a SM.
  Workload w = one_token_batch(128, 8192);
  w.scheduler = SchedulerKind::SplitKv;
  w.split_kv_blocks = 8;
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  REQUIRE(cost.multiprocessors == 132);
  REQUIRE(cost.combine_blocks_per_sm(128) == 4);
  const double loop = cost.combine_fixed_us + cost.combine_us_per_piece_one_token * 8;
  const double waves = std::ceil(2048.0 / (132 * 4));
  CHECK(sim::replay(w).combine_us == doctest::Approx(cost.cta_launch_us(128) + waves * loop));
  // One sequence of the batch: one wave.
  w.q_lens = {1};
  w.kv_lens = {8192};
  CHECK(sim::replay(w).combine_us == doctest::Approx(cost.cta_launch_us(128) + loop));
  // One query head per KV head: T = 128 rows a head, so a one-token tile's rows sit in the first
  // warpgroup only; 1024 tiles are 1024 blocks, 2 waves.
  w.q_lens.assign(128, 1);
  w.kv_lens.assign(128, 8192);
  w.num_q_heads = 8;
  REQUIRE(w.decode_tile_tokens() == 128);
  CHECK(sim::replay(w).combine_us ==
        doctest::Approx(cost.cta_launch_us(128) + std::ceil(1024.0 / (132 * 4)) * loop));
  // Other head dims hold the combine's accumulators in more or fewer registers.
  CHECK(cost.combine_blocks_per_sm(64) == 6);
  CHECK(cost.combine_blocks_per_sm(256) == 2);
  CHECK(cost.combine_blocks_per_sm(96) == 4);
  CHECK(cost.combine_blocks_per_sm(512) == 2);
}

TEST_CASE("decode tiles share the HBM while they stream; their fixed parts take no share") {
  // 64 sequences of one new token over 8192 keys, 32 query / 8 KV heads at d = 128: 512 tiles of
  // 64 blocks (4 MiB of K and V each) on 132 CTAs, every CTA streaming at once. Alone a tile asks
  // 4 MiB over its blocks' cost, about 51 GB/s: 132 of them ask more than the H200's 4.8 TB/s.
  Workload w = one_token_batch(64, 8192);
  w.num_ctas = 132;
  w.scheduler = SchedulerKind::Tile;
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  sim::CostModel unbounded = cost;
  unbounded.hbm_bytes_per_us = 1e15;
  const sim::CostCoefficients k = cost.coefficients(w);
  const double tile_bytes = 8192.0 * 128 * 2 * 2;
  REQUIRE(132 * tile_bytes / (64 * k.us_per_block) > cost.hbm_bytes_per_us);
  // The CTAs start together: each tile's fixed part alone, then the 132 tiles' blocks at the
  // bandwidth; the last wave's 116 tiles share it among fewer.
  const double wave = k.fixed_us + 132 * tile_bytes / cost.hbm_bytes_per_us;
  const double last = k.fixed_us + 116 * tile_bytes / cost.hbm_bytes_per_us;
  const Trace t = sim::replay(w, cost);
  REQUIRE(t.events.size() == 512);
  double end = 0;
  for (const TraceEvent& e : t.events) {
    CAPTURE(e.cta);
    CAPTURE(e.step);
    CHECK(e.start_us == doctest::Approx(e.step * wave));
    CHECK(e.end_us - e.start_us == doctest::Approx(e.step == 3 ? last : wave));
    end = std::max(end, e.end_us);
  }
  CHECK(end == doctest::Approx(3 * wave + last));
  // No replay reads the caches faster than the bandwidth, whatever the schedule.
  const double bytes = 64.0 * 8 * tile_bytes;
  for (SchedulerKind kind :
       {SchedulerKind::Queued, SchedulerKind::SplitKv, SchedulerKind::StreamK}) {
    CAPTURE(to_string(kind));
    w.scheduler = kind;
    const Trace shared = sim::replay(w, cost);
    CHECK(cost.decode_stream_us(w, shared.events) ==
          doctest::Approx(bytes / cost.hbm_bytes_per_us));
    CHECK(sim::compute_metrics(shared).makespan_us >= bytes / cost.hbm_bytes_per_us);
    CHECK(sim::compute_metrics(sim::replay(w, unbounded)).makespan_us <
          bytes / cost.hbm_bytes_per_us);
  }
  // One sequence on 8 CTAs (one tile per KV head) asks far less than the bandwidth: each tile
  // takes its cost alone.
  w.scheduler = SchedulerKind::Tile;
  w.q_lens = {1};
  w.kv_lens = {131072};
  const Trace alone = sim::replay(w, cost), alone_free = sim::replay(w, unbounded);
  REQUIRE(alone.events.size() == alone_free.events.size());
  for (std::size_t i = 0; i < alone.events.size(); ++i)
    CHECK(alone.events[i].end_us == doctest::Approx(alone_free.events[i].end_us));
  // Prefill reads K and V through the L2 many times over: it streams nothing.
  w.decoding = false;
  w.q_lens = {4096};
  w.kv_lens = {4096};
  const Trace prefill = sim::replay(w, cost), prefill_free = sim::replay(w, unbounded);
  CHECK(cost.decode_stream_us(w, prefill.events) == 0);
  REQUIRE(prefill.events.size() == prefill_free.events.size());
  for (std::size_t i = 0; i < prefill.events.size(); ++i)
    CHECK(prefill.events[i].end_us == prefill_free.events[i].end_us);
  // A mixed batch streams its decode sequences' caches only.
  w.decoding = true;
  w.q_lens = {300, 1};
  w.kv_lens = {1000, 1000};
  const Trace mixed = sim::replay(w, cost);
  CHECK(cost.decode_stream_us(w, mixed.events) ==
        doctest::Approx(1000.0 * 8 * 128 * 4 / cost.hbm_bytes_per_us));
}

TEST_CASE("partial outputs over two KV ranges merge to the whole") {
  Rng rng(20261208);
  for (int problem = 0; problem < 60; ++problem) {
    const Workload w = random_workload(rng, SchedulerKind::Tile, problem % 2 == 0);
    const sim::AttentionInputs in = sim::make_inputs(w, problem);
    std::vector<sim::KvRange> first, second, all;
    for (u32 b = 0; b < w.batch_size(); ++b) {
      const u32 cut = rng.uniform(0, w.key_len(b));  // any key, not only a block boundary
      first.push_back({0, cut});
      second.push_back({cut, w.key_len(b)});
      all.push_back({0, w.key_len(b)});
    }
    const sim::PartialAttention a = sim::partial_attention(w, in, first);
    const sim::PartialAttention b = sim::partial_attention(w, in, second);
    const sim::PartialAttention merged = sim::merge_partials({a, b}, w.head_dim);
    const sim::AttentionResult ref = sim::reference_attention(w, in);
    CHECK(sim::relative_error(merged.o, ref.o) < 1e-5);
    CHECK(sim::relative_error(merged.lse, ref.lse) < 1e-5);
    // One range over all keys is the whole, as the tiled kernel computes it.
    const sim::PartialAttention whole = sim::partial_attention(w, in, all);
    CHECK(sim::relative_error(whole.o, ref.o) < 1e-5);
  }
}

TEST_CASE("partial outputs: a row that sees no key of its range is O 0 and LSE -inf") {
  Workload w;
  w.q_lens = {4};
  w.kv_lens = {10};
  w.head_dim = 8;
  w.num_q_heads = w.num_kv_heads = 1;
  const sim::AttentionInputs in = sim::make_inputs(w, 3);
  // Keys [8, 10): row 0 sees keys up to 6, row 1 up to 7, so neither sees any of them.
  const sim::PartialAttention p = sim::partial_attention(w, in, {{8, 10}});
  CHECK(std::isinf(p.lse[0]));
  CHECK(p.lse[0] < 0);
  CHECK(std::isinf(p.lse[1]));
  CHECK(std::isfinite(p.lse[2]));
  CHECK(std::all_of(p.o.begin(), p.o.begin() + 16, [](float x) { return x == 0; }));
  CHECK(contains(simtest::invalid_argument_text([&] {
                   sim::partial_attention(w, in, {{3, 11}});
                 }),
                 "sequence 0 has 10 keys"));
  CHECK(contains(simtest::invalid_argument_text([&] {
                   sim::merge_partials({p, {}}, 8);
                 }),
                 "part 1"));
}
