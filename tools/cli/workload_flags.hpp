// The workload flags shared by `sim`, `compare` and `run`: an optional workload file and flags
// that override or define its fields. Registration and resolution live together so a flag cannot
// be added without being applied.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::cli {

struct WorkloadFlags {
  CLI::App* command = nullptr;  // to ask which flags were given
  std::string workload_file;
  std::string q_lens, kv_lens, batch, seq_len, heads, kv_heads, head_dim, mask, block_m, block_n,
      scheduler, schedule, ctas, ragged, cost_profile, cost_model_file;
  bool flip = false;
};

struct WorkloadFlagSet {
  bool strategy = true;    // --scheduler/--schedule/--flip (compare sets them itself)
  bool cost_model = true;  // --cost-model FILE (the GPU measures instead of predicting)
};

// Adds the positional WORKLOAD.json and the workload flags to `command`.
void add_workload_flags(CLI::App& command, WorkloadFlags& flags, WorkloadFlagSet set = {});

// The workload: the file (or the default workload), then every given flag applied on top, then
// validated. A file that cannot be read or is invalid throws std::runtime_error /
// std::invalid_argument (exit 1); a bad flag or a combination the flags make invalid throws
// UsageError (exit 2).
Workload resolve_workload(const WorkloadFlags& flags);

// --cost-model FILE when given, else the built-in profile the workload names.
sim::CostModel resolve_cost_model(const WorkloadFlags& flags, const Workload& w);

}  // namespace tilesched::cli
