#include "test_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "tilesched/sim/replay.hpp"

namespace tilesched::test {

Workload small_workload(SchedulerKind scheduler, Schedule schedule) {
  Workload w;
  w.q_lens = {300, 1000, 129};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.head_dim = 64;
  w.block_m = 128;
  w.block_n = 64;
  w.num_ctas = 5;
  w.scheduler = scheduler;
  w.schedule = schedule;
  return w;
}

Trace small_trace(SchedulerKind scheduler, Schedule schedule) {
  return sim::replay(small_workload(scheduler, schedule));
}

ScratchDir::ScratchDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          fmt::format("tilesched-test-{}-{}-{}", tag, ::getpid(), counter++);
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::vector<std::string>> rows;
  bool header = true;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string f; std::getline(split, f, ',');) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

}  // namespace tilesched::test
