#include "cli/console.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace tilesched::cli {

bool stdout_is_terminal() {
  return isatty(STDOUT_FILENO) == 1;
}
bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

std::size_t terminal_columns() {
  if (stdout_is_terminal()) {
    winsize size{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    const long n = std::strtol(columns, nullptr, 10);
    if (n >= 40 && n <= 1000) return static_cast<std::size_t>(n);
  }
  return 100;
}

Progress::Progress(std::string task, std::size_t total)
    : task_(std::move(task)), total_(total), enabled_(stderr_is_terminal()) {}

Progress::~Progress() {
  if (enabled_ && done_ > 0) fmt::print(stderr, "\r\x1b[2K");
}

void Progress::step(const std::string& label) {
  ++done_;
  if (!enabled_) return;
  fmt::print(stderr, "\r\x1b[2K{} {}/{}: {}", task_, done_, total_, label);
  std::fflush(stderr);
}

}  // namespace tilesched::cli
