// Small workloads and traces shared by the tool's tests, and a scratch directory per test.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::test {

// A ragged causal batch small enough to replay in microseconds: 3 sequences (one tile past the
// end of the short ones), 4 query heads over 2 KV heads, 5 CTAs.
Workload small_workload(SchedulerKind scheduler = SchedulerKind::Tile,
                        Schedule schedule = Schedule::Default);

Trace small_trace(SchedulerKind scheduler = SchedulerKind::Tile,
                  Schedule schedule = Schedule::Default);

// A fresh empty directory under the system temp directory, removed when the object goes away.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::filesystem::path& p);

// The rows of a measured CSV file, split at commas: lines starting with '#' are comments, the
// first other line is the header (skipped). Empty when the file cannot be read.
std::vector<std::vector<std::string>> csv_rows(const std::filesystem::path& p);

}  // namespace tilesched::test
