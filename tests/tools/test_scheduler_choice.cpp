// The scheduler `bench` gives its causal points when nobody chose one (viz::predict_scheduler):
// the simulator's fastest candidate, checked against what the H200 measured under both.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tilesched/names.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/workload_io.hpp"
#include "viz/scheduler_choice.hpp"

using namespace tilesched;

namespace {

// A causal point of the bench grid as `bench` builds it, at a given tile height.
Workload causal_grid_point(u32 d, u32 seq, u32 block_m) {
  Workload w;
  w.padded = true;
  w.q_lens.assign(16384 / seq, seq);
  w.num_q_heads = w.num_kv_heads = 2048 / d;
  w.head_dim = d;
  w.block_n = 128;  // the cost table's unit (the kernel's own BN is 80 at d = 256)
  w.block_m = block_m;
  w.mask = Mask::Causal;
  return w;
}

}  // namespace

TEST_CASE("the simulator's causal scheduler on the bench grid against what the H200 measured") {
  // tests/data/h200/scheduler_choice/causal_grid.csv: the 18 causal points measured under queued
  // and lpt_queued (NVIDIA H200, 2026-12-04, the kernels that ship). Where the two measured more
  // than 2 % apart (17 points) the pick is the faster at 15: lpt_queued by 2.2-13.0 % from seq
  // 2048 up, at d = 64 seq 1024 and at d = 256 seq 512 and 1024. The two it misses are
  // d = 128's seq 512 and 1024, where queued's kernel, which runs a causal tile's diagonal block
  // narrow (NarrowFirst), measured 3.7 / 2.2 % faster and the table predicts lpt_queued 4 / 3 %
  // faster: its linear entries do not see what the narrow block saves on tiles of one to eight
  // blocks (docs/sim-cost-model.md). Those two are held within 4 % of the faster. At d = 64 seq 512
  // the two measured 0.1 % apart.
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  int rows = 0, clear = 0, misses = 0, lpt_picked = 0;
  for (const std::vector<std::string>& f : test::csv_rows(
           std::string(TILESCHED_TEST_DATA_DIR) + "/h200/scheduler_choice/causal_grid.csv")) {
    REQUIRE(f.size() == 5);
    CAPTURE(f[0]);
    CAPTURE(f[1]);
    const u32 d = u32(std::stoul(f[0])), seq = u32(std::stoul(f[1])), bm = u32(std::stoul(f[2]));
    const double queued = std::stod(f[3]), lpt = std::stod(f[4]);
    const viz::SchedulerChoice c = viz::predict_scheduler(
        causal_grid_point(d, seq, bm), viz::kCausalSchedulerCandidates, cost, [&](Workload& w) {
          w.resident_ctas = cost.resident_ctas(w.head_dim);
          w.num_ctas = w.resident_ctas;
        });
    REQUIRE(c.chosen());
    REQUIRE(c.predicted_us.size() == 2);
    CAPTURE(viz::describe_scheduler_choice(c));
    const bool picked_lpt = c.workload.scheduler == SchedulerKind::LptQueued;
    CHECK(c.workload.block_m == bm);
    CHECK(c.workload.num_ctas == 132);
    const double picked = picked_lpt ? lpt : queued, best = std::max(queued, lpt);
    if (std::abs(lpt / queued - 1) > 0.02) {
      ++clear;
      if (d == 128 && seq <= 1024) {
        CHECK(picked >= best * (1 - 0.04));
        misses += picked != best;
      } else {
        CHECK(picked == best);
      }
    } else {
      CHECK(picked >= best * (1 - 0.02));
    }
    lpt_picked += picked_lpt;
    ++rows;
  }
  CHECK(rows == 18);
  CHECK(clear == 17);
  CHECK(misses == 2);
  CHECK(lpt_picked == 18);
}

TEST_CASE("predict_scheduler: ties keep the earlier candidate; no candidate, a bad one") {
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  Workload w = sim::default_workload();
  const auto keep = [](Workload&) {};
  // The same scheduler twice: the same prediction, and the first is kept.
  const viz::SchedulerChoice same =
      viz::predict_scheduler(w, {SchedulerKind::Queued, SchedulerKind::Queued}, cost, keep);
  REQUIRE(same.chosen());
  REQUIRE(same.predicted_us.size() == 2);
  CHECK(same.predicted_us[0].second == same.predicted_us[1].second);
  CHECK(same.workload.scheduler == SchedulerKind::Queued);
  // A candidate far slower than the first is not picked; listed after it, neither is it.
  const viz::SchedulerChoice order = viz::predict_scheduler(
      w, {SchedulerKind::Queued, SchedulerKind::Transient, SchedulerKind::LptQueued}, cost, keep);
  REQUIRE(order.chosen());
  REQUIRE(order.predicted_us.size() == 3);
  CHECK(order.workload.scheduler != SchedulerKind::Transient);
  const std::string text = viz::describe_scheduler_choice(order);
  CHECK(text.rfind(std::string(to_string(order.workload.scheduler)) + " (predicted ", 0) == 0);
  CHECK(text.find("; transient: ") != std::string::npos);
  // `prepare` sees each candidate with its scheduler set, and what it sets is kept in the pick.
  std::vector<SchedulerKind> seen;
  const viz::SchedulerChoice prepared =
      viz::predict_scheduler(w, viz::kCausalSchedulerCandidates, cost, [&](Workload& x) {
        seen.push_back(x.scheduler);
        x.num_ctas = 66;
      });
  CHECK(seen == viz::kCausalSchedulerCandidates);
  CHECK(prepared.workload.num_ctas == 66);
  // Nothing to choose from, and a candidate the workload cannot run: why_not, workload as given.
  const viz::SchedulerChoice none = viz::predict_scheduler(w, {}, cost, keep);
  CHECK_FALSE(none.chosen());
  CHECK(none.why_not == "no candidate scheduler");
  CHECK(viz::describe_scheduler_choice(none).empty());
  const viz::SchedulerChoice bad = viz::predict_scheduler(w, viz::kCausalSchedulerCandidates, cost,
                                                          [](Workload& x) { x.num_ctas = 0; });
  CHECK_FALSE(bad.chosen());
  CHECK(bad.why_not.rfind("scheduler queued: ", 0) == 0);
  CHECK(bad.predicted_us.empty());
  CHECK(bad.workload.num_ctas == w.num_ctas);
}
