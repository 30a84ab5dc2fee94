// Whether this machine can run the GPU half at all, asked of the CUDA driver library directly
// (dlopen), so that it works without the CUDA runtime and in a build without CUDA. The runtime
// itself reports a machine with no driver installed as "CUDA driver version is insufficient for
// CUDA runtime version", which sends users looking for a driver update they cannot install.
#pragma once

#include <string>

namespace tilesched::tools {

// Empty when the driver `library` loads, initialises, sees at least one GPU and (when
// `required_version` > 0, in CUDA's encoding: 13000 for 13.0) supports that CUDA version.
// Otherwise one sentence naming what is missing: no driver installed, not a CUDA driver, no GPU
// visible, a driver too old, or the driver's own error.
std::string cuda_driver_problem(int required_version = 0, const char* library = "libcuda.so.1");

// Throws std::runtime_error with cuda_driver_problem()'s sentence when there is one: the GPU
// commands call it before their first CUDA call, so a machine without a usable driver or GPU is
// named as such (exit 1) rather than by the CUDA runtime's less clear message.
void require_cuda_driver();

}  // namespace tilesched::tools
