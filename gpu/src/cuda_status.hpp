// A CUDA runtime result as the GPU half's Status, naming the call that failed (private to gpu/).
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <string>

#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu::detail {

inline Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::success();
  return Status::error(
      fmt::format("{} failed: {} ({})", what, cudaGetErrorName(e), cudaGetErrorString(e)));
}

}  // namespace tilesched::gpu::detail
