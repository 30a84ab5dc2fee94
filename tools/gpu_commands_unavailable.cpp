// The GPU subcommands in a build without the GPU half: they say so and fail, so scripts notice.
#include <stdexcept>

#include "gpu_commands.hpp"

namespace tilesched::tools {

namespace {
[[noreturn]] void no_gpu_half() {
  throw std::runtime_error(
      "this build has no GPU half (no CUDA compiler was found when it was configured)");
}
}  // namespace

int run_gpu_command(const RunCommandOptions&) {
  no_gpu_half();
}
int bench_gpu_command(const BenchCommandOptions&) {
  no_gpu_half();
}
std::unique_ptr<SuiteDevice> open_gpu_suite_device() {
  no_gpu_half();
}
bool gpu_half_built() {
  return false;
}

}  // namespace tilesched::tools
