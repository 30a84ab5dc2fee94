// Portability macros for the header-only scheduler layer: every function that the kernel and the
// simulator share is marked TS_HOST_DEVICE so nvcc compiles it for both sides from one definition.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#define TS_FORCEINLINE __forceinline__
#else
#define TS_HOST_DEVICE
#define TS_FORCEINLINE inline
#endif

// True while compiling device code (nvcc's device pass); false on the host and in plain C++.
#if defined(__CUDA_ARCH__)
#define TS_DEVICE_PASS 1
#else
#define TS_DEVICE_PASS 0
#endif

namespace tilesched {

// All scheduler arithmetic is unsigned 32-bit (SPEC §1); the host validates that nothing wraps.
using u32 = std::uint32_t;

// Written so that it cannot wrap: (a + b - 1) / b overflows for a near 2^32.
TS_HOST_DEVICE constexpr u32 ceil_div(u32 a, u32 b) {
  return a / b + (a % b != 0 ? 1u : 0u);
}
TS_HOST_DEVICE constexpr u32 min_u32(u32 a, u32 b) {
  return a < b ? a : b;
}

}  // namespace tilesched
