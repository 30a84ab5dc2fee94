// Cost tables (built in vs shipped files, interpolation, errors) and the least-squares fit.
#include <doctest/doctest.h>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;

TEST_CASE("built-in cost tables equal the shipped data files") {
  for (const std::string p : {"h200", "h100"}) {
    const sim::CostModel builtin = sim::CostModel::builtin(p);
    const sim::CostModel file =
        sim::CostModel::load(std::string(TILESCHED_SIM_DATA_DIR) + "/cost_" + p + ".json");
    CHECK(builtin.device == p);
    CHECK(file.device == p);
    CHECK(builtin.by_head_dim == file.by_head_dim);
    CHECK(builtin.by_head_dim.count(128) == 1);
  }
  // The H100 table is the H200 fit slowed down (lower sustained clocks), never faster.
  const auto k = sim::CostModel::builtin("h200").coefficients(128);
  CHECK(sim::CostModel::builtin("h100").coefficients(128).us_per_block > k.us_per_block);
}

TEST_CASE("the built-in H200 table predicts traces measured on an H200") {
  // tests/data/h200 holds traces recorded by tools/bench/record_cost_traces.sh (2026-11-29). The
  // table was fitted to them and their siblings; replaying each trace's workload with it must land
  // near the measured makespan, or the simulator's timelines say nothing about the device.
  for (const std::string name : {"h200_d64_causal", "h200_d128_none", "h200_d256_causal"}) {
    INFO(name);
    const Trace measured =
        sim::read_trace(std::string(TILESCHED_TEST_DATA_DIR) + "/h200/" + name + ".trace.json");
    REQUIRE(measured.source == "gpu");
    const Trace predicted = sim::replay(measured.workload, sim::CostModel::builtin("h200"));
    REQUIRE(predicted.events.size() == measured.events.size());
    const double m = sim::compute_metrics(measured).makespan_us;
    const double p = sim::compute_metrics(predicted).makespan_us;
    CHECK(p == doctest::Approx(m).epsilon(0.03));
  }
}

TEST_CASE("coefficients between and outside the table") {
  sim::CostModel m;
  m.device = "x";
  m.by_head_dim[64] = {1, 2, 3};
  m.by_head_dim[128] = {3, 4, 7};
  CHECK(m.coefficients(96) == sim::CostCoefficients{2, 3, 5});      // linear in between
  CHECK(m.coefficients(32) == sim::CostCoefficients{0.5, 1, 1.5});  // scaled below
  CHECK(m.coefficients(256) == sim::CostCoefficients{6, 8, 14});    // scaled above
  Workload w;
  w.head_dim = 128;
  CHECK(m.tile_time_us(w, TileCost{5, 2}) == 3 + 4 * 3 + 7 * 2);
}

TEST_CASE("cost tables: unknown profile and bad files have clear messages") {
  CHECK(contains(invalid_argument_text([] { sim::CostModel::builtin("a100"); }),
                 "unknown cost profile \"a100\" (built in: h200, h100"));
  using nlohmann::json;
  const json good = sim::CostModel::builtin("h200").to_json();
  CHECK(sim::CostModel::from_json(good).by_head_dim == sim::CostModel::builtin("h200").by_head_dim);
  json j = good;
  j["head_dims"]["128"]["us_per_block"] = -1;
  CHECK(contains(invalid_argument_text([&] { sim::CostModel::from_json(j); }),
                 "'head_dims.128.us_per_block': must not be negative"));
  j = good;
  j["head_dims"]["abc"] = good["head_dims"]["128"];
  CHECK(contains(invalid_argument_text([&] { sim::CostModel::from_json(j); }),
                 "'head_dims.abc': key must be a head_dim"));
  j = good;
  j["head_dims"]["64"].erase("fixed_us");
  CHECK(contains(invalid_argument_text([&] { sim::CostModel::from_json(j); }),
                 "'head_dims.64.fixed_us': required field is missing"));
  j = good;
  j["format"] = "other";
  CHECK(contains(invalid_argument_text([&] { sim::CostModel::from_json(j); }), "'format'"));
}

TEST_CASE("fit recovers known coefficients from synthetic measured traces") {
  const sim::CostCoefficients truth128{1.7, 2.3, 3.1}, truth64{0.9, 1.2, 1.6};
  sim::CostModel gen;
  gen.device = "synthetic";
  gen.by_head_dim[64] = truth64;
  gen.by_head_dim[128] = truth128;
  std::vector<Trace> traces;
  Workload w = sim::default_workload();
  traces.push_back(sim::replay(w, gen));
  w.q_lens = {1000, 333, 4096};
  w.kv_lens = {1500, 333, 4096};
  w.scheduler = SchedulerKind::Queued;
  traces.push_back(sim::replay(w, gen));
  w.head_dim = 64;
  traces.push_back(sim::replay(w, gen));

  const sim::CostFit fit = sim::fit_cost(traces, 128);
  CHECK(fit.samples == traces[0].events.size() + traces[1].events.size());
  CHECK(fit.coefficients.fixed_us == doctest::Approx(truth128.fixed_us).epsilon(1e-9));
  CHECK(fit.coefficients.us_per_block == doctest::Approx(truth128.us_per_block).epsilon(1e-9));
  CHECK(fit.coefficients.us_per_masked_block ==
        doctest::Approx(truth128.us_per_masked_block).epsilon(1e-9));
  CHECK(fit.rms_residual_us < 1e-9);
  CHECK(fit.relative_rms_error < 1e-9);

  const sim::CostModel fitted = sim::CostModel::fit(traces, "measured");
  CHECK(fitted.device == "measured");
  REQUIRE(fitted.by_head_dim.size() == 2);
  CHECK(fitted.by_head_dim.at(64).us_per_block == doctest::Approx(truth64.us_per_block));

  // With deterministic noise (±0.2 µs) the fit still lands close.
  Rng rng(5);
  for (Trace& t : traces)
    for (TraceEvent& e : t.events) e.end_us += (double(rng.uniform(0, 400)) - 200.0) / 1000.0;
  const sim::CostFit noisy = sim::fit_cost(traces, 128);
  CHECK(noisy.coefficients.us_per_block == doctest::Approx(truth128.us_per_block).epsilon(0.02));
  CHECK(noisy.coefficients.us_per_masked_block ==
        doctest::Approx(truth128.us_per_masked_block).epsilon(0.02));
  CHECK(noisy.rms_residual_us > 0.05);
  // ±0.2 µs uniform noise has an RMS of ~0.115 µs; relative to tiles of several µs to tens of µs.
  CHECK(noisy.relative_rms_error > 0.001);
  CHECK(noisy.relative_rms_error < 0.05);
}

TEST_CASE("fit returns negative coefficients as fitted instead of clamping them") {
  // Measured times that fall with the block count: the fit must say so, not hide it.
  // Key tails as well as causal diagonals, so that the masked block counts vary.
  Workload w = sim::default_workload();
  w.q_lens = {1000, 333, 4096};
  w.kv_lens = {1500, 333, 4096};
  std::vector<Trace> traces = {sim::replay(w, flat_cost(1, 2, 3))};
  for (TraceEvent& e : traces[0].events) {
    const TileCost c = sim::event_tile_cost(w, e);
    e.end_us = e.start_us + 50.0 - 0.5 * double(c.kv_blocks - c.masked_blocks) +
               1.0 * double(c.masked_blocks);
  }
  const sim::CostFit fit = sim::fit_cost(traces, w.head_dim);
  CHECK(fit.coefficients.fixed_us == doctest::Approx(50.0));
  CHECK(fit.coefficients.us_per_block == doctest::Approx(-0.5));
  CHECK(fit.coefficients.us_per_masked_block == doctest::Approx(1.0));
}

TEST_CASE("fit refuses data that cannot determine the coefficients") {
  Workload w;
  w.q_lens = {1024, 1024};
  w.mask = Mask::None;  // every tile: 8 unmasked blocks, no masked ones
  const std::vector<Trace> same = {sim::replay(w)};
  const std::string message = invalid_argument_text([&] { sim::fit_cost(same, 128); });
  CHECK(contains(message, "do not determine all three coefficients"));
  CHECK(
      contains(message, "us_per_block cannot be determined: every tile has 8 unmasked KV blocks"));

  // Tiles of different lengths but none with a masked block: only the masked cost is open.
  w.q_lens = {1024, 512};
  const std::vector<Trace> unmasked = {sim::replay(w)};
  CHECK(contains(invalid_argument_text([&] { sim::fit_cost(unmasked, 128); }),
                 "us_per_masked_block cannot be determined: every tile has 0 masked KV blocks"));

  // Keys of 1000 (7 whole blocks + a tail) and 1024 (8 whole blocks): every tile has 8 blocks, so
  // each masked block replaces an unmasked one and the two per-block costs cannot be separated.
  w.q_lens = {128, 128};
  w.kv_lens = {1000, 1024};
  const std::vector<Trace> together = {sim::replay(w)};
  CHECK(contains(invalid_argument_text([&] { sim::fit_cost(together, 128); }),
                 "us_per_block and us_per_masked_block cannot be told apart"));
  CHECK(contains(invalid_argument_text([&] { sim::fit_cost(same, 64); }),
                 "0 measured tiles, need at least 3"));
}
