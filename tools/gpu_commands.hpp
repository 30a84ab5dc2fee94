// The tool's GPU subcommands (`tilesched run`, `tilesched bench`). Implemented in
// gpu_commands_run.cpp and gpu_commands_bench.cpp when the GPU half is built, and by
// gpu_commands_unavailable.cpp otherwise (which says so and exits non-zero).
#pragma once

#include <cstdint>
#include <string>

#include "tilesched/workload.hpp"
#include "viz/describe.hpp"

namespace tilesched::tools {

struct RunCommandOptions {
  Workload workload;
  // Who chose workload.num_ctas; CtaOrigin::Device: the device's SMs x CTAs per SM, filled in.
  viz::CtaOrigin ctas_origin = viz::CtaOrigin::Device;
  std::uint64_t seed = 1;
  std::string out_dir = "out";  // measured trace + pictures are written here
  bool check = true;            // compare against the simulator tile by tile
  bool ctas_given = false;      // --ctas was given: keep the workload's num_ctas
};

struct BenchCommandOptions {
  std::string out_json;  // where to write the results table as JSON ("" = none)
  bool quick = false;    // a reduced grid
  int warmup = 3;
  int iterations = 20;
};

// Both return the process exit code; a device or file failure is thrown as std::runtime_error.
int run_gpu_command(const RunCommandOptions& options);
int bench_gpu_command(const BenchCommandOptions& options);

// Whether this build has the GPU half.
bool gpu_half_built();

}  // namespace tilesched::tools
