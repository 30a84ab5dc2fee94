// The compiled half of the Python package: one attention step planned on the host (the workload,
// its scheduler and tile height, the schedule plan and the kernel's launch) with the device words
// the launch needs, owned in one allocation. The Python layer builds one per batch layout and
// launches it on caller-owned tensors for every layer of a step.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tilesched/schedule_plan.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::python {

// What a plan is asked for (the Python layer's arguments, reduced to host values).
struct StepRequest {
  std::vector<u32> q_lens, kv_lens;
  u32 num_q_heads = 0, num_kv_heads = 0, head_dim = 0;
  bool causal = false;
  u32 page_size = 0;          // 0: K and V hold each sequence's keys in consecutive rows
  u32 max_pages_per_seq = 0;  // the page table's row length (paged only)
  u32 num_pages = 0;          // pages in the cache (paged only)
  std::string scheduler = "auto";
  u32 num_ctas = 0;        // 0: the device's resident CTAs (the cost profile's without a device)
  u32 block_m = 0;         // 0: chosen (the simulator's pick; 128 when deterministic)
  u32 kernel_block_n = 0;  // 0: chosen
  std::string clusters = "auto";
  bool deterministic = false;
  // Decoding (SPEC §6): 1 to 16 new tokens per sequence, one tile per (sequence, KV head) whose
  // rows are the new tokens of the group's query heads.
  bool decoding = false;
  // Which API's names the tensors have in error messages: "varlen" (q, k, v, page_table) or
  // "kvcache" (q, k_cache, v_cache, page_table).
  std::string api = "varlen";
  // Plan for the current CUDA device (allocating the launch's words there), or on the host only:
  // the schedule, the simulator's trace and the tensors' checks, with no launch.
  bool on_device = true;
};

// Arguments that break a rule (the binding raises ValueError).
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// A tensor of the wrong element type (the binding raises TypeError).
struct DtypeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// The device or the CUDA runtime failed (the binding raises RuntimeError).
struct DeviceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A tensor as the binding sees it (DLPack metadata; the caller keeps it alive). Of fixed size, so
// that reading a tensor's metadata on every launch allocates nothing: the tensors of a plan have
// at most kMaxDims dimensions; a view of more keeps its true `ndim` (which fails every shape
// check) and its first kMaxDims sizes.
struct TensorView {
  static constexpr int kMaxDims = 4;
  void* data = nullptr;
  int ndim = 0;
  std::int64_t shape[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};          // in elements
  std::uint8_t dtype_code = 0, dtype_bits = 0;  // DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat
  int device_type = 0, device_id = 0;           // DLPack: 1 CPU, 2 CUDA

  // Sets the dimensions from DLPack's arrays; null strides mean row-major (DLPack's convention).
  void set_dims(int dims, const std::int64_t* sizes, const std::int64_t* element_strides);
};

class StepPlan {
 public:
  explicit StepPlan(const StepRequest& request);
  ~StepPlan();
  StepPlan(const StepPlan&) = delete;
  StepPlan& operator=(const StepPlan&) = delete;

  const Workload& workload() const { return workload_; }
  const StepRequest& request() const { return request_; }
  // Two lines for people: the schedule (scheduler, BM, CTAs, and why), then the kernel's launch.
  std::string describe() const;
  u32 kernel_block_n() const;
  int device() const { return device_; }
  u32 total_q() const { return total_q_; }
  u32 total_k() const { return total_k_; }  // key rows of a packed cache (0 when paged)

  // Checks the tensors against the plan (ArgumentError, DtypeError) and launches on `stream` (a
  // cudaStream_t as an integer). With `record`, records this launch's trace into `trace`
  // (synchronising the device). A plan's launches must follow one another on the device: they
  // share its counter.
  void run(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& o,
           const TensorView& lse, const TensorView* page_table, float softmax_scale,
           std::uintptr_t stream, bool record, Trace& trace);
  // The checks of run alone.
  void check_tensors(const TensorView& q, const TensorView& k, const TensorView& v,
                     const TensorView& o, const TensorView& lse,
                     const TensorView* page_table) const;

  // The simulator's trace of this plan (its schedule replayed with the built-in cost model).
  Trace simulate() const;

 private:
  struct Device;
  StepRequest request_;
  Workload workload_;
  SchedulePlan schedule_;
  std::string choice_note_;
  u32 total_q_ = 0, total_k_ = 0;
  int device_ = -1;
  std::unique_ptr<Device> dev_;
};

// Whether this build launches kernels (the GPU half was compiled in).
bool gpu_built();
// gpu::kernel_block_ns (the kernel's K/V blocks at a head dim; empty for one it does not run).
std::vector<u32> kernel_block_ns(u32 head_dim);
// gpu::kernel_block_ms (the kernel's tile heights at a head dim).
std::vector<u32> kernel_block_ms(u32 head_dim);

}  // namespace tilesched::python
