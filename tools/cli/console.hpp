// What the command knows about where its output goes: whether stdout/stderr are terminals (ANSI
// colours and progress lines only there), how wide the terminal is, and a progress line.
#pragma once

#include <cstddef>
#include <string>

namespace tilesched::cli {

bool stdout_is_terminal();
bool stderr_is_terminal();

// Columns of the terminal on stdout; $COLUMNS, else 100 when it is not a terminal.
std::size_t terminal_columns();

// "Step i/n: label" on one stderr line rewritten in place. Silent when stderr is not a terminal,
// so logs and test output stay clean. The line is cleared when the object goes away.
class Progress {
 public:
  Progress(std::string task, std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void step(const std::string& label);  // announces the next step (1-based count)

 private:
  std::string task_;
  std::size_t total_ = 0;
  std::size_t done_ = 0;
  bool enabled_ = false;
};

}  // namespace tilesched::cli
