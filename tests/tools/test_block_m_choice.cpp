// The tile height `run` and `bench` pick when nobody chose one (viz::predict_block_m): the
// simulator's fastest, checked against what the H200 measured at both heights.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tilesched/names.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/workload_io.hpp"
#include "viz/block_m_choice.hpp"

using namespace tilesched;

namespace {

u32 resident_of(const sim::CostModel& cost, const Workload& w) {
  return cost.resident_ctas(w.head_dim);
}

}  // namespace

TEST_CASE("the simulator's tile height is the faster one the H200 measured on the suite's d = 64") {
  // tests/data/h200/block_m_choice/suite.csv: the 15 d = 64 workloads of the prediction suite
  // under tile and queued, measured at BM 128 and 192 on an NVIDIA H200 (2026-12-04, on the kernels
  // the h200 table was fitted to). The table's tile heights predict the faster BM on every one,
  // including those where the taller tile is slower (the static stride's aliasing of
  // constant_causal, short queries against long caches).
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  int rows = 0, slower_taller = 0, misses = 0;
  for (const std::vector<std::string>& r :
       test::csv_rows(std::string(TILESCHED_TEST_DATA_DIR) + "/h200/block_m_choice/suite.csv")) {
    REQUIRE(r.size() == 4);
    CAPTURE(r[0]);
    CAPTURE(r[1]);
    const double measured128 = std::stod(r[2]), measured192 = std::stod(r[3]);
    sim::WorkloadFile file =
        sim::read_workload_file(std::string(TILESCHED_SUITE_DIR) + "/" + r[0] + ".json");
    REQUIRE(file.workload.head_dim == 64);
    file.workload.scheduler = parse_enum<SchedulerKind>(r[1]).value();
    const viz::BlockMChoice c = viz::predict_block_m(
        file.workload, {128, 192}, cost, [&](const Workload& w) { return resident_of(cost, w); },
        !file.sets_num_ctas);
    REQUIRE(c.predicted_us.size() == 2);
    // The pick is the faster BM, or measured within 2 % of it: a near tie measured in one round
    // may go either way. On this recording every pick is the faster (uniform_causal under tile,
    // 1.3 % apart, included).
    const double picked = c.block_m == 128 ? measured128 : measured192;
    CHECK(picked <= 1.02 * std::min(measured128, measured192));
    misses += picked > std::min(measured128, measured192);
    // Each height's prediction within 3.5 % of its measurement, but the skewed workloads (one long
    // sequence among short ones) under queued, up to 6.1 % short, within 6.5 %.
    const bool skewed_queued = r[0].rfind("d64_skewed", 0) == 0 && r[1] == "queued";
    const double tolerance = skewed_queued ? 0.065 : 0.035;
    CHECK(c.predicted_us[0].second == doctest::Approx(measured128).epsilon(tolerance));
    CHECK(c.predicted_us[1].second == doctest::Approx(measured192).epsilon(tolerance));
    slower_taller += measured192 > measured128;
    ++rows;
  }
  CHECK(rows == 30);
  CHECK(slower_taller == 3);  // where the keys-per-row rule of recommended_block_m misses
  CHECK(misses == 0);
}

TEST_CASE("the simulator's tile height on the bench grid at d = 64") {
  // tests/data/h200/block_m_choice/grid.csv (measured on an NVIDIA H200, 2026-12-04): the pick is
  // the faster BM at every point, each point under the scheduler `bench` ran it with and on the
  // CTAs it launched at each height (dense points: the fewest that take as many waves, 128 or
  // 132). (The BM 192 entry is fitted on short padded rows as well as the built-in workload, whose
  // long rows alone leave seq 512 dense costed short; docs/sim-cost-model.md.)
  const sim::CostModel cost = sim::CostModel::builtin("h200");
  int rows = 0;
  for (const std::vector<std::string>& r :
       test::csv_rows(std::string(TILESCHED_TEST_DATA_DIR) + "/h200/block_m_choice/grid.csv")) {
    REQUIRE(r.size() == 7);
    const u32 seq = u32(std::stoul(r[0]));
    const u32 ctas128 = u32(std::stoul(r[5])), ctas192 = u32(std::stoul(r[6]));
    CAPTURE(seq);
    CAPTURE(r[1]);
    CAPTURE(r[2]);
    const double measured128 = 1000 * std::stod(r[3]), measured192 = 1000 * std::stod(r[4]);
    Workload w;
    w.padded = true;
    w.q_lens.assign(16384 / seq, seq);
    w.num_q_heads = w.num_kv_heads = 32;
    w.head_dim = 64;
    w.block_n = 128;
    w.mask = parse_enum<Mask>(r[1]).value();
    // "tile/default" or "lpt_queued": the kind, and the index order where the kind has one.
    const std::string kind = r[2].substr(0, r[2].find('/'));
    w.scheduler = parse_enum<SchedulerKind>(kind).value();
    if (kind != r[2]) w.schedule = parse_enum<Schedule>(r[2].substr(kind.size() + 1)).value();
    // Each height on the CTAs it ran on, all resident at once (one per SM).
    const viz::BlockMChoice c = viz::predict_block_m(
        w, {128, 192}, cost,
        [&](const Workload& x) { return x.block_m == 128 ? ctas128 : ctas192; }, true);
    REQUIRE(c.predicted_us.size() == 2);
    // The seq 16384 dense points vary by up to 11 % between runs (docs/gpu-performance.md, "The
    // benchmark grid": bimodal), so they are held within 12 %.
    CHECK(c.predicted_us[0].second ==
          doctest::Approx(measured128).epsilon(seq == 16384 ? 0.12 : 0.03));
    CHECK(c.predicted_us[1].second ==
          doctest::Approx(measured192).epsilon(seq == 16384 ? 0.12 : 0.03));
    CHECK(c.block_m == (measured128 < measured192 ? 128u : 192u));
    ++rows;
  }
  CHECK(rows == 10);
}

TEST_CASE("predict_block_m: one candidate, none, and a table without the tile heights") {
  Workload w = sim::default_workload();
  w.head_dim = 64;
  const sim::CostModel h200 = sim::CostModel::builtin("h200");
  const auto resident = [&](const Workload& x) { return resident_of(h200, x); };
  const viz::BlockMChoice one = viz::predict_block_m(w, {128}, h200, resident, true);
  CHECK(one.block_m == 128);
  CHECK(one.predicted_us.empty());
  CHECK(viz::describe_block_m_choice(one).empty());
  const viz::BlockMChoice none = viz::predict_block_m(w, {}, h200, resident, true);
  CHECK(none.block_m == 0);
  CHECK(none.why_not == "the kernel runs no tile height at head dim 64");
  // The mma.sync table has one set of coefficients per head dim: it would cost a 192-row tile
  // like a 128-row one and always pick the taller, so it does not choose.
  const viz::BlockMChoice flat =
      viz::predict_block_m(w, {128, 192}, sim::CostModel::builtin("h200_mma_sync"), resident, true);
  CHECK(flat.block_m == 0);
  CHECK(flat.why_not ==
        "cost table 'h200_mma_sync' has no coefficients measured at BM 128, 192 for head dim 64");
  // The built-in workload, measured at both heights (tests/data/h200/cost_fit): causal, the two
  // within 0.5 % (a tie), the prediction picks 128 and the line says both predictions; dense, BM
  // 192 more than 5 % faster, each height predicted within 1 % of its measurement.
  const auto measured_us = [](const std::string& name) {
    const Trace t = sim::read_trace(std::string(TILESCHED_TEST_DATA_DIR) + "/h200/cost_fit/" +
                                    name + ".trace.json.gz");
    REQUIRE(t.workload.head_dim == 64);
    return sim::compute_metrics(t).makespan_us;
  };
  CHECK(measured_us("h200_d64_causal") ==
        doctest::Approx(measured_us("h200_d64_bm192_causal")).epsilon(0.005));
  const viz::BlockMChoice causal = viz::predict_block_m(w, {128, 192}, h200, resident, true);
  CHECK(causal.block_m == 128);
  REQUIRE(causal.predicted_us.size() == 2);
  CHECK(causal.predicted_us[0].second < causal.predicted_us[1].second);
  const std::string text = viz::describe_block_m_choice(causal);
  CHECK(text.rfind("BM 128 (predicted ", 0) == 0);
  CHECK(text.find("; BM 192: ") != std::string::npos);
  w.mask = Mask::None;
  const viz::BlockMChoice dense = viz::predict_block_m(w, {128, 192}, h200, resident, true);
  REQUIRE(dense.predicted_us.size() == 2);
  const double dense128 = measured_us("h200_d64_none"),
               dense192 = measured_us("h200_d64_bm192_none");
  CHECK(dense192 < 0.95 * dense128);
  CHECK(dense.predicted_us[0].second == doctest::Approx(dense128).epsilon(0.01));
  CHECK(dense.predicted_us[1].second == doctest::Approx(dense192).epsilon(0.01));
  CHECK(dense.block_m == 192);
  // num_ctas: the device's count for each candidate, or the workload's own.
  w.num_ctas = 7;
  const viz::BlockMChoice own = viz::predict_block_m(
      w, {128, 192}, h200, [](const Workload&) { return 132u; }, false);
  const viz::BlockMChoice device = viz::predict_block_m(
      w, {128, 192}, h200, [](const Workload&) { return 132u; }, true);
  CHECK(own.predicted_us[0].second > 10 * device.predicted_us[0].second);
}
