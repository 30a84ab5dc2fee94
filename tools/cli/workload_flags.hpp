// The workload flags shared by `sim`, `compare` and `run`: an optional workload file and flags
// that override or define its fields. Registration and resolution live together so a flag cannot
// be added without being applied.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/workload.hpp"
#include "viz/descriptions.hpp"

namespace tilesched::cli {

// Each field holds its flag's value as parsed; empty (or false) when the flag was not given.
struct WorkloadFlags {
  std::string workload_file;
  std::vector<u32> q_lens, kv_lens;
  std::optional<u32> batch, seq_len, heads, kv_heads, head_dim, block_m, block_n, ctas;
  std::optional<Mask> mask;
  std::optional<SchedulerKind> scheduler;
  std::optional<Schedule> schedule;
  std::optional<RaggedMode> ragged;
  std::optional<std::uint64_t> l2_bytes;
  std::optional<u32> l2_min_rounds, page_size;
  std::optional<u32> split_kv_blocks;
  std::string cost_profile, cost_model_file;
  bool flip = false;
  bool decode = false;
  std::vector<u32> new_tokens;  // --decode: one for every sequence, or one per sequence
};

struct WorkloadFlagSet {
  bool strategy = true;    // --scheduler/--schedule/--flip (compare sets them itself)
  bool cost_model = true;  // --cost-model FILE (the GPU measures instead of predicting)
};

// Adds the positional WORKLOAD.json and the workload flags to `command`.
void add_workload_flags(CLI::App& command, WorkloadFlags& flags, WorkloadFlagSet set = {});

// The workload: the file (or the default workload), then every given flag applied on top, then
// validated. A file that cannot be read or is invalid throws std::runtime_error /
// std::invalid_argument (exit 1); a combination the flags make invalid throws UsageError
// (exit 2). Each flag's own value was checked while parsing. `origin`, when given, says who chose
// num_ctas.
Workload resolve_workload(const WorkloadFlags& flags, viz::CtaOrigin* origin = nullptr);

// --cost-model FILE when given, else the built-in profile the workload names.
sim::CostModel resolve_cost_model(const WorkloadFlags& flags, const Workload& w);

// How the output names that cost model, as the user would give it again: "cost profile h200"
// (the name --cost-profile takes) or "cost model 'FILE'".
std::string cost_model_label(const WorkloadFlags& flags, const Workload& w);

// What the simulator runs: the workload, with num_ctas = the cost model's SMs x CTAs per SM at its
// head_dim when neither --ctas nor the file chose one, the cost model, and a line saying which C
// (for transient: how many resident CTAs) it is and where it came from.
struct Simulation {
  Workload workload;
  sim::CostModel cost;
  std::string ctas_note;  // e.g. "C = 264: 132 SMs x 2 CTAs per SM at d = 128 (cost profile h200)"
};
Simulation resolve_simulation(const WorkloadFlags& flags);

}  // namespace tilesched::cli
