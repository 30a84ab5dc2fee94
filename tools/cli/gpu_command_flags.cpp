// `tilesched run` and `tilesched bench`: flags parsed here, the work done by the GPU half
// (tools/gpu_commands_run.cpp, gpu_commands_bench.cpp) or refused by
// tools/gpu_commands_unavailable.cpp.
#include <memory>

#include "cli/commands.hpp"
#include "cli/parse_values.hpp"
#include "cli/workload_flags.hpp"
#include "gpu_commands.hpp"

namespace tilesched::cli {
namespace {

struct RunOptions {
  WorkloadFlags workload;
  std::string seed = "1";
  std::string out_dir = "out";
  bool no_check = false;
};

struct BenchOptions {
  std::string json_file;
  bool quick = false;
  std::string warmup = "3";
  std::string iterations = "20";
};

int run_run(const RunOptions& o) {
  tools::RunCommandOptions options;
  options.seed = parse_uint("--seed", o.seed);
  options.workload = resolve_workload(o.workload);
  options.out_dir = o.out_dir;
  options.check = !o.no_check;
  return tools::run_gpu_command(options);
}

int run_bench(const BenchOptions& o) {
  tools::BenchCommandOptions options;
  options.out_json = o.json_file;
  options.quick = o.quick;
  options.warmup = parse_int_at_least("--warmup", o.warmup, 0);
  options.iterations = parse_int_at_least("--iters", o.iterations, 1);
  return tools::bench_gpu_command(options);
}

}  // namespace

void add_gpu_commands(CLI::App& app, Action& action) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* run_cmd = app.add_subcommand(
      "run",
      "Run the workload on the GPU (attention + measured trace), check it against the "
      "simulator tile by tile, write the pictures");
  add_workload_flags(*run_cmd, run->workload, WorkloadFlagSet{true, /*cost_model=*/false});
  run_cmd->add_option("--seed", run->seed, "Seed of the random attention inputs")
      ->type_name("N")
      ->capture_default_str();
  run_cmd->add_option("--out", run->out_dir, "Directory for the measured trace and pictures")
      ->type_name("DIR")
      ->capture_default_str();
  run_cmd->add_flag("--no-check", run->no_check, "Skip the comparison with the simulator");
  run_cmd->footer("Needs the GPU half (a build configured with a CUDA compiler) and a device.");
  run_cmd->callback([run, &action] { action = [run] { return run_run(*run); }; });

  auto bench = std::make_shared<BenchOptions>();
  CLI::App* bench_cmd =
      app.add_subcommand("bench",
                         "Time the GPU kernel (CUDA events, median) over the standard grid of "
                         "DESIGN.md; tools/bench/gpu_bench.py adds cuDNN side by side");
  bench_cmd->add_option("--json", bench->json_file, "Write the results table as JSON to FILE")
      ->type_name("FILE");
  bench_cmd->add_flag("--quick", bench->quick, "A reduced grid");
  bench_cmd->add_option("--warmup", bench->warmup, "Warm-up launches per point")
      ->type_name("N")
      ->capture_default_str();
  bench_cmd->add_option("--iters", bench->iterations, "Timed launches per point")
      ->type_name("N")
      ->capture_default_str();
  bench_cmd->footer("Needs the GPU half (a build configured with a CUDA compiler) and a device.");
  bench_cmd->callback([bench, &action] { action = [bench] { return run_bench(*bench); }; });
}

}  // namespace tilesched::cli
