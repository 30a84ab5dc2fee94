// Tiled attention (following a trace) against the naive reference, bf16 inputs, and the coverage
// detector (double writes, gaps, faithful-mode overwrites).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;

namespace {

Workload small_workload(std::vector<u32> q_lens, u32 hq, u32 hk, Mask mask) {
  Workload w;
  w.q_lens = std::move(q_lens);
  w.num_q_heads = hq;
  w.num_kv_heads = hk;
  w.head_dim = 16;
  w.mask = mask;
  w.block_m = 32;  // lengths below are deliberately not multiples of BM or BN
  w.block_n = 24;
  w.num_ctas = 5;
  return w;
}

bool has_problem(const sim::AttentionResult& r, sim::CoverageProblem::Kind kind,
                 const std::string& text) {
  for (const auto& p : r.problems)
    if (p.kind == kind && contains(p.message(), text)) return true;
  return false;
}

std::string all_problems(const sim::AttentionResult& r) {
  std::string s;
  for (const auto& p : r.problems) s += p.message() + "\n";
  return s;
}

}  // namespace

TEST_CASE("bf16 rounding is round-to-nearest-even") {
  CHECK(sim::float_to_bf16_bits(1.0f) == 0x3F80);
  // 1 + 2^-8 is exactly half-way between bf16 1.0 and 1.0078125: ties go to even (1.0).
  CHECK(sim::round_to_bf16(1.0f + 1.0f / 256) == 1.0f);
  // 1 + 3 * 2^-8 is half-way between 1.0078125 (odd) and 1.015625 (even): rounds up.
  CHECK(sim::round_to_bf16(1.0f + 3.0f / 256) == 1.015625f);
  CHECK(sim::round_to_bf16(1.0f + 1.0f / 256 + 1.0f / 65536) == 1.0078125f);
  CHECK(sim::round_to_bf16(-2.5f) == -2.5f);
  CHECK(std::isnan(sim::round_to_bf16(NAN)));
  CHECK(sim::to_bf16_bits({1.0f, -2.0f}) == std::vector<std::uint16_t>{0x3F80, 0xC000});
}

TEST_CASE("make_inputs: bf16 values in [-1, 1], layout sizes, deterministic per seed") {
  const Workload w = small_workload({5, 0, 7}, 4, 2, Mask::Causal);
  const sim::AttentionInputs a = sim::make_inputs(w, 42), b = sim::make_inputs(w, 42);
  const sim::AttentionInputs c = sim::make_inputs(w, 43);
  CHECK(a.q.size() == 12u * 4 * 16);
  CHECK(a.k.size() == 12u * 2 * 16);
  CHECK(a.v.size() == a.k.size());
  CHECK(a.q == b.q);
  CHECK(a.v == b.v);
  CHECK(a.q != c.q);
  for (float x : a.q) {
    CHECK(x >= -1.0f);
    CHECK(x <= 1.0f);
    CHECK(sim::round_to_bf16(x) == x);
  }
  // Pinned first values: the stream must not change across platforms or releases.
  CHECK(a.q[0] == sim::round_to_bf16(a.q[0]));
  const auto bits = sim::to_bf16_bits({a.q[0], a.q[1]});
  CHECK(sim::bf16_bits_to_float(bits[0]) == a.q[0]);
}

TEST_CASE("reference attention matches a hand-computed case") {
  // One query, two keys, d = 1, scale 1: weights e^0 and e^1 over values 1 and 3.
  Workload w;
  w.q_lens = {1};
  w.kv_lens = {2};
  w.num_q_heads = w.num_kv_heads = 1;
  w.head_dim = 1;
  w.mask = Mask::None;
  w.num_ctas = 1;
  sim::AttentionInputs in;
  in.q = {1.0f};
  in.k = {0.0f, 1.0f};
  in.v = {1.0f, 3.0f};
  const double e = std::exp(1.0);
  const auto ref = sim::reference_attention(w, in, 1.0f);
  CHECK(ref.o[0] == doctest::Approx((1 + 3 * e) / (1 + e)));
  CHECK(ref.lse[0] == doctest::Approx(std::log(1 + e)));
  const auto tiled = sim::tiled_attention(w, in, sim::replay(w), 1.0f);
  CHECK(tiled.o[0] == doctest::Approx((1 + 3 * e) / (1 + e)));
  CHECK(tiled.lse[0] == doctest::Approx(std::log(1 + e)));
  // Causal with one query and two keys (bottom-right aligned): the query sees both keys.
  w.mask = Mask::Causal;
  CHECK(sim::reference_attention(w, in, 1.0f).o[0] == doctest::Approx((1 + 3 * e) / (1 + e)));
  // Two queries over two keys, causal: row 0 sees key 0 only, so O = v0 and LSE = q0 * k0.
  w.q_lens = {2};
  in.q = {1.0f, 1.0f};
  const auto two = sim::reference_attention(w, in, 1.0f);
  CHECK(two.o[0] == doctest::Approx(1.0));
  CHECK(two.lse[0] == doctest::Approx(0.0));
  CHECK(sim::tiled_attention(w, in, sim::replay(w), 1.0f).o[0] == doctest::Approx(1.0));
}

TEST_CASE("tiled attention equals the naive reference on random ragged problems") {
  struct Shape {
    std::vector<u32> q, kv;
    u32 hq, hk;
    Mask mask;
    bool padded;
  };
  const std::vector<Shape> shapes = {
      {{1, 0, 37, 130, 64, 5}, {}, 2, 2, Mask::None, false},         // MHA, length 1 and 0
      {{1, 0, 37, 130, 64, 5}, {}, 4, 1, Mask::Causal, false},       // GQA 4
      {{50, 3, 0, 97}, {80, 3, 0, 200}, 4, 4, Mask::Causal, false},  // cached prefix keys
      {{70, 70, 70}, {}, 8, 2, Mask::Causal, true},                  // padded batch
      {{70, 70}, {100, 100}, 2, 1, Mask::None, true},                // padded, more keys than rows
  };
  const std::vector<std::pair<SchedulerKind, Schedule>> strategies = {
      {SchedulerKind::Tile, Schedule::Default},
      {SchedulerKind::Tile, Schedule::PromptRotate},
      {SchedulerKind::Queued, Schedule::Default},
      {SchedulerKind::Transient, Schedule::Default},
      {SchedulerKind::Lpt, Schedule::Default},
      {SchedulerKind::LptQueued, Schedule::Default},
      {SchedulerKind::Planned, Schedule::Default},
      {SchedulerKind::RaggedQueued, Schedule::PromptRotate}};
  std::uint64_t seed = 1;
  for (const Shape& s : shapes) {
    Workload w = small_workload(s.q, s.hq, s.hk, s.mask);
    w.kv_lens = s.kv;
    w.padded = s.padded;
    REQUIRE_MESSAGE(w.validate().empty(), w.validate());
    const sim::AttentionInputs in = sim::make_inputs(w, seed++);
    const auto ref = sim::reference_attention(w, in);
    for (const auto& [kind, schedule] : strategies) {
      w.scheduler = kind;
      w.schedule = schedule;
      CAPTURE(strategy_name(w));
      CAPTURE(seed);
      const Trace t = sim::replay(w);
      const auto tiled = sim::tiled_attention(w, in, t, 0.f, 2);
      CHECK_MESSAGE(tiled.problems.empty(), all_problems(tiled));
      for (std::uint32_t n : tiled.row_writes) REQUIRE(n == 1);
      CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
      CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);
      for (const TraceEvent& e : t.events) {
        const sim::TileError te = sim::tile_error(w, e, tiled.o, tiled.lse, ref.o, ref.lse);
        CHECK(te.o_rel < 1e-5);
        CHECK(te.lse_rel < 1e-5);
        CHECK_FALSE(te.has_nan);
        CHECK(te.rows == e.query_rows);
      }
    }
  }
}

TEST_CASE("tiled attention equals the reference on random shapes and strategies") {
  Rng rng(2026);
  for (int iter = 0; iter < 40; ++iter) {
    Workload w;
    const u32 b = rng.uniform(1, 4);
    for (u32 i = 0; i < b; ++i) {
      const u32 kind = rng.uniform(0, 5);  // favour the edge lengths 0 and 1
      w.q_lens.push_back(kind == 0 ? 0 : kind == 1 ? 1 : rng.uniform(2, 90));
    }
    if (w.max_seq_len() == 0) w.q_lens[0] = 1;
    w.mask = rng.uniform(0, 1) ? Mask::Causal : Mask::None;
    if (rng.uniform(0, 1))
      for (u32 q : w.q_lens) w.kv_lens.push_back(q + (q ? rng.uniform(0, 40) : 0));
    w.num_kv_heads = rng.uniform(1, 2);
    w.num_q_heads = w.num_kv_heads * (rng.uniform(0, 1) ? 1 : 4);
    w.head_dim = rng.uniform(1, 3) * 8;
    w.block_m = rng.uniform(1, 40);
    w.block_n = rng.uniform(1, 40);
    w.num_ctas = rng.uniform(1, 12);
    w.scheduler = SchedulerKind(rng.uniform(0, 6));  // every kind, the planned ones included
    w.schedule = rng.uniform(0, 1) ? Schedule::PromptRotate : Schedule::Default;
    REQUIRE_MESSAGE(w.validate().empty(), w.validate());
    CAPTURE(iter);
    CAPTURE(sim::workload_to_json(w).dump());
    const auto in = sim::make_inputs(w, std::uint64_t(iter) + 100);
    const auto ref = sim::reference_attention(w, in);
    const auto tiled = sim::tiled_attention(w, in, sim::replay(w));
    CHECK_MESSAGE(tiled.problems.empty(), all_problems(tiled));
    CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
    CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);
  }
}

TEST_CASE("one thread and two threads give bit-identical output") {
  const Workload w = small_workload({200, 33, 150}, 4, 2, Mask::Causal);
  const auto in = sim::make_inputs(w, 5);
  const Trace t = sim::replay(w);
  CHECK(sim::tiled_attention(w, in, t, 0.f, 1).o == sim::tiled_attention(w, in, t, 0.f, 2).o);
}

TEST_CASE("attention reports its progress up to the whole: tiles, then (row, head) outputs") {
  const Workload w = small_workload({200, 33, 150}, 4, 2, Mask::Causal);
  const auto in = sim::make_inputs(w, 5);
  const Trace t = sim::replay(w);
  std::mutex mutex;  // called from the worker threads
  std::size_t calls = 0, last_total = 0, most_done = 0;
  const sim::AttentionProgress progress = [&](std::size_t done, std::size_t total) {
    const std::lock_guard<std::mutex> lock(mutex);
    ++calls;
    last_total = total;
    most_done = std::max(most_done, done);
  };
  sim::tiled_attention(w, in, t, 0.f, 2, progress);
  CHECK(calls == t.events.size());
  CHECK(last_total == t.events.size());
  CHECK(most_done == t.events.size());

  calls = last_total = most_done = 0;
  sim::reference_attention(w, in, 0.f, progress);
  CHECK(calls == 3 * 4);  // one per (sequence, query head)
  CHECK(last_total == (200 + 33 + 150) * 4);
  CHECK(most_done == last_total);
}

TEST_CASE("coverage detector: a duplicated event is a double write naming tile and CTA") {
  const Workload w = small_workload({40, 90}, 2, 1, Mask::Causal);
  const auto in = sim::make_inputs(w, 3);
  Trace t = sim::replay(w);
  REQUIRE(t.events.size() > 3);
  const TraceEvent dup = t.events[2];
  t.events.push_back(dup);
  const auto r = sim::tiled_attention(w, in, t);
  const std::string tile = fmt::format("{} on CTA {}", sim::describe_tile(dup), dup.cta);
  CHECK_MESSAGE(has_problem(r, sim::CoverageProblem::Kind::DoubleWrite, tile), all_problems(r));
  REQUIRE(r.problems.size() == 1);  // consecutive rows of one tile are one problem
  CHECK(r.problems[0].row_count == dup.query_rows);
  CHECK(r.row_writes[std::size_t(sim::event_first_row(w, dup)) * 2 + dup.head_idx] == 2);
}

TEST_CASE("coverage detector: a dropped event is a gap naming the tile; error shows NaN") {
  const Workload w = small_workload({40, 90}, 2, 1, Mask::Causal);
  const auto in = sim::make_inputs(w, 3);
  Trace t = sim::replay(w);
  const TraceEvent dropped = t.events[1];
  t.events.erase(t.events.begin() + 1);
  const auto r = sim::tiled_attention(w, in, t);
  const std::string tile = sim::describe_tile(dropped);
  CHECK_MESSAGE(has_problem(r, sim::CoverageProblem::Kind::Gap, tile), all_problems(r));
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].row == sim::event_first_row(w, dropped));
  CHECK(r.problems[0].row_count == dropped.query_rows);
  const auto ref = sim::reference_attention(w, in);
  CHECK(std::isnan(sim::relative_error(r.o, ref.o)));
  CHECK(sim::tile_error(w, dropped, r.o, r.lse, ref.o, ref.lse).has_nan);
}

TEST_CASE("faithful mode on a ragged batch shows upstream's overwrite") {
  // q_lens {200, 40, 100}, BM = 32: T = 7, so sequence 1 (rows 200..239) owns five tiles that
  // start past its end. Upstream processes them with BM rows each: over sequence 2's rows
  // (240..339) and past the end of the buffer. With 8 CTAs the extra tile (prompt 1, head 0,
  // offset 128) on CTA 2 lands after sequence 2's own tile for rows 336..339, so its wrong values
  // stay in the output. Which write lands last is a race on the device; here a tile takes one
  // microsecond per KV block (the extra tile ends at 12 us, sequence 2's at 11), a timing of the
  // test's own that a refitted table cannot reorder.
  Workload w = small_workload({200, 40, 100}, 2, 1, Mask::Causal);
  w.num_ctas = 8;
  w.ragged_mode = RaggedMode::Faithful;
  const auto in = sim::make_inputs(w, 11);
  const sim::CostModel cost = flat_cost(0, 1, 1);
  const Trace t = sim::replay(w, cost);
  const auto end_of_tile = [&](u32 prompt, u32 offset) {
    for (const TraceEvent& e : t.events)
      if (e.prompt_idx == prompt && e.head_idx == 0 && e.prompt_offset == offset) return e.end_us;
    return -1.0;
  };
  REQUIRE(end_of_tile(1, 128) > end_of_tile(2, 96));
  const auto r = sim::tiled_attention(w, in, t);
  INFO(all_problems(r));
  CHECK(has_problem(r, sim::CoverageProblem::Kind::OutsideSequence,
                    "tile (prompt 1, head 1, offset 64) on CTA 7 wrote rows 264..295"));
  CHECK(has_problem(r, sim::CoverageProblem::Kind::DoubleWrite,
                    "rows 336..339 of head 0 written again by tile (prompt 1, head 0, "
                    "offset 128) on CTA 2"));
  CHECK(has_problem(r, sim::CoverageProblem::Kind::PastEnd,
                    "tile (prompt 2, head 0, offset 128) on CTA 0 would write rows 368..399"));
  const auto ref = sim::reference_attention(w, in);
  CHECK(sim::relative_error(r.o, ref.o) > 1e-3);
  // The damage is in sequence 2's last tile of head 0, which the GPU tests would flag.
  bool flagged = false;
  for (const TraceEvent& e : t.events)
    if (e.prompt_idx == 2 && e.head_idx == 0 && e.prompt_offset == 96)
      flagged = sim::tile_error(w, e, r.o, r.lse, ref.o, ref.lse).o_rel > 1e-2;
  CHECK(flagged);
  // Safe mode on the same batch is clean.
  w.ragged_mode = RaggedMode::Safe;
  const auto safe = sim::tiled_attention(w, in, sim::replay(w, cost));
  CHECK(safe.problems.empty());
  CHECK(sim::relative_error(safe.o, ref.o) < 1e-5);
}

TEST_CASE("relative_error: over finite reference values; NaN where the tested side is broken") {
  CHECK(sim::relative_error({1, 2}, {1, 2}) == 0.0);
  CHECK(sim::relative_error({3, 4}, {0, 0}) == INFINITY);
  CHECK(sim::relative_error({1, 0}, {0, 1}) == doctest::Approx(std::sqrt(2.0)));
  CHECK(sim::relative_error({1, 5}, {1, NAN}) == 0.0);  // reference not finite: skipped
  CHECK(std::isnan(sim::relative_error({NAN, 2}, {1, 2})));
}

TEST_CASE("attention rejects inputs that do not match the workload") {
  const Workload w = small_workload({10, 20}, 2, 1, Mask::Causal);
  sim::AttentionInputs in = sim::make_inputs(w, 1);
  in.k.pop_back();
  CHECK(contains(invalid_argument_text([&] { sim::reference_attention(w, in); }),
                 "attention input k has 479 values, the workload needs 480"));
  in = sim::make_inputs(w, 1);
  Trace t = sim::replay(w);
  t.events[0].prompt_idx = 7;
  CHECK(contains(invalid_argument_text([&] { sim::tiled_attention(w, in, t); }),
                 "trace event 0 names prompt 7"));
}

TEST_CASE("split_tail: the pieces of split tiles combine to the reference; a missing piece shows") {
  // 3 x 70 rows, 4 heads, BM 32: 36 tiles over 5 CTAs, 7 full waves and one tile whose 5 KV
  // blocks (100 keys, BN 24) go one to each CTA.
  Workload w = small_workload({70, 70, 70}, 4, 2, Mask::None);
  w.kv_lens = {100, 100, 100};
  w.padded = true;
  w.scheduler = SchedulerKind::SplitTail;
  REQUIRE_MESSAGE(w.validate().empty(), w.validate());
  const sim::AttentionInputs in = sim::make_inputs(w, 77);
  const auto ref = sim::reference_attention(w, in);
  const Trace t = sim::replay(w);
  std::size_t pieces = 0;
  for (const TraceEvent& e : t.events) pieces += e.kv_blocks < 5 ? 1 : 0;
  CHECK(pieces >= 4);  // both tail tiles are cut
  const auto tiled = sim::tiled_attention(w, in, t, 0.f, 2);
  CHECK_MESSAGE(tiled.problems.empty(), all_problems(tiled));
  for (std::uint32_t n : tiled.row_writes) CHECK(n == 1);
  CHECK(sim::relative_error(tiled.o, ref.o) < 1e-5);
  CHECK(sim::relative_error(tiled.lse, ref.lse) < 1e-5);

  // Drop one piece of a split tile: the tile is reported and left unwritten, never half done.
  Trace broken = t;
  const auto piece = std::find_if(broken.events.begin(), broken.events.end(),
                                  [](const TraceEvent& e) { return e.kv_block_begin > 0; });
  REQUIRE(piece != broken.events.end());
  broken.events.erase(piece);
  const auto bad = sim::tiled_attention(w, in, broken, 0.f, 2);
  CHECK(has_problem(bad, sim::CoverageProblem::Kind::SplitKv, "do not cover its KV blocks"));
  CHECK(std::isnan(sim::relative_error(bad.o, ref.o)));
}
