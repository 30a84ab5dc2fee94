// The tilesched command. Everything is in cli/ and viz/; main only guarantees that no exception
// escapes (one line on stderr and exit 1, never an abort).
#include <fmt/format.h>

#include <exception>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  try {
    return tilesched::cli::run_tool(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tilesched: {}\n", e.what());
  } catch (...) {
    fmt::print(stderr, "tilesched: unexpected internal error\n");
  }
  return 1;
}
