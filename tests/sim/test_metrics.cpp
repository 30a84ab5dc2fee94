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

// The six per-unit figures (busy min/mean/max µs, tiles min/mean/max), checked together.
struct PerUnit {
  double busy_min, busy_mean, busy_max, tiles_min, tiles_mean, tiles_max;
};
void check_per_unit(const sim::Metrics& m, const PerUnit& want) {
  CHECK(m.busy_min_us == want.busy_min);
  CHECK(m.busy_mean_us == want.busy_mean);
  CHECK(m.busy_max_us == want.busy_max);
  CHECK(m.tiles_min == want.tiles_min);
  CHECK(m.tiles_mean == want.tiles_mean);
  CHECK(m.tiles_max == want.tiles_max);
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
  check_per_unit(m, {/*busy*/ 0, 4, 10, /*tiles*/ 0, 1, 2});
  CHECK(m.imbalance == doctest::Approx(2.5));
  CHECK(m.tile_count == 3);
  CHECK(m.launched_ctas == 3);
  CHECK(m.concurrent_ctas == 3);
  CHECK(m.unit == sim::ExecutionUnit::Cta);
  CHECK(m.unit_count == 3);
}

TEST_CASE("metrics of a hand-made transient trace count per slot/SM") {
  Trace t;
  t.workload.q_lens = {10};
  t.workload.scheduler = SchedulerKind::Transient;
  t.workload.resident_ctas = 2;
  t.launched_ctas = 4;  // CTA 3 had no tile
  t.events = {ev(0, 0, 0, 4), ev(1, 0, 0, 2), ev(2, 0, 2, 8)};
  t.events[0].sm_id = 0;
  t.events[1].sm_id = 1;
  t.events[2].sm_id = 1;  // ran in slot 1 after CTA 1
  sim::Metrics m = sim::compute_metrics(t);
  CHECK(m.unit == sim::ExecutionUnit::Slot);
  CHECK(m.unit_count == 2);
  check_per_unit(m, {/*busy*/ 4, 6, 8, /*tiles*/ 1, 1.5, 2});
  CHECK(m.imbalance == doctest::Approx(8.0 / 6.0));
  CHECK(m.bound_us == 6);  // max(12 / 2 slots, longest tile 6)

  // A GPU trace's SM ids may exceed the resident count: every slot seen is a unit.
  t.events[2].sm_id = 5;
  m = sim::compute_metrics(t);
  CHECK(m.unit_count == 3);
  check_per_unit(m, {/*busy*/ 2, 4, 6, /*tiles*/ 1, 1, 1});

  // Two CTAs at once on SM 1 (a device with two CTAs per SM): two slots there, three in all.
  t.events[2].sm_id = 1;
  t.events[2].start_us = 1;
  m = sim::compute_metrics(t);
  CHECK(m.unit_count == 3);
  check_per_unit(m, {/*busy*/ 2, 13.0 / 3, 7, /*tiles*/ 1, 1, 1});
  CHECK(m.concurrent_ctas == 2);  // what the workload records, not the slots seen
  t.workload.resident_ctas = Workload::kResidentFromDevice;  // not recorded: the slots seen
  CHECK(sim::compute_metrics(t).concurrent_ctas == 3);
  t.events[2].start_us = 2;
  t.workload.resident_ctas = 2;

  // Without SM ids (an older trace) there is nothing to count per slot: per CTA as before.
  t.events[2].sm_id = -1;
  m = sim::compute_metrics(t);
  CHECK(m.unit == sim::ExecutionUnit::Cta);
  CHECK(m.unit_count == 4);
  check_per_unit(m, {/*busy*/ 0, 3, 6, /*tiles*/ 0, 0.75, 1});
}

TEST_CASE("metrics: transient traces bound by the resident CTA count") {
  Workload w = sim::default_workload();
  w.scheduler = SchedulerKind::Transient;
  w.resident_ctas = 16;
  const sim::Metrics m = sim::compute_metrics(sim::replay(w));
  CHECK(m.concurrent_ctas == 16);
  CHECK(m.launched_ctas > 1000);
  CHECK(m.bound_us >= m.total_busy_us / 16);
  CHECK(m.efficiency <= 1.0);
  CHECK(m.efficiency > 0.5);
  CHECK(m.unit == sim::ExecutionUnit::Slot);
  CHECK(m.unit_count == 16);
  CHECK(m.busy_mean_us == doctest::Approx(m.total_busy_us / 16));
  CHECK(m.busy_min_us > 0);  // per CTA it was 0: most of the ~1000 CTAs have no tile
}

TEST_CASE("metrics: a uniform non-causal transient workload is even across slots") {
  // T = 16 tiles per (head, sequence) are launched, but the second sequence has only 2: 256
  // CTAs, 144 equal tiles. On 16 resident slots that is 9 tiles each (imbalance 1); counted per
  // CTA, the 112 CTAs with nothing to do made it look uneven (256 / 144 = 1.78, min busy 0).
  Workload w;
  w.q_lens = {2048, 256};
  w.kv_lens = {2048, 2048};  // every tile sees 16 KV blocks: all tiles cost the same
  w.num_q_heads = 8;
  w.num_kv_heads = 8;
  w.mask = Mask::None;
  w.scheduler = SchedulerKind::Transient;
  w.resident_ctas = 16;
  // A profile without a CTA launch: with one, the 112 tile-less CTAs hold their slots for it and
  // shift which slot takes the next tile, so the split is no longer even by construction.
  w.cost_profile = "h200_mma_sync";
  Trace t = sim::replay(w);
  const sim::Metrics m = sim::compute_metrics(t);
  CHECK(m.launched_ctas == 256);
  CHECK(m.tile_count == 144);
  CHECK(m.unit == sim::ExecutionUnit::Slot);
  CHECK(m.imbalance == doctest::Approx(1.0));
  CHECK(m.tiles_min == 9);
  CHECK(m.tiles_max == 9);
  CHECK(m.busy_min_us == doctest::Approx(m.busy_max_us));

  for (TraceEvent& e : t.events) e.sm_id = -1;  // what the per-CTA count said
  const sim::Metrics per_cta = sim::compute_metrics(t);
  CHECK(per_cta.unit == sim::ExecutionUnit::Cta);
  CHECK(per_cta.imbalance == doctest::Approx(256.0 / 144.0));
  CHECK(per_cta.busy_min_us == 0);
}

TEST_CASE("metrics: a persistent grid beyond the resident CTAs is bound by what runs at once") {
  Workload w;
  w.q_lens = {1024};
  w.num_q_heads = 8;
  w.num_kv_heads = 8;
  w.mask = Mask::None;
  w.num_ctas = 16;
  w.resident_ctas = 8;  // 64 equal tiles, 16 CTAs of 4 tiles each, in two waves of 8
  const Trace t = sim::replay(w);
  const sim::Metrics m = sim::compute_metrics(t);
  CHECK(m.launched_ctas == 16);
  CHECK(m.concurrent_ctas == 8);
  CHECK(m.bound_us == doctest::Approx(m.total_busy_us / 8));
  // Each slot runs 8 tiles, and its second CTA starts the profile's CTA launch after the first
  // exits: all of the makespan but that launch is busy.
  const double tile_us = t.events.front().end_us;
  const double launch_us = sim::CostModel::builtin(w.cost_profile).cta_launch_us(w.head_dim);
  CHECK(m.makespan_us == doctest::Approx(8 * tile_us + launch_us));
  CHECK(m.efficiency == doctest::Approx(8 * tile_us / (8 * tile_us + launch_us)));
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

TEST_CASE("per-CTA loads: busy time and tile count of every CTA that ran a tile") {
  Trace t;
  t.events = {ev(0, 0, 0, 4), ev(0, 1, 4, 10), ev(5, 0, 1, 2)};
  const auto loads = sim::cta_loads(t);
  REQUIRE(loads.size() == 2);
  CHECK(loads.at(0).busy_us == 10);
  CHECK(loads.at(0).tiles == 2);
  CHECK(loads.at(5).busy_us == 1);
  CHECK(loads.at(5).tiles == 1);
  CHECK(sim::busy_us(t.events[1]) == 6);
}

TEST_CASE("median: the middle value, the mean of the middle two, 0 for none") {
  CHECK(sim::median({}) == 0);
  CHECK(sim::median({3}) == 3);
  CHECK(sim::median({5, 1, 3}) == 3);
  CHECK(sim::median({4, 1, 3, 2}) == 2.5);
}
