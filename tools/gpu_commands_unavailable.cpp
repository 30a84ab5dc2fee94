// The GPU subcommands in a build without the GPU half: they say so and fail, so scripts notice.
#include <cstdio>

#include "gpu_commands.hpp"

namespace tilesched::tools {

namespace {
int no_gpu_half() {
  std::fputs(
      "tilesched: this build has no GPU half (no CUDA compiler was found when it was "
      "configured)\n",
      stderr);
  return 1;
}
}  // namespace

int run_gpu_command(const RunCommandOptions&) {
  return no_gpu_half();
}
int bench_gpu_command(const BenchCommandOptions&) {
  return no_gpu_half();
}
bool gpu_half_built() {
  return false;
}

}  // namespace tilesched::tools
