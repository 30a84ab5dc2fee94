// The GPU that `tilesched suite-run` measures on: one DeviceProblem per run, random inputs made on
// the device, a warm-up launch, then recorded launches back to back.
#include <fmt/format.h>

#include <stdexcept>

#include "cuda_driver.hpp"
#include "gpu_commands.hpp"
#include "tilesched/gpu/attention.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::tools {
namespace {

void require(const gpu::Status& s) {
  if (!s) throw std::runtime_error(s.message);
}

class GpuSuiteDevice : public SuiteDevice {
 public:
  GpuSuiteDevice() {
    require_cuda_driver();
    require(gpu::device_info(name_, sms_));
  }

  std::string name() const override { return name_; }
  std::string source() const override { return "gpu"; }
  u32 multiprocessors() const override { return u32(sms_); }

  u32 resident_ctas(const Workload& w) const override {
    u32 n = 0;
    require(gpu::resident_ctas(w, n));
    return n;
  }

  MeasuredRun measure(const Workload& w, int repeats) override {
    Workload run = w;
    run.resident_ctas = resident_ctas(w);
    gpu::DeviceProblem dev;
    // Planned kinds walk the plan the simulator builds with the workload's cost profile: the
    // same plan suite-run's schedule check replays.
    require(dev.create(run, /*record_trace=*/true, sim::plan_schedule(run)));
    require(dev.fill_random(w.q_lens.front() * 31u + w.head_dim));
    require(dev.run());  // warm-up: module load and first touches stay out of the traces
    require(dev.poison_outputs());
    MeasuredRun out;
    for (int r = 0; r < repeats; ++r) {
      require(dev.run());
      if (r == 0) {
        std::uint64_t lse_unwritten = 0;
        require(dev.count_unwritten(out.unwritten_outputs, lse_unwritten));
        out.unwritten_outputs += lse_unwritten;
      }
      Trace t;
      require(dev.download_trace(t));  // waits for the launch
      out.repeats.push_back(std::move(t));
    }
    return out;
  }

 private:
  std::string name_;
  int sms_ = 0;
};

}  // namespace

std::unique_ptr<SuiteDevice> open_gpu_suite_device() {
  return std::make_unique<GpuSuiteDevice>();
}

}  // namespace tilesched::tools
