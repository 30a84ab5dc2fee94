// `tilesched suite-run`'s loop, apart from the device it measures on: every planned run measured,
// checked against the simulator's schedule, summarised and its median repeat's trace kept.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/run_size.hpp"
#include "cli/suite.hpp"
#include "cli/suite_results.hpp"
#include "gpu_commands.hpp"
#include "tilesched/sim/cost_model.hpp"

namespace tilesched::cli {

struct SuiteRunSettings {
  std::string strategies = "all";  // plan_suite's filter
  std::vector<CtaChoice> ctas = {{CtaChoice::Kind::Sms, 0}, {CtaChoice::Kind::Resident, 0}};
  int repeats = 3;
  std::string out_dir;
  std::size_t max_pack_bytes = 15u << 20;  // a device lends back files of at most 16 MiB
  std::size_t max_packs = 7;               // and 8 files: the packs and summary.json
  // Runs of more tiles are refused before anything is measured (check_run_size).
  std::uint64_t max_tiles = kDefaultMaxTiles;
};

// Plans the suite on `device`, refuses it (UsageError) when a run has more tiles than
// settings.max_tiles, measures every run, writes `settings.out_dir` (summary.json after
// every workload, so an interrupted run keeps what it measured, and the trace packs) and prints a
// line per run to `progress` (may be null). Returns the results and the files written.
SuiteResults run_suite(const std::vector<SuiteWorkload>& suite, tools::SuiteDevice& device,
                       const SuiteRunSettings& settings, std::FILE* progress,
                       std::vector<std::string>* files = nullptr);

// The simulator standing in for a device: `cost` plays the GPU (its SMs, occupancy and tile
// times), every repeat gives the same trace, and traces say source "sim".
std::unique_ptr<tools::SuiteDevice> simulated_suite_device(const sim::CostModel& cost);

}  // namespace tilesched::cli
