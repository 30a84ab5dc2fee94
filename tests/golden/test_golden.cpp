// Replays the traces and outputs an H200 recorded (tests/data/golden, written by
// tests/gpu/record_golden.cpp) against the simulator, so CI without a GPU still holds the kernel's
// schedule and numbers to the model: schedule identity for static schedulers, the tile set for the
// queued one, and every tile's O/LSE vs sim::tiled_attention on the regenerated inputs.
#include <doctest/doctest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/describe.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"
#include "tilesched/sim/trace_io.hpp"

using namespace tilesched;

namespace {

const std::string kDir = TILESCHED_GOLDEN_DIR;

struct Golden {
  std::string name;
  std::uint64_t seed = 0;
  Trace trace;
  std::vector<float> o, lse;
  bool o_has_poison = false;
};

std::vector<Golden> load_all() {
  const auto manifest = nlohmann::json::parse(sim::read_file(kDir + "/manifest.json"));
  std::vector<Golden> out;
  for (const auto& m : manifest) {
    Golden g;
    g.name = m.at("name").get<std::string>();
    g.seed = m.at("seed").get<std::uint64_t>();
    g.trace = sim::read_trace(kDir + "/" + m.at("trace").get<std::string>());
    const std::string o_bytes = sim::read_file(kDir + "/" + m.at("o_bf16").get<std::string>());
    const std::string lse_bytes = sim::read_file(kDir + "/" + m.at("lse_f32").get<std::string>());
    g.o.resize(o_bytes.size() / 2);
    for (std::size_t i = 0; i < g.o.size(); ++i) {
      std::uint16_t b;
      std::memcpy(&b, o_bytes.data() + 2 * i, 2);
      g.o_has_poison |= b == 0xFFFF;
      g.o[i] = sim::bf16_bits_to_float(b);
    }
    g.lse.resize(lse_bytes.size() / 4);
    std::memcpy(g.lse.data(), lse_bytes.data(), g.lse.size() * 4);
    out.push_back(std::move(g));
  }
  return out;
}

// Tiles whose recorded O/LSE are off the simulator's (or NaN), one sentence each.
std::vector<std::string> output_problems(const Golden& g) {
  const sim::AttentionInputs in = sim::make_inputs(g.trace.workload, g.seed);
  return sim::check_outputs(g.trace, in, g.o, g.lse).failures;
}

}  // namespace

TEST_CASE("golden H200 traces and outputs agree with the simulator") {
  const std::vector<Golden> all = load_all();
  REQUIRE(all.size() >= 5);
  for (const Golden& g : all) {
    INFO(g.name, " (", g.trace.device, ", ", g.trace.created, ")");
    CHECK(g.trace.source == "gpu");
    const Workload& w = g.trace.workload;
    CHECK(g.o.size() == w.q_elements());
    CHECK(g.lse.size() == w.lse_elements());
    CHECK_FALSE(g.o_has_poison);
    for (const auto& p : sim::schedule_differences(sim::replay(w), g.trace)) FAIL_CHECK(p);
    for (const auto& p : output_problems(g)) FAIL_CHECK(p);
  }
}

TEST_CASE("the golden check notices a wrong schedule and a wrong tile") {
  Golden g = load_all().front();
  const Trace sim_trace = sim::replay(g.trace.workload);
  // Two CTAs that swapped their first tiles are a different schedule.
  Trace swapped = g.trace;
  REQUIRE(swapped.events.size() >= 2);
  std::size_t other = 1;
  while (other < swapped.events.size() && swapped.events[other].cta == swapped.events[0].cta)
    ++other;
  REQUIRE(other < swapped.events.size());
  std::swap(swapped.events[0].linear_idx, swapped.events[other].linear_idx);
  CHECK_FALSE(sim::schedule_differences(sim_trace, swapped).empty());
  // One tile's output scaled by 2 is out of tolerance, and the message names it.
  const TraceEvent& e = g.trace.events.front();
  const Workload& w = g.trace.workload;
  const u32 row = sim::event_first_row(w, e);
  const std::size_t at = (std::size_t(row) * w.num_q_heads + e.head_idx) * w.head_dim;
  for (u32 i = 0; i < w.head_dim; ++i) g.o[at + i] *= 2.f;
  const auto problems = output_problems(g);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find(sim::describe_tile(e)) != std::string::npos);
}
