#include "cli/console.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
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

namespace {
// Work shorter than this shows no progress at all; then the line changes at most every kRedraw.
constexpr std::chrono::milliseconds kQuiet{1000};
constexpr std::chrono::milliseconds kRedraw{100};
}  // namespace

Progress::Progress(std::string task, std::size_t total_steps)
    : task_(std::move(task)),
      total_steps_(total_steps),
      enabled_(stderr_is_terminal()),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  clear();
}

void Progress::clear() {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (!drawn_) return;
  fmt::print(stderr, "\r\x1b[2K");
  std::fflush(stderr);
  drawn_ = false;
}

void Progress::step(const std::string& label) {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++steps_done_;
  label_ = label;
  done_ = total_ = 0;
  draw(true);
}

void Progress::update(std::uint64_t done, std::uint64_t total) {
  const std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
  total_ = total;
  draw(false);
}

void Progress::update(const std::string& label, std::uint64_t done, std::uint64_t total) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const bool new_label = label != label_;
  label_ = label;
  done_ = done;
  total_ = total;
  draw(new_label);
}

void Progress::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < kQuiet) return;
  if (!force && now - last_draw_ < kRedraw) return;
  last_draw_ = now;
  drawn_ = true;
  const std::string fraction =
      total_ > 0 ? fmt::format(" {:.0f} %", 100.0 * double(done_) / double(total_)) : "";
  fmt::print(stderr, "\r\x1b[2K{} {}/{}: {}{}", task_, std::max<std::size_t>(steps_done_, 1),
             std::max(total_steps_, steps_done_), label_, fraction);
  std::fflush(stderr);
}

}  // namespace tilesched::cli
