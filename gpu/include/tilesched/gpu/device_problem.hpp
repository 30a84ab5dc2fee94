// One attention problem's device buffers (Q, K, V, O, LSE, row offsets, queue counter, trace) for
// tests, the tool and the benchmark: upload inputs, poison outputs, run, count what was never
// written, time, download. Thrust containers live behind the pimpl so includers need no CUDA.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu {

class DeviceProblem {
 public:
  DeviceProblem();
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;

  // Allocates every buffer for `w` (validated first); inputs are left unset.
  Status create(const Workload& w, bool record_trace);
  // The exact bf16 bits of Q, K, V in the layouts of attention.hpp.
  Status upload(const std::vector<std::uint16_t>& q, const std::vector<std::uint16_t>& k,
                const std::vector<std::uint16_t>& v);
  // Uniform values in [-1, 1] rounded to bf16, generated on the device (for large benchmarks).
  Status fill_random(std::uint64_t seed);
  // O := all-ones bits (a bf16 NaN no real output has), LSE := NaN.
  Status poison_outputs();

  AttentionArgs args() const;  // arguments for attention_forward over these buffers
  void set_softmax_scale(float s) { scale_ = s; }
  void set_stream(void* stream) { stream_ = stream; }
  Status run();          // attention_forward(args())
  Status synchronize();  // waits and reports any error from the kernel

  // Elements of O still holding the poison pattern, and LSE entries still NaN (counted on the
  // device with thrust::count_if).
  Status count_unwritten(std::uint64_t& o_unwritten, std::uint64_t& lse_unwritten);
  Status download(std::vector<std::uint16_t>& o_bits, std::vector<float>& lse);
  Status download_trace(Trace& out) const;
  Status download_raw_trace(std::vector<DeviceTraceEvent>& out) const;

  // Times `iterations` launches after `warmup` with CUDA events, one pair per launch; returns the
  // per-launch milliseconds.
  Status time(int warmup, int iterations, std::vector<float>& ms);

  const Workload& workload() const { return workload_; }

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
  Workload workload_;
  TraceRecorder recorder_;
  bool record_trace_ = false;
  float scale_ = 0.f;
  void* stream_ = nullptr;
};

}  // namespace tilesched::gpu
