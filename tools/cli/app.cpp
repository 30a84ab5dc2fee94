#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/errors.hpp"

namespace tilesched::cli {

namespace {

// "tilesched sim" when a subcommand was chosen, so the error line says which flags were meant.
std::string command_name(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    return fmt::format("tilesched {}", sub->get_name());
  return "tilesched";
}

}  // namespace

int run_tool(int argc, const char* const* argv) {
  CLI::App app("tilesched: see, simulate, run and compare attention tile schedules", "tilesched");
  app.require_subcommand(1);
  app.set_version_flag("--version", "tilesched 0.1.0");
  app.footer("Run `tilesched COMMAND --help` for a command's flags.");
  Action action;
  add_sim_command(app, action);
  add_compare_command(app, action);
  add_recommend_command(app, action);
  add_viz_command(app, action);
  add_diff_command(app, action);
  add_fit_command(app, action);
  add_gpu_commands(app, action);
  add_suite_commands(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints two lines and uses its own exit codes; this tool promises one line and 2.
    fmt::print(stderr, "{}: {} (see {} --help)\n", command_name(app), e.what(), command_name(app));
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {} (see {} --help)\n", command_name(app), e.what(), command_name(app));
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", command_name(app), e.what());
    return kExitFailure;
  }
}

}  // namespace tilesched::cli
