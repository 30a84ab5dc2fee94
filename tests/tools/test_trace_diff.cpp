// diff: identical schedules are identical, different strategies differ at a named place, tile
// set differences are counted, timing ratios are per CTA.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <tuple>
#include <vector>

#include "cli/trace_diff.hpp"
#include "test_support.hpp"
#include "tilesched/sim/replay.hpp"

using namespace tilesched;
using namespace tilesched::cli;

TEST_CASE("a trace is identical to itself") {
  const Trace t = test::small_trace();
  const TraceDiff d = diff_traces(t, t);
  CHECK(d.same_workload());
  CHECK(d.schedules_identical());
  CHECK(d.same_tile_set());
  CHECK(d.ratio_min == doctest::Approx(1.0));
  CHECK(d.ratio_max == doctest::Approx(1.0));
  CHECK(format_trace_diff(d, t, t).find("schedule: identical") != std::string::npos);
}

TEST_CASE("two static strategies differ at the first (CTA, step) they disagree on") {
  const Trace a = test::small_trace(SchedulerKind::Tile, Schedule::Default);
  const Trace b = test::small_trace(SchedulerKind::Tile, Schedule::PromptRotate);
  const TraceDiff d = diff_traces(a, b);
  CHECK_FALSE(d.same_workload());
  REQUIRE(d.workload_differences.size() == 1);
  CHECK(d.workload_differences[0] == "schedule");
  CHECK_FALSE(d.schedules_identical());
  REQUIRE(d.first_difference);
  // The first difference is the earliest (cta, step) whose tiles differ.
  const auto& f = *d.first_difference;
  for (const TraceEvent& e : a.events) {
    if (std::tie(e.cta, e.step) >= std::tie(f.cta, f.step)) break;
    bool same = false;
    for (const TraceEvent& g : b.events)
      if (g.cta == e.cta && g.step == e.step)
        same = g.linear_idx == e.linear_idx && g.head_idx == e.head_idx &&
               g.prompt_offset == e.prompt_offset;
    CHECK(same);
  }
  REQUIRE(f.a);
  REQUIRE(f.b);
  CHECK((f.a->prompt_offset != f.b->prompt_offset || f.a->head_idx != f.b->head_idx ||
         f.a->prompt_idx != f.b->prompt_idx || f.a->linear_idx != f.b->linear_idx));
  // Both schedule every valid tile once, so the tile sets agree.
  CHECK(d.same_tile_set());
}

TEST_CASE("tiles only in one trace are counted and listed") {
  const Trace a = test::small_trace();
  Trace b = a;
  const TraceEvent dropped = b.events.back();
  b.events.pop_back();
  const TraceDiff d = diff_traces(a, b);
  CHECK(d.only_in_a_count == 1);
  CHECK(d.only_in_b_count == 0);
  REQUIRE(d.only_in_a.size() == 1);
  CHECK(d.only_in_a[0].linear_idx == dropped.linear_idx);
  REQUIRE(d.first_difference);
  CHECK(d.first_difference->cta == dropped.cta);
  CHECK(d.first_difference->step == dropped.step);
  CHECK_FALSE(d.first_difference->b);
  CHECK_FALSE(d.schedules_identical());
}

TEST_CASE("per-CTA timing ratios; timing alone does not make schedules differ") {
  const Trace a = test::small_trace();
  Trace b = a;
  for (TraceEvent& e : b.events) {
    const double scale = e.cta == 2 ? 3.0 : 2.0;
    e.start_us *= scale;
    e.end_us *= scale;
  }
  const TraceDiff d = diff_traces(a, b);
  CHECK(d.schedules_identical());
  CHECK(d.ratio_min == doctest::Approx(2.0));
  CHECK(d.ratio_median == doctest::Approx(2.0));
  CHECK(d.ratio_max == doctest::Approx(3.0));
  REQUIRE_FALSE(d.worst_ratios.empty());
  CHECK(d.worst_ratios[0].cta == 2);
}

TEST_CASE("traces of different problems are told apart from different schedules of one") {
  const Trace causal = test::small_trace();
  Workload none_w = test::small_workload();
  none_w.mask = Mask::None;
  const Trace none = sim::replay(none_w);
  const TraceDiff d = diff_traces(causal, none);
  // The mask does not move a tile, so the schedules alone would look identical.
  CHECK(d.schedules_identical());
  CHECK_FALSE(d.same_problem());
  CHECK(d.problem_differences == std::vector<std::string>{"mask"});
  CHECK(format_trace_diff(d, causal, none).find("a different attention problem") !=
        std::string::npos);
  // Strategies are what diff compares: not a different problem.
  const TraceDiff strategies = diff_traces(causal, test::small_trace(SchedulerKind::Queued));
  CHECK_FALSE(strategies.same_workload());
  CHECK(strategies.same_problem());
}

TEST_CASE("split_tail: pieces that split a tile's blocks differently are a different schedule") {
  Workload w = test::small_workload(SchedulerKind::SplitTail, Schedule::Default);
  w.mask = Mask::None;  // split_tail's tiles all cost the same: no mask, one length
  w.q_lens = {1000, 1000};
  const Trace a = sim::replay(w);
  REQUIRE(diff_traces(a, a).schedules_identical());
  // The first split tile: its piece that begins at block 0 and the one right after it.
  Trace b = a;
  TraceEvent* first = nullptr;
  TraceEvent* second = nullptr;
  for (TraceEvent& e : b.events)
    if (e.kv_block_begin > 0 && e.kv_blocks >= 2 && !second) second = &e;
  REQUIRE(second);
  for (TraceEvent& e : b.events)
    if (e.linear_idx == second->linear_idx && e.kv_block_begin == 0) first = &e;
  REQUIRE(first);
  REQUIRE(first->kv_blocks == second->kv_block_begin);
  // The same tile, the same CTAs and steps, the boundary between the pieces one block later.
  first->kv_blocks += 1;
  second->kv_block_begin += 1;
  second->kv_blocks -= 1;
  const TraceDiff d = diff_traces(a, b);
  CHECK(d.same_workload());
  CHECK_FALSE(d.schedules_identical());
  CHECK(d.only_in_a_count == 2);
  CHECK(d.only_in_b_count == 2);
  const std::string text = format_trace_diff(d, a, b);
  CHECK_MESSAGE(
      text.find(fmt::format("kv blocks {}..{}", second->kv_block_begin,
                            second->kv_block_begin + second->kv_blocks - 1)) != std::string::npos,
      text);
}

TEST_CASE("trace warnings: none for a replayed trace, one per problem otherwise") {
  for (const SchedulerKind kind : {SchedulerKind::Tile, SchedulerKind::Queued,
                                   SchedulerKind::Transient, SchedulerKind::SplitTail}) {
    CAPTURE(to_string(kind));
    Workload w = test::small_workload(kind);
    if (kind == SchedulerKind::SplitTail) {  // every tile of one cost: one length, no mask
      w.q_lens = {1000, 1000};
      w.padded = true;
      w.mask = Mask::None;
    }
    CHECK(trace_warnings(sim::replay(w)).empty());
  }

  const Trace clean = test::small_trace();
  Trace twice = clean;
  TraceEvent again = clean.events.front();  // CTA 0's first tile, once more at its end
  std::size_t last_of_cta0 = 0;
  while (last_of_cta0 + 1 < twice.events.size() && twice.events[last_of_cta0 + 1].cta == 0)
    ++last_of_cta0;
  again.step = twice.events[last_of_cta0].step + 1;
  twice.events.insert(twice.events.begin() + std::ptrdiff_t(last_of_cta0) + 1, again);
  std::vector<std::string> warnings = trace_warnings(twice);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == fmt::format("tile (prompt {}, head {}, offset {}) was processed 2 times "
                                   "(CTA 0 step 0, CTA 0 step {})",
                                   again.prompt_idx, again.head_idx, again.prompt_offset,
                                   again.step));
  // The same tile set in diff's terms: a tile twice is one "only in" the other trace.
  CHECK(diff_traces(clean, twice).only_in_b_count == 1);

  // Sequence 2 has 129 rows (test_support.hpp): a tile at row 256 lies past its end.
  Trace past = clean;
  past.events.back().prompt_idx = 2;
  past.events.back().prompt_offset = 256;
  warnings = trace_warnings(past);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("starts at row 256, past the end of sequence 2 (129 rows)") !=
        std::string::npos);
  // In faithful mode running it is upstream's behaviour, not a problem of the trace.
  past.workload.ragged_mode = RaggedMode::Faithful;
  CHECK(trace_warnings(past).empty());

  Trace wide = clean;
  wide.launched_ctas = wide.workload.num_ctas + 1;
  warnings = trace_warnings(wide);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == fmt::format("launched_ctas is {}, more than the workload's C ({}): a "
                                   "persistent grid launches at most C CTAs",
                                   wide.launched_ctas, wide.workload.num_ctas));

  // diff warns with the same sentences, naming the trace.
  const std::string diff = format_trace_diff(diff_traces(clean, wide), clean, wide);
  CHECK(diff.find("B: warning: launched_ctas is") != std::string::npos);
  CHECK(diff.find("A: warning:") == std::string::npos);
}

TEST_CASE("trace warnings list a few tiles, then how many more") {
  Trace t = test::small_trace();
  const std::size_t n = t.events.size();
  t.events.insert(t.events.end(), t.events.begin(), t.events.end());         // every tile twice
  for (std::size_t i = n; i < t.events.size(); ++i) t.events[i].cta += 100;  // on other CTAs
  const std::vector<std::string> warnings = trace_warnings(t, 3);
  REQUIRE(warnings.size() == 4);
  CHECK(warnings[3] == fmt::format("... and {} more tiles processed more than once", n - 3));
}
