// Records the golden data of tests/data/golden on a device: for each problem, the measured trace
// (trace JSON), O as raw little-endian bf16 and LSE as raw little-endian fp32, plus a manifest with
// the seed, device and date. Each problem is checked against the simulator before it is written.
// Usage: gpu_record_golden <out_dir>
#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "golden_problems.hpp"
#include "gpu_check.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/workload_io.hpp"

using namespace tilesched;

namespace {

template <class T>
void write_raw(const std::string& path, const std::vector<T>& v) {
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  sim::write_file_atomically(path, bytes);  // x86-64 and the CPU test machines are little-endian
}

int record(const std::string& dir) {
  std::filesystem::create_directories(dir);
  nlohmann::json manifest = nlohmann::json::array();
  int failures = 0;
  for (const auto& p : golden::problems()) {
    const auto r = gpu_test::check_workload(p.workload, p.seed);
    fmt::print("{:<32} {} tiles, worst tile error {:.3g}, {}\n", p.name, r.tiles,
               r.worst_tile_error, r.failures.empty() ? "ok" : "FAILED");
    for (const auto& f : r.failures) fmt::print("  {}\n", f);
    if (!r.failures.empty()) {
      ++failures;
      continue;
    }
    sim::write_trace(dir + "/" + p.name + ".trace.json", r.run.trace);
    write_raw(dir + "/" + p.name + ".o.bf16", r.run.o_bits);
    write_raw(dir + "/" + p.name + ".lse.f32", r.run.lse);
    manifest.push_back({{"name", p.name},
                        {"seed", p.seed},
                        {"device", r.run.trace.device},
                        {"created", r.run.trace.created},
                        {"trace", p.name + ".trace.json"},
                        {"o_bf16", p.name + ".o.bf16"},
                        {"lse_f32", p.name + ".lse.f32"},
                        {"workload", sim::workload_to_json(p.workload)}});
  }
  sim::write_file_atomically(dir + "/manifest.json", manifest.dump(1) + "\n");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} <out_dir>\n", argv[0]);
    return 2;
  }
  try {
    return record(argv[1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gpu_record_golden: {}\n", e.what());
    return 1;
  }
}
