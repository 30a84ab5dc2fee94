// The subcommands. Each adds itself to the app and, when chosen on the command line, stores in
// `action` what to run after parsing; the action returns the exit code (see errors.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace tilesched::cli {

using Action = std::function<int()>;

void add_sim_command(CLI::App& app, Action& action);
void add_compare_command(CLI::App& app, Action& action);
void add_recommend_command(CLI::App& app, Action& action);
void add_viz_command(CLI::App& app, Action& action);
void add_diff_command(CLI::App& app, Action& action);
void add_fit_command(CLI::App& app, Action& action);
void add_gpu_commands(CLI::App& app, Action& action);    // run, bench
void add_suite_commands(CLI::App& app, Action& action);  // suite-run, report

// Parses argv and runs the chosen subcommand; returns the exit code. Usage errors are reported
// here; other exceptions propagate to main.
int run_tool(int argc, const char* const* argv);

}  // namespace tilesched::cli
