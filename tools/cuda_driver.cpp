#include "cuda_driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tilesched::tools {

namespace {

// The few driver API entry points needed, declared here so no CUDA header is required. CUresult
// is an int-sized enum; 0 is success and 100 CUDA_ERROR_NO_DEVICE.
using CuResult = int;
using CuInit = CuResult (*)(unsigned int);
using CuDriverGetVersion = CuResult (*)(int*);
using CuDeviceGetCount = CuResult (*)(int*);
using CuGetErrorString = CuResult (*)(CuResult, const char**);
constexpr CuResult kCudaSuccess = 0;
constexpr CuResult kCudaErrorNoDevice = 100;

std::string no_gpu_visible() {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  return visible
             ? fmt::format("the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES is \"{}\")", visible)
             : std::string("the CUDA driver is installed but sees no GPU");
}

std::string version_text(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace

void require_cuda_driver() {
  if (const std::string problem = cuda_driver_problem(); !problem.empty())
    throw std::runtime_error(problem);
}

std::string cuda_driver_problem(int required_version, const char* library) {
  void* driver = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr)
    return fmt::format(
        "no CUDA driver is installed ({} cannot be loaded); install the NVIDIA driver to run on a "
        "GPU",
        library);
  struct Closer {
    void* handle;
    ~Closer() { ::dlclose(handle); }
  } closer{driver};
  const auto init = reinterpret_cast<CuInit>(::dlsym(driver, "cuInit"));
  const auto get_version =
      reinterpret_cast<CuDriverGetVersion>(::dlsym(driver, "cuDriverGetVersion"));
  const auto get_count = reinterpret_cast<CuDeviceGetCount>(::dlsym(driver, "cuDeviceGetCount"));
  const auto error_string = reinterpret_cast<CuGetErrorString>(::dlsym(driver, "cuGetErrorString"));
  if (!init || !get_version || !get_count)
    return fmt::format(
        "{} is not a CUDA driver (it lacks cuInit, cuDriverGetVersion or "
        "cuDeviceGetCount)",
        library);

  int version = 0;
  if (get_version(&version) == kCudaSuccess && required_version > 0 && version < required_version)
    return fmt::format(
        "the CUDA driver supports CUDA {}, older than the CUDA {} this build needs; update the "
        "NVIDIA driver",
        version_text(version), version_text(required_version));
  if (const CuResult rc = init(0); rc != kCudaSuccess) {
    if (rc == kCudaErrorNoDevice) return no_gpu_visible();
    const char* text = nullptr;
    if (!error_string || error_string(rc, &text) != kCudaSuccess || !text) text = "unknown error";
    return fmt::format("the CUDA driver failed to start: {} (CUresult {})", text, rc);
  }
  int devices = 0;
  if (get_count(&devices) != kCudaSuccess || devices == 0) return no_gpu_visible();
  return {};
}

}  // namespace tilesched::tools
