// `tilesched run` and `tilesched bench`: flags parsed here, the work done by the GPU half
// (tools/gpu_commands_run.cpp, gpu_commands_bench.cpp) or refused by
// tools/gpu_commands_unavailable.cpp.
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/typed_flags.hpp"
#include "cli/workload_flags.hpp"
#include "gpu_commands.hpp"
#include "viz/scheduler_choice.hpp"

namespace tilesched::cli {
namespace {

struct RunOptions {
  WorkloadFlags workload;
  tools::RunCommandOptions command;
  bool no_check = false;
};

int run_run(RunOptions& o) {
  o.command.workload = resolve_workload(o.workload, &o.command.ctas_origin);
  o.command.check = !o.no_check;
  o.command.block_m_given = o.workload.block_m.has_value() || !o.workload.workload_file.empty();
  // The command checks the driver itself, after what needs no GPU (a decode workload is refused
  // first); without the GPU half the stand-in says so.
  return tools::run_gpu_command(o.command);
}

int run_bench(const tools::BenchCommandOptions& o) {
  return tools::bench_gpu_command(o);
}

void add_run_command(CLI::App& app, Action& action) {
  auto run = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run the workload on the GPU (attention + measured trace), check it against the "
      "simulator tile by tile, write the pictures");
  add_workload_flags(*cmd, run->workload, WorkloadFlagSet{true, /*cost_model=*/false});
  add_number_flag(*cmd, "--seed", run->command.seed, "Seed of the random attention inputs")
      ->capture_default_str();
  add_output_dir_flag(*cmd, "--out", run->command.out_dir,
                      "Directory for the measured trace and pictures", "out")
      ->capture_default_str();
  cmd->add_flag("--no-check", run->no_check, "Skip the comparison with the simulator");
  cmd->add_option("--clusters", run->command.clusters,
                  "Clusters of two CTAs sharing each K/V load, for the tile kind's kernel at "
                  "d = 128: auto (dense rows of one length from 8192 keys) | never | always "
                  "(wherever the rows allow)")
      ->check(CLI::IsMember({"auto", "never", "always"}))
      ->type_name("WHEN")
      ->capture_default_str();
  cmd->footer("Needs the GPU half (a build configured with a CUDA compiler) and a device.");
  cmd->callback([run, &action] { action = [run] { return run_run(*run); }; });
}

void add_bench_command(CLI::App& app, Action& action) {
  auto bench = std::make_shared<tools::BenchCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench",
                         "Time the GPU kernel (CUDA events, median) over the standard "
                         "grid of docs/spec.md §9; tools/bench/gpu_bench.py adds cuDNN side "
                         "by side");
  add_output_file_flag(*cmd, "--json", bench->out_json, "Write the results table as JSON to FILE",
                       "bench.json");
  CLI::Option* quick = cmd->add_flag("--quick", bench->quick, "A reduced grid");
  // A part of the grid: each list's entries must be the grid's own (one point per head dim, length
  // and mask), so that the results stay comparable with the full table and gpu_bench.py.
  add_u32_list_flag(*cmd, "--head-dims", bench->head_dims,
                    "Only these head dims, comma-separated (default: 64,128,256)", {64, 128, 256},
                    "the grid's values");
  add_u32_list_flag(*cmd, "--seq-lens", bench->seq_lens,
                    "Only these sequence lengths, comma-separated (default: 512 to 16384)",
                    {512, 1024, 2048, 4096, 8192, 16384}, "the grid's values")
      ->excludes(quick);
  add_number_flag(*cmd, "--bm", bench->block_m,
                  "Tile height (BM) at every point (default: per point, the kernel's tile "
                  "height the simulator predicts fastest)",
                  /*min=*/1);
  add_number_flag(*cmd, "--l2-bytes", bench->l2_bytes,
                  "L2 size the planned schedulers (lpt, lpt_queued) group heads by at every point "
                  "(default: the workload's, 50 MiB); 0: no grouping");
  add_number_flag(*cmd, "--l2-min-rounds", bench->l2_min_rounds,
                  "Fewest rounds of C tiles in one of those L2 sections at every point (default 2)",
                  /*min=*/1);
  add_number_flag(*cmd, "--warmup", bench->warmup, "Warm-up launches per point")
      ->capture_default_str();
  add_number_flag(*cmd, "--iters", bench->iterations, "Timed launches per point", /*min=*/1)
      ->capture_default_str();
  add_number_flag(*cmd, "--cooldown-ms", bench->cooldown_ms,
                  "Idle milliseconds before each point (a power-capped GPU lowers its clocks "
                  "under sustained load)",
                  /*min=*/0, /*max=*/60000)
      ->capture_default_str();
  add_number_flag(*cmd, "--heat-ms", bench->heat_ms,
                  "Back-to-back launches for this long before each point's warm-up (the "
                  "sustained, power-capped state)",
                  /*min=*/0, /*max=*/60000)
      ->capture_default_str();
  // auto (the default) or a scheduler's name; auto leaves causal_scheduler empty.
  std::string candidates;
  for (const SchedulerKind k : viz::kCausalSchedulerCandidates)
    candidates += (candidates.empty() ? "" : " and ") + std::string(to_string(k));
  cmd->add_option_function<std::string>(
         "--causal-scheduler",
         [bench](const std::string& name) {
           bench->causal_scheduler =
               name == "auto" ? std::nullopt : parse_enum<SchedulerKind>(name);
         },
         fmt::format("Scheduler of the causal points: auto (the one of {} the simulator predicts "
                     "fastest at each point) | {}",
                     candidates, enum_choices<SchedulerKind>(" | ")))
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text == "auto" || parse_enum<SchedulerKind>(text)) return {};
            return fmt::format("unknown value '{}' (expected one of: auto, {})", text,
                               enum_choices<SchedulerKind>());
          },
          ""))
      ->type_name("KIND")
      ->default_str("auto");
  cmd->add_option_function<std::string>(
         "--dense-scheduler",
         [bench](const std::string& name) {
           bench->dense_scheduler = *parse_enum<SchedulerKind>(name);
         },
         "Scheduler of the dense points: tile (the static stride) | split_tail (the last "
         "partial wave's KV blocks split over every CTA)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (text == "tile" || text == "split_tail") return {};
            return fmt::format("unknown value '{}' (expected one of: tile, split_tail)", text);
          },
          ""))
      ->type_name("KIND")
      ->default_str("tile");
  cmd->add_option_function<std::string>(
         "--dense-ctas",
         [bench](const std::string& how) { bench->dense_ctas_by_waves = how == "waves"; },
         "CTAs of the dense points with tile: waves (the fewest that take as many waves as the "
         "device's SMs x CTAs per SM: 128 instead of 132 for 2048 tiles) | device (all of them)")
      ->check(CLI::IsMember({"waves", "device"}))
      ->type_name("HOW")
      ->default_str("waves");
  cmd->add_option_function<std::string>(
         "--counter-reset",
         [bench](const std::string& when) {
           bench->reset_counter_every_launch = when == "every-launch";
         },
         "When a counter scheduler's counter is set: once (before the first launch; each launch "
         "leaves it at its start for the next) | every-launch (a one-thread kernel before each "
         "launch, as for a caller that passes no launch_done)")
      ->check(CLI::IsMember({"once", "every-launch"}))
      ->type_name("WHEN")
      ->default_str("once");
  cmd->footer("Needs the GPU half (a build configured with a CUDA compiler) and a device.");
  cmd->callback([bench, &action] { action = [bench] { return run_bench(*bench); }; });
}

}  // namespace

void add_gpu_commands(CLI::App& app, Action& action) {
  add_run_command(app, action);
  add_bench_command(app, action);
}

}  // namespace tilesched::cli
