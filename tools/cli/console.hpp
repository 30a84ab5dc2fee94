// What the command knows about where its output goes: whether stdout/stderr are terminals (ANSI
// colours and progress lines only there), how wide the terminal is, and a progress line.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

namespace tilesched::cli {

bool stdout_is_terminal();
bool stderr_is_terminal();

// Columns of the terminal on stdout; $COLUMNS, else 100 when it is not a terminal.
std::size_t terminal_columns();

// A progress line on stderr for work that takes a while: "task i/n: label 45 %", rewritten in
// place. Silent when stderr is not a terminal, so logs and test output stay clean, and silent for
// the first second, so quick runs print nothing; after that it is redrawn at most ten times a
// second (and at once when the step changes). The line is cleared when the object goes away.
// Updates may come from several threads.
class Progress {
 public:
  Progress(std::string task, std::size_t total_steps);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void step(const std::string& label);  // announces the next step (1-based count)
  // How far the current step has come: `done` of `total` (items, tiles, events).
  void update(std::uint64_t done, std::uint64_t total);
  // A step's own label and fraction at once, e.g. for files written side by side.
  void update(const std::string& label, std::uint64_t done, std::uint64_t total);
  // Erases the line (the next update draws it again): call before printing to the terminal.
  void clear();

 private:
  void draw(bool force);

  std::string task_, label_;
  std::size_t total_steps_ = 0, steps_done_ = 0;
  std::uint64_t done_ = 0, total_ = 0;
  bool enabled_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
};

}  // namespace tilesched::cli
