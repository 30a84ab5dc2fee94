// A terminating signal while another thread creates an output file must leave no temporary file
// behind. `tilesched sim` writes its trace on a second thread while the first writes the pictures
// (tools/viz/schedule_outputs.cpp); a SIGTERM handled on one thread while the other was between
// naming its temporary and creating it left that file behind (seen once in a `ctest -j2` run of
// tool_interrupt_leaves_no_temporary, 2026-11-30).
//
// usage: output_signal_race SCRATCH_DIR TRIALS
// Each trial forks a child whose second thread creates output files without pause (keeping up to
// 48 open, as a writer keeps its temporary while it writes) while its first thread sends the
// process SIGTERM after a short, varying delay; the parent checks
// that the child died of the signal and left no "*.tmp.*" file. Exit status 0 when every trial is
// clean, 1 otherwise (a line per leftover), 2 on bad arguments.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tilesched/sim/output_file.hpp"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void child(const fs::path& dir, int trial) {
  // Whatever the test runner left: the default action, which the writer's clean-up replaces.
  for (const int s : {SIGINT, SIGTERM, SIGHUP}) ::signal(s, SIG_DFL);
  // The first file installs the clean-up handler before the creator thread starts.
  { tilesched::sim::OutputFile first((dir / "first").string()); }
  // Files kept open, as a writer keeps its temporary while it writes: only the handler removes
  // them. Fewer than the handler's 64 slots at once.
  std::thread creator([&] {
    std::vector<std::unique_ptr<tilesched::sim::OutputFile>> open;
    for (int i = 0;; ++i) {
      if (open.size() == 48) open.clear();
      open.push_back(std::make_unique<tilesched::sim::OutputFile>(
          (dir / ("out" + std::to_string(i % 48))).string()));
    }
  });
  std::this_thread::sleep_for(std::chrono::microseconds(200 + 37 * (trial % 50)));
  ::kill(::getpid(), SIGTERM);
  creator.join();  // never returns: the signal ends the process
  std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: output_signal_race SCRATCH_DIR TRIALS\n");
    return 2;
  }
  const fs::path scratch = argv[1];
  const int trials = std::atoi(argv[2]);
  if (trials <= 0) {
    std::fprintf(stderr, "output_signal_race: TRIALS must be a positive number, got '%s'\n",
                 argv[2]);
    return 2;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  int bad = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const fs::path dir = scratch / std::to_string(trial);
    fs::create_directories(dir);
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    if (pid == 0) child(dir, trial);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) {
      std::printf("trial %d: the child did not die of SIGTERM (status %d)\n", trial, status);
      ++bad;
    }
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().filename().string().find(".tmp.") != std::string::npos) {
        std::printf("trial %d: left behind: %s\n", trial, entry.path().filename().c_str());
        ++bad;
      }
  }
  fs::remove_all(scratch, ec);
  if (bad > 0) return 1;
  std::printf("ok: %d trials, no temporary file left behind\n", trials);
  return 0;
}
