// Metrics on hand-made traces.
#include <doctest/doctest.h>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;

namespace {
TraceEvent ev(u32 cta, u32 step, double start, double end) {
  TraceEvent e;
  e.cta = cta;
  e.step = step;
  e.start_us = start;
  e.end_us = end;
  return e;
}
}  // namespace

TEST_CASE("metrics of a hand-made trace") {
  Trace t;
  t.workload.q_lens = {10};
  t.launched_ctas = 3;  // CTA 2 gets nothing
  t.events = {ev(0, 0, 0, 4), ev(0, 1, 4, 10), ev(1, 0, 0, 2)};
  const sim::Metrics m = sim::compute_metrics(t);
  CHECK(m.makespan_us == 10);
  CHECK(m.total_busy_us == 12);
  CHECK(m.bound_us == 6);  // max(12 / 3, longest tile 6)
  CHECK(m.efficiency == doctest::Approx(0.6));
  CHECK(m.busy_min_us == 0);
  CHECK(m.busy_max_us == 10);
  CHECK(m.busy_mean_us == 4);
  CHECK(m.tiles_min == 0);
  CHECK(m.tiles_max == 2);
  CHECK(m.tiles_mean == 1);
  CHECK(m.imbalance == doctest::Approx(2.5));
  CHECK(m.tile_count == 3);
  CHECK(m.launched_ctas == 3);
  CHECK(m.concurrent_ctas == 3);
}

TEST_CASE("metrics: transient traces bound by the resident CTA count") {
  Workload w = sim::default_workload();
  w.scheduler = SchedulerKind::Transient;
  w.num_ctas = 16;
  const sim::Metrics m = sim::compute_metrics(sim::replay(w));
  CHECK(m.concurrent_ctas == 16);
  CHECK(m.launched_ctas > 1000);
  CHECK(m.bound_us >= m.total_busy_us / 16);
  CHECK(m.efficiency <= 1.0);
  CHECK(m.efficiency > 0.5);
}

TEST_CASE("metrics: a perfectly even static schedule has efficiency 1") {
  Workload w;
  w.q_lens = {1024};
  w.num_q_heads = 4;
  w.num_kv_heads = 4;
  w.mask = Mask::None;  // 8 tiles x 4 heads, all equal: 4 per CTA on 8 CTAs
  w.num_ctas = 8;
  const sim::Metrics m = sim::compute_metrics(sim::replay(w));
  CHECK(m.efficiency == doctest::Approx(1.0));
  CHECK(m.imbalance == doctest::Approx(1.0));
  CHECK(m.tiles_min == 4);
  CHECK(m.tiles_max == 4);
}
