#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/errors.hpp"
#include "cli/run_size.hpp"

namespace tilesched::cli {

namespace {

// "tilesched sim" when a subcommand was chosen, so the error line says which flags were meant.
std::string command_name(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    return fmt::format("tilesched {}", sub->get_name());
  return "tilesched";
}

// Whether a command-line argument is a flag rather than a value: "--ctas", "-h", but not "-5".
bool looks_like_flag(const std::string& arg) {
  return arg.size() >= 2 && arg[0] == '-' &&
         !(std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.');
}

// CLI11 gives an option the argument after it even when that argument is another flag, so a
// forgotten value ("--heads --ctas 8") would make "--ctas" the value of --heads and 8 a file to
// read. Caught before parsing: "tilesched sim: --heads needs a value, ...". Empty when no value is
// forgotten.
std::string forgotten_value(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* command = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // everything after it is positional
    if (command == &app) {
      const auto named =
          app.get_subcommands([&](const CLI::App* sub) { return sub->check_name(arg); });
      if (!named.empty()) command = named.front();
      continue;
    }
    if (!looks_like_flag(arg) || arg.find('=') != std::string::npos) continue;
    const CLI::Option* option = command->get_option_no_throw(arg);
    // Flags take no value; a value missing at the very end CLI11 reports itself (see below).
    if (option == nullptr || option->get_items_expected_min() == 0 || i + 1 >= argc) continue;
    if (looks_like_flag(argv[i + 1]))
      return fmt::format(
          "tilesched {0}: {1} needs a value, but the next argument is the flag {2} "
          "(see tilesched {0} --help)",
          command->get_name(), arg, argv[i + 1]);
    ++i;  // its value, whatever it looks like
  }
  return {};
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(sub->get_name());
  return names;
}

// Edits (insert, delete, replace one letter) that turn `a` into `b`.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The command `word` was probably meant to be: one it starts with or that starts with it
// ("simulate": sim), else the nearest within an edit per three letters ("comapre": compare); ""
// when none is.
std::string closest_command(const std::string& word, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (word.rfind(name, 0) == 0 || name.rfind(word, 0) == 0) return name;
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, word.size() / 3) + 1;
  for (const std::string& name : names)
    if (const std::size_t d = edit_distance(word, name); d < best_distance) {
      best = name;
      best_distance = d;
    }
  return best;
}

// What comes before the command, checked before CLI11 parses: CLI11 reports an unknown command
// word and an unknown flag there alike as "A subcommand is required". Empty when the arguments
// start with a command (or ask for help or the version).
std::string command_problem(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<std::string> names = command_names(app);
  const std::string commands =
      fmt::format("commands: {} (see tilesched --help)", fmt::join(names, ", "));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--version") return {};
    if (looks_like_flag(arg))
      return fmt::format("tilesched: unknown flag {}: flags go after the command; {}",
                         arg.substr(0, arg.find('=')), commands);
    if (std::find(names.begin(), names.end(), arg) != names.end()) return {};
    const std::string closest = closest_command(arg, names);
    return fmt::format("tilesched: unknown command '{}'{}; {}", arg,
                       closest.empty() ? "" : fmt::format(" (did you mean '{}'?)", closest),
                       commands);
  }
  return fmt::format("tilesched: no command given; {}", commands);
}

// CLI11's "--heads: 1 required N missing" for an option given last without its value.
std::string usage_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  const std::size_t colon = what.find(": 1 required ");
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos &&
      what.size() > 8 && what.compare(what.size() - 8, 8, " missing") == 0)
    return fmt::format("{} needs a value", what.substr(0, colon));
  // CLI11's "The following argument was not expected: --frobnicate": an unknown flag, or a
  // value no positional takes.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::size_t list = what.find(": ");
    if (list != std::string::npos) {
      std::vector<std::string> flags, values;
      std::istringstream extras(what.substr(list + 2));
      for (std::string arg; extras >> arg;) {
        if (looks_like_flag(arg))
          flags.push_back(arg.substr(0, arg.find('=')));
        else
          values.push_back("'" + arg + "'");
      }
      // CLI11 lists them last first.
      std::reverse(flags.begin(), flags.end());
      std::reverse(values.begin(), values.end());
      if (!flags.empty())
        return fmt::format("unknown flag{} {}", flags.size() > 1 ? "s" : "",
                           fmt::join(flags, ", "));
      if (!values.empty())
        return fmt::format("unexpected argument{} {} (no more files or values are taken here)",
                           values.size() > 1 ? "s" : "", fmt::join(values, ", "));
    }
  }
  return what;
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

  if (const std::string problem = command_problem(app, argc, argv); !problem.empty()) {
    fmt::print(stderr, "{}\n", problem);
    return kExitUsage;
  }
  if (const std::string problem = forgotten_value(app, argc, argv); !problem.empty()) {
    fmt::print(stderr, "{}\n", problem);
    return kExitUsage;
  }
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
    fmt::print(stderr, "{}: {} (see {} --help)\n", command_name(app), usage_message(e),
               command_name(app));
    return kExitUsage;
  }
  try {
    return action ? action() : kExitUsage;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {} (see {} --help)\n", command_name(app), e.what(), command_name(app));
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    // Whatever was allocated is freed by now: the stack is unwound.
    fmt::print(stderr, "{}: {}\n", command_name(app), out_of_memory_message());
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", command_name(app), e.what());
    return kExitFailure;
  }
}

}  // namespace tilesched::cli
