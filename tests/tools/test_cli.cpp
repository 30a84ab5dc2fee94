// Flag parsing: values are parsed strictly, bad values name their flag, flags override the
// workload, and the exit codes are the documented ones.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/parse_values.hpp"
#include "cli/workload_flags.hpp"
#include "gpu_commands.hpp"
#include "test_support.hpp"
#include "tilesched/sim/workload_io.hpp"

using namespace tilesched;
using namespace tilesched::cli;

namespace {

// Parses `args` (after the program name) with the workload flags and resolves the workload.
Workload workload_from_flags(std::vector<std::string> args) {
  CLI::App app("test");
  WorkloadFlags flags;
  add_workload_flags(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  app.parse(args);
  return resolve_workload(flags);
}

std::string usage_error_of(std::vector<std::string> args) {
  try {
    workload_from_flags(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no usage error)";
}

int exit_code_of(std::vector<const char*> args) {
  args.insert(args.begin(), "tilesched");
  return run_tool(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("numbers are decimal, whole and in range, and errors name the flag") {
  CHECK(parse_u32("--ctas", "132") == 132);
  CHECK(parse_u32("--ctas", "010") == 10);  // not octal
  CHECK_THROWS_WITH_AS(parse_u32("--ctas", "0x10"), "--ctas: '0x10' is not a whole number",
                       UsageError);
  CHECK_THROWS_AS(parse_u32("--ctas", "-1"), UsageError);
  CHECK_THROWS_AS(parse_u32("--ctas", "4294967296"), UsageError);
  CHECK(parse_u32("--ctas", "4294967295") == 4294967295u);
  CHECK_THROWS_AS(parse_u32("--ctas", ""), UsageError);
  CHECK_THROWS_AS(parse_int_at_least("--iters", "0", 1), UsageError);
}

TEST_CASE("length lists") {
  CHECK(parse_u32_list("--q-lens", "512, 8192,1000") == std::vector<u32>{512, 8192, 1000});
  CHECK(parse_u32_list("--q-lens", "7") == std::vector<u32>{7});
  CHECK_THROWS_AS(parse_u32_list("--q-lens", "512,,1"), UsageError);
  CHECK_THROWS_AS(parse_u32_list("--q-lens", "512,"), UsageError);
  CHECK_THROWS_WITH_AS(parse_u32_list("--kv-lens", "5,x"), "--kv-lens: 'x' is not a whole number",
                       UsageError);
}

TEST_CASE("without flags the workload is the simulator's default") {
  const Workload w = workload_from_flags({});
  CHECK(sim::workload_to_json(w) == sim::workload_to_json(sim::default_workload()));
}

TEST_CASE("workload flags define every field") {
  const Workload w =
      workload_from_flags({"--q-lens", "300,1000",    "--kv-lens", "400,1000",   "--heads",
                           "8",        "--kv-heads",  "2",         "--head-dim", "64",
                           "--mask",   "none",        "--bm",      "64",         "--bn",
                           "32",       "--scheduler", "queued",    "--schedule", "prompt_rotate",
                           "--ctas",   "7",           "--ragged",  "faithful",   "--cost-profile",
                           "h100"});
  CHECK(w.q_lens == std::vector<u32>{300, 1000});
  CHECK(w.kv_lens == std::vector<u32>{400, 1000});
  CHECK_FALSE(w.padded);
  CHECK(w.num_q_heads == 8);
  CHECK(w.num_kv_heads == 2);
  CHECK(w.head_dim == 64);
  CHECK(w.mask == Mask::None);
  CHECK(w.block_m == 64);
  CHECK(w.block_n == 32);
  CHECK(w.scheduler == SchedulerKind::Queued);
  CHECK(w.schedule == Schedule::PromptRotate);
  CHECK(w.num_ctas == 7);
  CHECK(w.ragged_mode == RaggedMode::Faithful);
  CHECK(w.cost_profile == "h100");
}

TEST_CASE("--batch and --seq-len make a padded batch; --flip needs the transient scheduler") {
  const Workload w = workload_from_flags({"--batch", "4", "--seq-len", "1000"});
  CHECK(w.padded);
  CHECK(w.q_lens == std::vector<u32>(4, 1000));
  CHECK(w.kv_lens.empty());
  const Workload t = workload_from_flags({"--scheduler", "transient", "--flip"});
  CHECK(t.flip_prompt_idx);
  CHECK(usage_error_of({"--flip"}).find("transient") != std::string::npos);
}

TEST_CASE("flags override a workload file") {
  test::ScratchDir dir("workload");
  const std::string path = (dir.path() / "w.json").string();
  sim::write_workload(path, test::small_workload());
  CHECK(workload_from_flags({path}).num_ctas == 5);
  const Workload w = workload_from_flags({path, "--ctas", "9", "--heads", "6", "--kv-heads", "3"});
  CHECK(w.num_ctas == 9);
  CHECK(w.num_q_heads == 6);
  CHECK(w.q_lens == test::small_workload().q_lens);
}

TEST_CASE("bad values are usage errors that say what is wrong") {
  CHECK(usage_error_of({"--ctas", "0"}).find("CTAs must be at least 1") != std::string::npos);
  CHECK(usage_error_of({"--mask", "banana"}) ==
        "--mask: unknown value 'banana' (expected one of: none, causal)");
  CHECK(usage_error_of({"--heads", "6", "--kv-heads", "4"}).find("multiple of KV heads") !=
        std::string::npos);
  CHECK(usage_error_of({"--scheduler", "fastest"}).find("--scheduler") != std::string::npos);
  CHECK(usage_error_of({"--q-lens", "0"}).find("no work") != std::string::npos);
  CHECK(usage_error_of({"--cost-profile", "a100"}).find("--cost-profile") != std::string::npos);
}

TEST_CASE("exit codes: 0 help, 2 usage, 1 runtime failure") {
  CHECK(exit_code_of({"sim", "--help"}) == kExitOk);
  CHECK(exit_code_of({}) == kExitUsage);  // a subcommand is required
  CHECK(exit_code_of({"sim", "--no-such-flag"}) == kExitUsage);
  CHECK(exit_code_of({"sim", "--ctas", "0"}) == kExitUsage);
  CHECK(exit_code_of({"sim", "--batch", "2"}) == kExitUsage);  // --seq-len missing
  CHECK(exit_code_of({"sim", "/nonexistent/workload.json"}) == kExitFailure);
  CHECK(exit_code_of({"viz", "/nonexistent/trace.json"}) == kExitFailure);
  CHECK(exit_code_of({"bench", "--iters", "0"}) == kExitUsage);
  CHECK(exit_code_of({"run", "--ctas", "0"}) == kExitUsage);  // flags are checked first
  // With the GPU half, `run` would run the kernel: that belongs to the GPU tests.
  if (!tools::gpu_half_built()) CHECK(exit_code_of({"run"}) == kExitFailure);
}
