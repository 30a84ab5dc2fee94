// Flag parsing: values are parsed strictly, bad values name their flag, flags override the
// workload, every enum name works everywhere it is read, and the exit codes are the documented
// ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/typed_flags.hpp"
#include "cli/view_flags.hpp"
#include "cli/workload_flags.hpp"
#include "cuda_driver.hpp"
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

// The message of the usage error (exit 2) the flags give: a bad value while parsing, or a
// workload the flags make invalid.
std::string usage_error_of(std::vector<std::string> args) {
  try {
    workload_from_flags(std::move(args));
  } catch (const CLI::ParseError& e) {
    return e.what();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no usage error)";
}

std::string number_error(const std::string& text, std::uint64_t min, std::uint64_t max) {
  try {
    parse_decimal(text, min, max);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

int exit_code_of(std::vector<const char*> args) {
  args.insert(args.begin(), "tilesched");
  return run_tool(static_cast<int>(args.size()), args.data());
}

}  // namespace

TEST_CASE("numbers are decimal, whole and in range") {
  CHECK(parse_decimal("132", 0, UINT32_MAX) == 132);
  CHECK(parse_decimal(" 010 ", 0, UINT32_MAX) == 10);  // not octal
  CHECK(number_error("0x10", 0, UINT32_MAX) == "'0x10' is not a whole number");
  CHECK(number_error("-1", 0, UINT32_MAX) == "'-1' is not a whole number");
  CHECK(number_error("4294967296", 0, UINT32_MAX) ==
        "4294967296 is too large (at most 4294967295)");
  CHECK(parse_decimal("4294967295", 0, UINT32_MAX) == 4294967295u);
  CHECK(parse_decimal("18446744073709551615", 0, UINT64_MAX) == UINT64_MAX);
  CHECK(number_error("18446744073709551616", 0, UINT64_MAX).find("too large") != std::string::npos);
  CHECK(number_error("", 0, UINT32_MAX) == "expected a whole number, got nothing");
  CHECK(number_error("0", 1, INT32_MAX) == "must be at least 1, got 0");
}

TEST_CASE("number flags are stored typed, exactly as typed, and errors name the flag") {
  CHECK(workload_from_flags({"--ctas", "010"}).num_ctas == 10);  // CLI11 alone reads octal 8
  CHECK(usage_error_of({"--ctas", "0x10"}) == "--ctas: '0x10' is not a whole number");
  CHECK(usage_error_of({"--ctas", "-1"}) == "--ctas: '-1' is not a whole number");
  CHECK(usage_error_of({"--heads", "4294967296"}) ==
        "--heads: 4294967296 is too large (at most 4294967295)");
  CHECK(usage_error_of({"--bm", ""}) == "--bm: expected a whole number, got nothing");
  CHECK(usage_error_of({"--batch", "0", "--seq-len", "8"}) == "--batch: must be at least 1, got 0");

  CLI::App app("test");
  std::uint64_t seed = 0;
  int iterations = 0;
  add_number_flag(app, "--seed", seed, "");
  add_number_flag(app, "--iters", iterations, "", 1);
  app.parse(std::vector<std::string>{"2147483647", "--iters", "18446744073709551615", "--seed"});
  CHECK(seed == UINT64_MAX);
  CHECK(iterations == INT32_MAX);
  CHECK_THROWS_WITH_AS(app.parse(std::vector<std::string>{"2147483648", "--iters"}),
                       "--iters: 2147483648 is too large (at most 2147483647)",
                       CLI::ValidationError);
}

TEST_CASE("length lists") {
  CHECK(parse_u32_list("512, 8192,1000") == std::vector<u32>{512, 8192, 1000});
  CHECK(parse_u32_list("7") == std::vector<u32>{7});
  CHECK_THROWS_AS(parse_u32_list("512,,1"), std::invalid_argument);
  CHECK_THROWS_AS(parse_u32_list("512,"), std::invalid_argument);
  CHECK(workload_from_flags({"--q-lens", "512, 8192,1000"}).q_lens ==
        std::vector<u32>{512, 8192, 1000});
  CHECK(usage_error_of({"--kv-lens", "5,x"}) == "--kv-lens: 'x' is not a whole number");
  CHECK(usage_error_of({"--q-lens", "512,,1"}).rfind("--q-lens: empty entry in '512,,1'", 0) == 0);
  CHECK(usage_error_of({"--q-lens", "4294967296"}).rfind("--q-lens: ", 0) == 0);
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

TEST_CASE(
    "workload JSON: a padded batch beyond kMaxPaddedBatch is refused by the file and the flag "
    "alike") {
  const std::string largest = std::to_string(sim::kMaxPaddedBatch);
  const std::string beyond = std::to_string(std::uint64_t(sim::kMaxPaddedBatch) + 1);
  CHECK(workload_from_flags({"--batch", largest, "--seq-len", "1"}).q_lens.size() ==
        sim::kMaxPaddedBatch);
  CHECK(usage_error_of({"--batch", beyond, "--seq-len", "1"}) ==
        "--batch: " + beyond + " is too large (at most " + largest + ")");
  CHECK(usage_error_of({"--batch", "4000000000", "--seq-len", "1"}) ==
        "--batch: 4000000000 is too large (at most " + largest + ")");

  const auto file_error = [](const std::string& batch) -> std::string {
    try {
      sim::workload_from_json(nlohmann::json::parse("{\"batch\": " + batch + ", \"seq_len\": 1}"));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(file_error(largest) == "(no error)");
  CHECK(file_error(beyond).find("'batch'") != std::string::npos);
  CHECK(file_error(beyond).find("is implausibly large: " + beyond) != std::string::npos);
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
  // One of the two given: the other's value is named as the base workload's (32 / 8 built in).
  CHECK(usage_error_of({"--heads", "6"}) ==
        "invalid workload: query heads (6) must be a multiple of KV heads (8, the built-in "
        "workload's; give --kv-heads too)");
  CHECK(usage_error_of({"--kv-heads", "5"}) ==
        "invalid workload: query heads (32, the built-in workload's; give --heads too) must be a "
        "multiple of KV heads (5)");
  CHECK_NOTHROW(workload_from_flags({"--heads", "16"}));  // 16 / 8: nothing to say
  CHECK(usage_error_of({"--scheduler", "fastest"}).find("--scheduler") != std::string::npos);
  CHECK(usage_error_of({"--q-lens", "0"}).find("no work") != std::string::npos);
  CHECK(usage_error_of({"--cost-profile", "a100"}).find("--cost-profile") != std::string::npos);
}

namespace {

// Every row of E's table names its value in to_string (aliases excepted), parse_enum, the
// workload flag `flag` and the workload JSON field `json_field`.
template <class E>
void check_names_of(E Workload::*field, const char* flag, const char* json_field) {
  for (const EnumName<E>& row : enum_names(E{})) {
    CAPTURE(row.name);
    CHECK(parse_enum<E>(row.name) == row.value);
    if (!row.alias) CHECK(std::string(to_string(row.value)) == row.name);
    std::vector<std::string> flags = {flag, row.name};
    nlohmann::json j = sim::workload_to_json(test::small_workload());
    // split_tail needs tiles of one cost: no mask, one length.
    if constexpr (std::is_same_v<E, SchedulerKind>) {
      if (row.value == SchedulerKind::SplitTail) {
        flags.insert(flags.end(), {"--batch", "2", "--seq-len", "100", "--mask", "none"});
        j["mask"] = "none";
        j["q_lens"] = {100, 100};
        j.erase("kv_lens");
      }
    }
    CHECK(workload_from_flags(flags).*field == row.value);
    j[json_field] = row.name;
    const Workload read = sim::workload_from_json(j);
    CHECK(read.*field == row.value);
    if (!row.alias) CHECK(sim::workload_to_json(read)[json_field] == row.name);
  }
}

}  // namespace

TEST_CASE("every name in an enum's table works in to_string, parsing, flags and JSON") {
  check_names_of(&Workload::mask, "--mask", "mask");
  check_names_of(&Workload::scheduler, "--scheduler", "scheduler");
  check_names_of(&Workload::schedule, "--schedule", "schedule");
  check_names_of(&Workload::ragged_mode, "--ragged", "ragged_mode");
  CHECK(workload_from_flags({"--schedule", "rotate"}).schedule == Schedule::PromptRotate);
  CHECK(std::string(to_string(Schedule::PromptRotate)) == "prompt_rotate");
  CHECK(enum_choices<Schedule>() == "default, prompt_rotate");  // aliases are not offered
  CHECK(std::string(to_string(SchedulerSync::Default)) == "producer");
  CHECK(parse_enum<Mask>("Causal") == std::nullopt);  // exact names only
}

TEST_CASE("choice flags take names, not the numbers enums are stored as") {
  CHECK(usage_error_of({"--mask", "1"}) ==
        "--mask: unknown value '1' (expected one of: none, causal)");
  CHECK(usage_error_of({"--schedule", "diagonal"}) ==
        "--schedule: unknown value 'diagonal' (expected one of: default, prompt_rotate)");
}

TEST_CASE("view flags are typed and checked while parsing") {
  CLI::App app("test");
  ViewFlags flags;
  add_view_flags(app, flags);
  app.parse(std::vector<std::string>{"7", "--max-rows", "batch", "--color-by", "never", "--color"});
  CHECK(flags.color == ColorWhen::Never);
  CHECK(flags.color_by == viz::ColorBy::Batch);
  CHECK(flags.max_rows == 7);
  CLI::App bad("test");
  add_view_flags(bad, flags);
  CHECK_THROWS_WITH_AS(bad.parse(std::vector<std::string>{"rainbow", "--color-by"}),
                       "--color-by: unknown value 'rainbow' (expected one of: head, batch)",
                       CLI::ValidationError);
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

TEST_CASE("a machine without a CUDA driver is told so, not that its driver is too old") {
  const std::string missing = tools::cuda_driver_problem(0, "libtilesched-no-such-driver.so.1");
  CHECK(missing ==
        "no CUDA driver is installed (libtilesched-no-such-driver.so.1 cannot be loaded); install "
        "the NVIDIA driver to run on a GPU");
  // A library that loads but is something else.
  const std::string other = tools::cuda_driver_problem(0, "libz.so.1");
  CHECK(other.find("libz.so.1 is not a CUDA driver") == 0);
}
