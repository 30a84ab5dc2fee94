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
