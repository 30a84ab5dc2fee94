// sim::schedule_differences: a trace follows the model, or each way it does not is named.
#include <doctest/doctest.h>

#include <algorithm>

#include "sim_test_util.hpp"

using namespace tilesched;

namespace {

Workload ragged(SchedulerKind kind) {
  Workload w;
  w.q_lens = {300, 1, 0, 257};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.num_ctas = 3;
  w.scheduler = kind;
  return w;
}

// Two events exchange the work they name (CTA, step and times stay).
void swap_work(TraceEvent& a, TraceEvent& b) {
  std::swap(a.linear_idx, b.linear_idx);
  std::swap(a.kv_block_begin, b.kv_block_begin);
  std::swap(a.kv_blocks, b.kv_blocks);
  std::swap(a.prompt_offset, b.prompt_offset);
  std::swap(a.head_idx, b.head_idx);
  std::swap(a.prompt_idx, b.prompt_idx);
  std::swap(a.query_rows, b.query_rows);
}

bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("static schedules: identical traces agree, a changed step is named") {
  const Trace model = sim::replay(ragged(SchedulerKind::Tile));
  CHECK(sim::schedule_differences(model, model).empty());
  Trace measured = model;
  measured.events[1].kv_blocks += 1;
  CHECK(mentions(sim::schedule_differences(model, measured), "step 1"));
  measured = model;
  measured.events.pop_back();
  CHECK(mentions(sim::schedule_differences(model, measured), "the simulator says"));
  measured = model;
  measured.launched_ctas += 1;
  CHECK(mentions(sim::schedule_differences(model, measured), "CTAs, simulator"));
}

TEST_CASE("queued schedules: tile set, each once, counter order") {
  const Trace model = sim::replay(ragged(SchedulerKind::Queued));
  CHECK(sim::schedule_differences(model, model).empty());
  Trace measured = model;
  measured.events.push_back(measured.events.back());  // processed twice
  CHECK(mentions(sim::schedule_differences(model, measured), "times"));
  measured = model;
  measured.events.pop_back();
  CHECK(mentions(sim::schedule_differences(model, measured), "never processed"));
  // Two later tiles of one CTA in decreasing order cannot come from a growing counter.
  measured = model;
  auto it = std::adjacent_find(
      measured.events.begin(), measured.events.end(),
      [](const TraceEvent& a, const TraceEvent& b) { return a.cta == b.cta && a.step >= 1; });
  REQUIRE(it != measured.events.end());
  std::swap(it->linear_idx, (it + 1)->linear_idx);
  CHECK(mentions(sim::schedule_differences(model, measured), "counter order violated"));
}

TEST_CASE("split_kv: the counter hands out pieces, each once, in piece order per CTA") {
  Workload w = ragged(SchedulerKind::SplitKv);
  w.kv_lens = {900, 700, 0, 1000};  // several KV blocks per tile
  w.split_kv_blocks = 2;
  REQUIRE(w.validate().empty());
  const Trace model = sim::replay(w);
  REQUIRE(std::any_of(model.events.begin(), model.events.end(),
                      [](const TraceEvent& e) { return e.kv_block_begin != 0; }));
  // A tile's pieces share its index: they are told apart by their first KV block.
  CHECK(sim::schedule_differences(model, model).empty());
  Trace measured = model;
  measured.events.push_back(measured.events.back());
  CHECK(mentions(sim::schedule_differences(model, measured), "times"));
  measured = model;
  measured.events.pop_back();
  CHECK(mentions(sim::schedule_differences(model, measured), "never processed"));
  // Another timing: two CTAs' last pieces, both from the counter, the other way round, where
  // each CTA's pieces stay in increasing order.
  std::vector<std::vector<std::size_t>> of_cta(w.num_ctas);
  for (std::size_t i = 0; i < model.events.size(); ++i) of_cta[model.events[i].cta].push_back(i);
  // Piece order: the stream's (tile, first block).
  const auto before = [&](std::size_t x, std::size_t y) {
    const TraceEvent &ex = model.events[x], &ey = model.events[y];
    return std::make_pair(ex.linear_idx, ex.kv_block_begin) <
           std::make_pair(ey.linear_idx, ey.kv_block_begin);
  };
  bool swapped = false;
  for (u32 c = 0; c < w.num_ctas && !swapped; ++c)
    for (u32 d = c + 1; d < w.num_ctas && !swapped; ++d) {
      const auto &pc = of_cta[c], &pd = of_cta[d];
      if (pc.size() < 2 || pd.size() < 2) continue;
      const std::size_t x = pc.back(), y = pd.back();
      if (!before(pc[pc.size() - 2], y) || !before(pd[pd.size() - 2], x)) continue;
      measured = model;
      swap_work(measured.events[x], measured.events[y]);
      swapped = true;
    }
  REQUIRE(swapped);
  for (const std::string& d : sim::schedule_differences(model, measured)) FAIL_CHECK(d);
  // A CTA's two pieces from the counter in decreasing order cannot come from a growing counter.
  measured = model;
  auto it = std::adjacent_find(
      measured.events.begin(), measured.events.end(),
      [](const TraceEvent& x, const TraceEvent& y) { return x.cta == y.cta && x.step >= 1; });
  REQUIRE(it != measured.events.end());
  swap_work(*it, *(it + 1));
  CHECK(mentions(sim::schedule_differences(model, measured), "counter order violated"));
}
