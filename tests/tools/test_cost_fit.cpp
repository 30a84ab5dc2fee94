// fit: coefficients recovered from synthetic "measured" traces, head_dims kept from the base
// profile, the makespan comparison, and the negative coefficients the command refuses to write.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <stdexcept>

#include "cli/cost_fit.hpp"
#include "test_support.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/workload_io.hpp"
#include "tilesched/splitmix64.hpp"

using namespace tilesched;

namespace {

// The small workload (head_dim 64) in KV blocks of 128 keys, the built-in bases' block, with
// longer key sequences so that the causal diagonals (bottom-right aligned) do not all span one
// block as they would with BM = BN and keys = queries: the masked cost stays determined.
Workload workload_128(SchedulerKind s = SchedulerKind::Tile) {
  Workload w = test::small_workload(s);
  w.block_n = 128;
  w.kv_lens = {350, 1070, 159};
  return w;
}

// Traces of the small workload timed by `truth`, as if measured on a GPU.
std::vector<cli::LabelledTrace> measured(const sim::CostModel& truth) {
  std::vector<cli::LabelledTrace> traces;
  for (const SchedulerKind s : {SchedulerKind::Tile, SchedulerKind::Queued}) {
    Trace t = sim::replay(workload_128(s), truth);
    t.source = "gpu";
    traces.push_back({"trace_" + strategy_name(t.workload), t});
  }
  return traces;
}

// A fit of tile costs only (another tile height, or a scheduler's entry): no sharing or launch
// fitted, and every trace, timed by the model fitted, replayed exactly.
void check_only_tile_costs_fitted(const cli::CostFitReport& r) {
  CHECK(r.sharing.empty());
  CHECK(r.launches.empty());
  for (const cli::MakespanComparison& c : r.makespans) {
    CHECK(c.fitted);
    CHECK(c.predicted_us == doctest::Approx(c.measured_us).epsilon(1e-9));
  }
}

sim::CostModel model_64(sim::CostCoefficients k) {
  sim::CostModel m;
  m.device = "truth";
  m.by_head_dim[64] = k;
  return m;
}

}  // namespace

TEST_CASE("fit recovers the coefficients that timed the traces and keeps the base's others") {
  const sim::CostCoefficients truth{1.25, 0.75, 1.5};
  const sim::CostModel base = sim::CostModel::builtin("h100");
  const cli::CostFitReport r = cli::fit_cost_model(measured(model_64(truth)), base, "lab-h200");
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].head_dim == 64);
  const sim::CostCoefficients& k = r.model.by_head_dim.at(64);
  CHECK(k.fixed_us == doctest::Approx(truth.fixed_us).epsilon(1e-9));
  CHECK(k.us_per_block == doctest::Approx(truth.us_per_block).epsilon(1e-9));
  CHECK(k.us_per_masked_block == doctest::Approx(truth.us_per_masked_block).epsilon(1e-9));
  CHECK(r.model.device == "lab-h200");
  CHECK(r.model.by_head_dim.at(128) == base.by_head_dim.at(128));
  CHECK(r.model.by_head_dim.at(256) == base.by_head_dim.at(256));
  CHECK(r.negative_coefficients.empty());

  // The exact model replays every trace to its measured makespan.
  REQUIRE(r.makespans.size() == 2);
  CHECK(r.makespans[1].strategy == "queued/default");
  for (const cli::MakespanComparison& c : r.makespans) {
    CHECK(c.measured_us > 0);
    CHECK(c.predicted_us == doctest::Approx(c.measured_us).epsilon(1e-9));
  }
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("      64            128     1.2500       0.7500        1.5000") !=
        std::string::npos);
  CHECK(text.find("trace_queued/default  (queued/default)") != std::string::npos);
}

TEST_CASE("fit reports negative coefficients instead of clamping them") {
  // Tiles that get faster with more masked blocks: the fit says so.
  std::vector<cli::LabelledTrace> traces = measured(model_64({1.0, 2.0, 3.0}));
  for (cli::LabelledTrace& t : traces)
    for (TraceEvent& e : t.trace.events) {
      const TileCost c = sim::event_tile_cost(t.trace.workload, e);
      e.end_us = e.start_us + 40.0 + 2.0 * double(c.kv_blocks - c.masked_blocks) -
                 0.5 * double(c.masked_blocks);
    }
  const cli::CostFitReport r = cli::fit_cost_model(traces, sim::CostModel::builtin("h200"), "lab");
  CHECK(r.model.by_head_dim.at(64).us_per_masked_block == doctest::Approx(-0.5));
  REQUIRE(r.negative_coefficients.size() == 1);
  CHECK(r.negative_coefficients[0] == "head_dim 64: us_per_masked_block = -0.5");
}

TEST_CASE("fit without traces, or with traces that leave a coefficient open, says why") {
  CHECK_THROWS_WITH_AS(cli::fit_cost_model({}, sim::CostModel::builtin("h200"), "x"),
                       "cannot fit a cost model: no traces given", std::invalid_argument);
  Workload w = workload_128();
  w.mask = Mask::None;
  w.q_lens = {256, 256};  // every tile: 2 unmasked blocks of 128 keys, none masked
  w.kv_lens.clear();
  Trace t = sim::replay(w);
  t.source = "gpu";
  std::string message = "<no exception>";
  try {
    cli::fit_cost_model({{"flat", t}}, sim::CostModel::builtin("h200"), "x");
  } catch (const std::invalid_argument& e) {
    message = e.what();
  }
  CHECK(message.find("us_per_block cannot be determined: every tile has 2 unmasked KV blocks") !=
        std::string::npos);
}

TEST_CASE("fit: traces of another KV block than the base's, and traces of several") {
  // Traces counting blocks of 64 keys against the h200 base, whose per-block costs are per 128:
  // the written table costs 64-key blocks throughout, the base's kept head dims rescaled.
  std::vector<cli::LabelledTrace> traces;
  Trace t = sim::replay(test::small_workload(), model_64({1.25, 0.75, 1.5}));  // BN 64
  REQUIRE(t.workload.block_n == 64);
  t.source = "gpu";
  traces.push_back({"bn64.json", t});
  const sim::CostModel base = sim::CostModel::builtin("h200");
  const cli::CostFitReport r = cli::fit_cost_model(traces, base, "lab");
  CHECK(r.model.block_n == 64);
  CHECK(r.base_block_n_rescaled_from == 128);
  CHECK(r.model.by_head_dim.at(128).fixed_us == base.by_head_dim.at(128).fixed_us);
  CHECK(r.model.by_head_dim.at(128).us_per_block ==
        doctest::Approx(base.by_head_dim.at(128).us_per_block / 2));
  // A 128-key workload costs the same under the base and under the rescaled table.
  Workload w = sim::default_workload();
  CHECK(sim::compute_metrics(sim::replay(w, r.model)).makespan_us ==
        doctest::Approx(sim::compute_metrics(sim::replay(w, base)).makespan_us));
  CHECK(cli::format_cost_fit_report(r).find(
            "KV blocks of 64 keys, as the traces count them; the base's per-block costs, per 128 "
            "keys, rescaled to them") != std::string::npos);
  // Traces of two block sizes cannot make one table.
  Trace other = sim::replay(workload_128(), model_64({1.25, 0.75, 1.5}));
  other.source = "gpu";
  traces.push_back({"bn128.json", other});
  CHECK_THROWS_WITH_AS(cli::fit_cost_model(traces, base, "lab"),
                       "the traces count KV blocks of different sizes: BN 64 (bn64.json) and BN "
                       "128 (bn128.json); a cost table's per-block costs are per block of one "
                       "size, so fit them separately",
                       std::invalid_argument);
}

TEST_CASE("fit skips a head_dim its traces cannot determine and fits the others") {
  const sim::CostModel truth = model_64({1.25, 0.75, 1.5});
  std::vector<cli::LabelledTrace> traces = measured(truth);
  Workload flat = workload_128();
  flat.head_dim = 128;
  flat.mask = Mask::None;
  flat.q_lens = {256, 256};  // every tile: 2 unmasked blocks, none masked
  flat.kv_lens.clear();
  Trace t = sim::replay(flat);
  t.source = "gpu";
  traces.push_back({"flat_128", t});
  const sim::CostModel base = sim::CostModel::builtin("h200");
  const cli::CostFitReport report = cli::fit_cost_model(traces, base, "lab");
  REQUIRE(report.fits.size() == 1);
  CHECK(report.fits[0].head_dim == 64);
  REQUIRE(report.skipped.size() == 1);
  CHECK(report.skipped[0].find("cannot fit head_dim 128 at BM 128: ") == 0);
  // The skipped head_dim keeps the base's coefficients, and the report says so.
  CHECK(report.model.coefficients(128).us_per_block == base.coefficients(128).us_per_block);
  CHECK(cli::format_cost_fit_report(report).find("flat_128  (tile/default)\n      measured") !=
        std::string::npos);
  CHECK(cli::format_cost_fit_report(report).find("(head_dim not fitted: base coefficients)") !=
        std::string::npos);
}

TEST_CASE("fit --launch-only: the base's tile costs kept, the CTA launch fitted against them") {
  // A device of 5 SMs whose CTAs take 0.6 µs to start in a freed slot; the small workload's
  // transient grid of 96 CTAs refills every slot many times.
  sim::CostModel truth = model_64({1.25, 0.75, 1.5});
  truth.multiprocessors = 5;
  truth.cta_launch_us_by_head_dim[64] = 0.6;
  std::vector<cli::LabelledTrace> traces = measured(truth);
  Trace transient = sim::replay(workload_128(SchedulerKind::Transient), truth);
  transient.source = "gpu";
  traces.push_back({"transient", transient});

  sim::CostModel base = truth;
  base.cta_launch_us_by_head_dim.clear();
  const cli::CostFitReport r = cli::fit_cost_model(traces, base, "lab", cli::FitScope::LaunchOnly);
  CHECK(r.fits.empty());
  CHECK(r.model.by_head_dim == base.by_head_dim);
  REQUIRE(r.launches.size() == 1);
  CHECK(r.launches[0].fitted);
  CHECK(r.model.cta_launch_us(64) == doctest::Approx(0.6).epsilon(0.03));
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("tile costs and sharing: kept from the base (only the launch fitted)") !=
        std::string::npos);
  CHECK(text.find("      64: fitted: 0.") != std::string::npos);
  // The whole fit learns the launch too, against the tile costs it fitted.
  const cli::CostFitReport all = cli::fit_cost_model(traces, base, "lab");
  CHECK(all.model.cta_launch_us(64) == doctest::Approx(0.6).epsilon(0.03));

  // Tile costs slower than the traces ran leave a negative launch: reported, for the command to
  // refuse writing it.
  sim::CostModel slow = base;
  slow.by_head_dim[64].fixed_us += 5.0;
  const cli::CostFitReport negative =
      cli::fit_cost_model(traces, slow, "lab", cli::FitScope::LaunchOnly);
  REQUIRE(negative.negative_launches.size() == 1);
  CHECK(negative.negative_launches[0].find("head_dim 64: cta_launch_us = -") == 0);

  // Without a transient trace there is nothing to fit.
  traces.pop_back();
  CHECK_THROWS_WITH_AS(cli::fit_cost_model(traces, base, "lab", cli::FitScope::LaunchOnly),
                       "no head_dim's CTA launch could be fitted: cannot fit the CTA launch at "
                       "head_dim 64: no transient trace of it (record one: its one-tile CTAs "
                       "refill the SMs' slots)",
                       std::invalid_argument);
}

TEST_CASE("fit puts another tile height of a head_dim beside its entry, not over it") {
  // The base records BM 128 at d = 64; traces at BM 192 fit a tile_heights entry and leave the
  // BM 128 coefficients, sharing and launch as they were.
  const sim::CostModel base = sim::CostModel::builtin("h200");
  REQUIRE(base.block_m_by_head_dim.at(64) == 128);
  sim::CostModel truth = base;
  truth.by_tile_height[64][192] = {2.5, 1.75, 2.25};
  std::vector<cli::LabelledTrace> traces;
  for (const Mask mask : {Mask::Causal, Mask::None}) {
    Workload w = sim::default_workload();
    w.head_dim = 64;
    w.block_m = 192;
    w.mask = mask;
    Trace t = sim::replay(w, truth);
    t.source = "gpu";
    traces.push_back({mask == Mask::Causal ? "bm192_causal" : "bm192_none", t});
  }
  const cli::CostFitReport r = cli::fit_cost_model(traces, base, "lab");
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].block_m == 192);
  CHECK_FALSE(r.fits[0].own_entry);
  CHECK(r.model.by_head_dim.at(64) == base.by_head_dim.at(64));
  CHECK(r.model.block_m_by_head_dim.at(64) == 128);
  CHECK(r.model.cta_launch_us(64) == base.cta_launch_us(64));
  const sim::CostCoefficients& k = r.model.by_tile_height.at(64).at(192);
  CHECK(k.us_per_block == doctest::Approx(1.75).epsilon(1e-9));
  CHECK(k.us_per_masked_block == doctest::Approx(2.25).epsilon(1e-9));
  check_only_tile_costs_fitted(r);
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("      64        192 (h)") != std::string::npos);
  CHECK(text.find("another tile height of the head_dim") != std::string::npos);

  // A base that records no height takes the traces' smallest as the entry's own.
  sim::CostModel unrecorded = base;
  unrecorded.block_m_by_head_dim.clear();
  unrecorded.by_tile_height.clear();
  const cli::CostFitReport own = cli::fit_cost_model(traces, unrecorded, "lab");
  REQUIRE(own.fits.size() == 1);
  CHECK(own.fits[0].own_entry);
  CHECK(own.model.block_m_by_head_dim.at(64) == 192);
  CHECK(own.model.by_head_dim.at(64).us_per_block == doctest::Approx(1.75).epsilon(1e-9));
}

TEST_CASE("fit --scheduler: one kind's kernel gets its own entry, the rest kept") {
  // d = 128's queued kernel costs its own (the GPU runs a narrow first block there): traces of it
  // fit the head dim's `schedulers.queued` entry and leave the entry, sharing and launch alone.
  const sim::CostModel base = sim::CostModel::builtin("h200");
  sim::CostModel truth = base;
  truth.by_scheduler[128][SchedulerKind::Queued] = {2.5, 1.3, 1.45};
  std::vector<cli::LabelledTrace> traces;
  for (const Mask mask : {Mask::Causal, Mask::None}) {
    Workload w = sim::default_workload();
    w.head_dim = 128;
    w.block_m = 128;
    w.scheduler = SchedulerKind::Queued;
    w.mask = mask;
    Trace t = sim::replay(w, truth);
    t.source = "gpu";
    traces.push_back({mask == Mask::Causal ? "queued_causal" : "queued_none", t});
  }
  const cli::CostFitReport r =
      cli::fit_cost_model(traces, base, "lab", cli::FitScope::Scheduler, SchedulerKind::Queued);
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].head_dim == 128);
  CHECK(r.fits[0].scheduler == SchedulerKind::Queued);
  const sim::CostCoefficients& k = r.model.by_scheduler.at(128).at(SchedulerKind::Queued);
  CHECK(k.fixed_us == doctest::Approx(2.5).epsilon(1e-9));
  CHECK(k.us_per_block == doctest::Approx(1.3).epsilon(1e-9));
  CHECK(k.us_per_masked_block == doctest::Approx(1.45).epsilon(1e-9));
  CHECK(r.model.by_head_dim == base.by_head_dim);
  CHECK(r.model.by_tile_height == base.by_tile_height);
  CHECK(r.model.cta_launch_us(128) == base.cta_launch_us(128));
  check_only_tile_costs_fitted(r);
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("     128     128 queued") != std::string::npos);
  CHECK(text.find("sharing and launch kept from the base") != std::string::npos);
  // Written and read back.
  CHECK(sim::CostModel::from_json(r.model.to_json()).by_scheduler == r.model.by_scheduler);

  // A trace of another kind, or of a height other than the entry's, is refused by name.
  std::vector<cli::LabelledTrace> mixed = traces;
  mixed[1].trace.workload.scheduler = SchedulerKind::Tile;
  CHECK_THROWS_WITH_AS(
      cli::fit_cost_model(mixed, base, "lab", cli::FitScope::Scheduler, SchedulerKind::Queued),
      "'queued_none' ran the tile scheduler: a fit of the queued kernel's costs takes its traces "
      "only",
      std::invalid_argument);
  std::vector<cli::LabelledTrace> tall = traces;
  tall[0].trace.workload.block_m = 192;
  CHECK_THROWS_WITH_AS(
      cli::fit_cost_model(tall, base, "lab", cli::FitScope::Scheduler, SchedulerKind::Queued),
      "'queued_causal' ran BM 192 at head_dim 128, whose entry in the base is of BM 128: a "
      "scheduler's coefficients are of the entry's own tile height",
      std::invalid_argument);
}

namespace {

// Paged traces of the small workload (head_dim 64, BN 128) timed by `truth`, one per page size.
std::vector<cli::LabelledTrace> measured_paged(const sim::CostModel& truth,
                                               const std::vector<u32>& page_sizes) {
  std::vector<cli::LabelledTrace> traces;
  for (const u32 page_size : page_sizes)
    for (const SchedulerKind s : {SchedulerKind::Tile, SchedulerKind::Queued}) {
      Workload w = workload_128(s);
      w.page_size = page_size;
      Trace t = sim::replay(w, truth);
      t.source = "gpu";
      traces.push_back({fmt::format("paged{}_{}", page_size, strategy_name(w)), t});
    }
  return traces;
}

}  // namespace

TEST_CASE("fit: paged traces fit the paged factor against the contiguous traces' costs") {
  const sim::CostCoefficients truth{1.25, 0.75, 1.5};
  sim::CostModel gen = model_64(truth);
  gen.paged_by_head_dim[64] = {{1, 1.1}, {8, 1.5}};
  std::vector<cli::LabelledTrace> traces = measured(gen);
  for (cli::LabelledTrace& t : measured_paged(gen, {16, 256})) traces.push_back(t);
  const cli::CostFitReport r = cli::fit_cost_model(traces, sim::CostModel::builtin("h200"), "lab");
  // The contiguous coefficients come from the traces without pages, exactly.
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].fit.samples == traces[0].trace.events.size() + traces[1].trace.events.size());
  const sim::CostCoefficients& k = r.model.by_head_dim.at(64);
  CHECK(k.fixed_us == doctest::Approx(truth.fixed_us).epsilon(1e-9));
  CHECK(k.us_per_block == doctest::Approx(truth.us_per_block).epsilon(1e-9));
  CHECK(k.us_per_masked_block == doctest::Approx(truth.us_per_masked_block).epsilon(1e-9));
  // One factor per box count: pages of 16 keys load a 128-key block as 8 boxes, pages of 256 as 1.
  REQUIRE(r.paged.size() == 2);
  CHECK(r.paged[0].boxes == 1);
  CHECK(r.paged[1].boxes == 8);
  CHECK_FALSE(r.paged[1].contiguous_from_base);
  CHECK(r.paged[1].fit.samples == traces[2].trace.events.size() + traces[3].trace.events.size());
  CHECK(r.paged[1].fit.relative_rms_error < 1e-9);
  CHECK(r.model.paged_by_head_dim.at(64).at(1) == doctest::Approx(1.1).epsilon(1e-9));
  CHECK(r.model.paged_by_head_dim.at(64).at(8) == doctest::Approx(1.5).epsilon(1e-9));
  CHECK(r.invalid_paged_factors.empty());
  // The fitted table replays the paged traces too.
  REQUIRE(r.makespans.size() == 6);
  for (const cli::MakespanComparison& c : r.makespans) {
    CAPTURE(c.label);
    CHECK(c.fitted);
    CHECK(c.predicted_us == doctest::Approx(c.measured_us).epsilon(1e-9));
  }
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("paged KV caches (factor on the per-block costs of blocks loaded as `boxes` TMA "
                  "boxes):") != std::string::npos);
  CHECK(text.find("      64      8   1.5000 ") != std::string::npos);
  CHECK(text.find("this fit's") != std::string::npos);
  // The table round-trips through a cost file.
  CHECK(sim::CostModel::from_json(r.model.to_json()).paged_by_head_dim ==
        r.model.paged_by_head_dim);

  // With ±0.2 µs of noise on every tile the factors land within a few per cent.
  std::vector<cli::LabelledTrace> noisy = traces;
  std::uint64_t state = 3;
  for (cli::LabelledTrace& t : noisy)
    for (TraceEvent& e : t.trace.events)
      e.end_us += (double(splitmix64_next(state) % 401) - 200.0) / 1000.0;
  const cli::CostFitReport n = cli::fit_cost_model(noisy, sim::CostModel::builtin("h200"), "lab");
  CHECK(n.model.paged_by_head_dim.at(64).at(1) == doctest::Approx(1.1).epsilon(0.03));
  CHECK(n.model.paged_by_head_dim.at(64).at(8) == doctest::Approx(1.5).epsilon(0.03));
  CHECK(n.paged[1].fit.relative_rms_error > 0.001);
  CHECK(n.paged[1].fit.relative_rms_error < 0.05);
}

TEST_CASE("fit: paged traces alone take the per-block costs of a base named, else are refused") {
  const sim::CostCoefficients truth{1.25, 0.75, 1.5};
  sim::CostModel base = model_64(truth);
  base.block_n = 128;
  sim::CostModel gen = base;
  gen.paged_by_head_dim[64] = {{8, 1.5}};
  const std::vector<cli::LabelledTrace> traces = measured_paged(gen, {16});
  const cli::CostFitReport r = cli::fit_cost_model(traces, base, "lab");
  CHECK(r.fits.empty());
  REQUIRE(r.paged.size() == 1);
  CHECK(r.paged[0].contiguous_from_base);
  CHECK(r.model.paged_by_head_dim.at(64).at(8) == doctest::Approx(1.5).epsilon(1e-9));
  CHECK(r.model.by_head_dim.at(64) == truth);
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("kept from the base (only paged traces)") != std::string::npos);
  CHECK(text.find("the base's") != std::string::npos);

  // The default profile, not named, may be another kernel or device: refused, naming why.
  CHECK_THROWS_WITH_AS(
      cli::fit_cost_model(traces, base, "lab", cli::FitScope::Everything, SchedulerKind::Tile,
                          false),
      "cannot fit the paged factor of head_dim 64: the factor scales the contiguous per-block "
      "costs, and no trace without pages of it was fitted, nor a base table named (--base "
      "PROFILE or --base-model FILE) to take them from; add traces of the same kernel recorded "
      "without --page-size, or name the table fitted to them",
      std::invalid_argument);
  // Contiguous traces beside them need no base.
  std::vector<cli::LabelledTrace> both = measured(gen);
  for (const cli::LabelledTrace& t : traces) both.push_back(t);
  CHECK(
      cli::fit_cost_model(both, base, "lab", cli::FitScope::Everything, SchedulerKind::Tile, false)
          .model.paged_by_head_dim.at(64)
          .at(8) == doctest::Approx(1.5));
  // A base whose per-block costs are far from the paged tiles' gives a factor no file holds.
  sim::CostModel slow = base;
  slow.by_head_dim[64].us_per_block /= 1000;
  slow.by_head_dim[64].us_per_masked_block /= 1000;
  const cli::CostFitReport off = cli::fit_cost_model(traces, slow, "lab");
  REQUIRE(off.invalid_paged_factors.size() == 1);
  CHECK(off.invalid_paged_factors[0].rfind("head_dim 64, 8 boxes: factor = ", 0) == 0);
  // The scopes that fit contiguous costs refuse paged traces.
  CHECK_THROWS_WITH_AS(
      cli::fit_cost_model(traces, base, "lab", cli::FitScope::Scheduler, SchedulerKind::Tile),
      "'paged16_tile/default' ran a paged KV cache (page_size 16): --scheduler "
      "fits contiguous traces only; fit paged traces without it, against the "
      "per-block costs of the table it writes",
      std::invalid_argument);
}

namespace {

// Decode batches at head_dim 64 (32 query / 8 KV heads, one new token over 4096 keys on 132
// CTAs), whole tiles and split_kv's pieces, timed by `truth`, as if measured on a GPU.
std::vector<cli::LabelledTrace> measured_decodes(const sim::CostModel& truth) {
  std::vector<cli::LabelledTrace> traces;
  for (const SchedulerKind s : {SchedulerKind::Tile, SchedulerKind::SplitKv}) {
    Workload w;
    w.decoding = true;
    w.q_lens.assign(64, 1);
    w.kv_lens.assign(64, 4096);
    w.head_dim = 64;
    w.scheduler = s;
    Trace t = sim::replay(w, truth);
    t.source = "gpu";
    t.combine_us = 0;  // a GPU trace ends with the kernel's last tile
    traces.push_back({"decode_" + strategy_name(w), t});
  }
  return traces;
}

}  // namespace

TEST_CASE("fit: decode traces and pieces fit the HBM bandwidth and the save per row") {
  const sim::CostCoefficients truth{1.25, 0.75, 1.5};
  sim::CostModel gen = model_64(truth);
  gen.block_n = 128;
  // 132 one-token tiles ask 132 x 32 KiB / 0.75 us a block, 5.8 TB/s: past 2 TB/s.
  gen.hbm_bytes_per_us = 2e6;
  gen.saved_row_us_by_head_dim[64] = 0.04;
  std::vector<cli::LabelledTrace> traces = measured(gen);
  for (cli::LabelledTrace& t : measured_decodes(gen)) traces.push_back(t);
  const cli::CostFitReport r = cli::fit_cost_model(traces, sim::CostModel::builtin("h200"), "lab");
  // The tile costs come from the prefill traces alone, exactly.
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].fit.samples == traces[0].trace.events.size() + traces[1].trace.events.size());
  const sim::CostCoefficients& k = r.model.by_head_dim.at(64);
  CHECK(k.us_per_block == doctest::Approx(truth.us_per_block).epsilon(1e-9));
  REQUIRE(r.streams);
  CHECK_FALSE(r.streams->tiles_from_base);
  CHECK(r.streams->fit.decoding_traces == 2);
  CHECK(r.model.hbm_bytes_per_us == doctest::Approx(2e6).epsilon(0.01));
  CHECK(r.model.saved_row_us(64) == doctest::Approx(0.04).epsilon(0.02));
  CHECK(r.invalid_streams.empty());
  // The fitted table replays the decode traces too.
  REQUIRE(r.makespans.size() == 4);
  for (const cli::MakespanComparison& c : r.makespans) {
    CAPTURE(c.label);
    CHECK(c.fitted);
    CHECK(c.predicted_us == doctest::Approx(c.measured_us).epsilon(0.01));
  }
  const std::string text = cli::format_cost_fit_report(r);
  CHECK(text.find("decode streams and pieces of split tiles (against the tile costs of this "
                  "fit):") != std::string::npos);
  CHECK(text.find("HBM bandwidth: fitted: ") != std::string::npos);
  CHECK(text.find("decode, later piece, past the bandwidth") != std::string::npos);
  // The table round-trips through a cost file.
  const sim::CostModel back = sim::CostModel::from_json(r.model.to_json());
  CHECK(back.hbm_bytes_per_us == r.model.hbm_bytes_per_us);
  CHECK(back.saved_row_us_by_head_dim == r.model.saved_row_us_by_head_dim);

  // Decode traces alone take the tile costs of a base named, else are refused.
  sim::CostModel base = model_64(truth);
  base.block_n = 128;
  const std::vector<cli::LabelledTrace> decodes = measured_decodes(gen);
  const cli::CostFitReport alone = cli::fit_cost_model(decodes, base, "lab");
  CHECK(alone.fits.empty());
  REQUIRE(alone.streams);
  CHECK(alone.streams->tiles_from_base);
  CHECK(alone.model.hbm_bytes_per_us == doctest::Approx(2e6).epsilon(0.01));
  CHECK(cli::format_cost_fit_report(alone).find(
            "kept from the base (only decoding traces and pieces)") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      cli::fit_cost_model(decodes, base, "lab", cli::FitScope::Everything, SchedulerKind::Tile,
                          false),
      "cannot fit the HBM bandwidth and the pieces' saves of head_dim 64: they are measured "
      "against the tile costs, and no prefill trace of it was fitted, nor a base table named "
      "(--base PROFILE or --base-model FILE) to take them from; add prefill traces of the same "
      "kernel, or name the table fitted to them",
      std::invalid_argument);
  // Against tile costs ten times slower per block, the pieces ran faster than tiles of their
  // blocks: a negative save, which no cost file holds.
  sim::CostModel slow = model_64({1.25, 7.5, 15});
  slow.block_n = 128;
  const cli::CostFitReport wrong = cli::fit_cost_model(decodes, slow, "lab");
  REQUIRE(wrong.invalid_streams.size() == 1);
  CHECK(wrong.invalid_streams[0].find("head_dim 64: us_per_saved_row = -") == 0);
}
