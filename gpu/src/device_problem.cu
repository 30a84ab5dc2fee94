// DeviceProblem: device buffers through thrust::device_vector, device-side poison counting.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "cuda_status.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/splitmix64.hpp"

namespace tilesched::gpu {
namespace {

using detail::cuda_status;

constexpr std::uint16_t kPoisonBits = 0xFFFF;  // a NaN in bf16; the kernel never produces it

// Thrust reports allocation and launch failures by exception; the API reports Status.
template <class F>
Status guarded(const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return Status::error(fmt::format("{} failed: {}", what, e.what()));
  }
  return cuda_status(cudaGetLastError(), what);
}

struct IsPoisonBits {
  __host__ __device__ bool operator()(std::uint16_t b) const { return b == kPoisonBits; }
};
struct IsNan {
  __host__ __device__ bool operator()(float x) const { return x != x; }
};

// splitmix64 per element: independent of launch shape, so the same seed gives the same tensor.
__global__ void fill_uniform_bf16(std::uint16_t* out, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float u = uniform_symmetric(splitmix64_at(seed, i));
    const __nv_bfloat16 b = __float2bfloat16_rn(u);
    out[i] = *reinterpret_cast<const std::uint16_t*>(&b);
  }
}

}  // namespace

struct DeviceProblem::Buffers {
  thrust::device_vector<std::uint16_t> q, k, v, o;
  thrust::device_vector<float> lse;
  thrust::device_vector<u32> q_offsets, kv_offsets, counter;
  thrust::device_vector<float> split;  // the splitting kinds' workspace (empty otherwise)
  thrust::device_vector<std::int32_t> page_table;  // a paged KV cache's (empty otherwise)
  std::vector<std::int32_t> host_page_table;       // its host copy, which upload scatters by
  // The schedule plan's arrays (SchedulePlan::array_fields' order; the planned and split
  // schedulers' only, empty otherwise).
  std::array<thrust::device_vector<u32>, SchedulePlan::kArrays> plan;
};

namespace {

const u32* device_data(const thrust::device_vector<u32>& v) {
  return v.empty() ? nullptr : thrust::raw_pointer_cast(v.data());
}

// A paged cache's pages in a shuffled order: sequence b's pages are the next pages_of(b) entries
// of a permutation of [0, pages) drawn from a fixed seed, so that no sequence's pages are
// consecutive or in key order and a kernel that ignored the table would read the wrong keys.
// Rows [b][pages_of(b), stride) stay 0, a valid page the kernel never reads for b.
std::vector<std::int32_t> shuffled_page_table(const Workload& w, u32 pages, u32 stride) {
  std::vector<std::int32_t> order(pages);
  for (u32 i = 0; i < pages; ++i) order[i] = static_cast<std::int32_t>(i);
  for (u32 i = pages; i > 1; --i)
    std::swap(order[i - 1], order[splitmix64_at(0x9A6E5ull, i) % i]);
  std::vector<std::int32_t> table(std::size_t(w.batch_size()) * stride, 0);
  u32 next = 0;
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 p = 0; p < w.pages_of(b); ++p) table[std::size_t(b) * stride + p] = order[next++];
  return table;
}

u32 total_pages(const Workload& w) {
  u32 pages = 0;
  for (u32 b = 0; b < w.batch_size(); ++b) pages += w.pages_of(b);
  return std::max<u32>(pages, 1);
}

// K or V of the layouts of attention.hpp (rows of each sequence from its row offset) scattered
// into a paged cache of `table`.
std::vector<std::uint16_t> to_pages(const Workload& w, const std::vector<std::uint16_t>& rows,
                                    const std::vector<std::int32_t>& table, u32 stride, u32 pages) {
  const std::size_t row = std::size_t(w.num_kv_heads) * w.head_dim;
  // Unused rows of the last pages hold finite values, as a zero-initialised cache does.
  std::vector<std::uint16_t> cache(std::size_t(pages) * w.page_size * row, 0);
  const std::vector<u32> offsets = w.kv_row_offsets();
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 j = 0; j < w.key_len(b); ++j) {
      const std::size_t page = static_cast<std::size_t>(table[std::size_t(b) * stride + j / w.page_size]);
      std::copy_n(rows.begin() + std::ptrdiff_t((offsets[b] + j) * row), row,
                  cache.begin() + std::ptrdiff_t((page * w.page_size + j % w.page_size) * row));
    }
  return cache;
}

}  // namespace

DeviceProblem::DeviceProblem() = default;
DeviceProblem::~DeviceProblem() = default;

Status DeviceProblem::create(const Workload& w, bool record_trace, const SchedulePlan& plan,
                             ClusterPolicy clusters) {
  if (std::string m = w.validate(); !m.empty()) return Status::error("invalid workload: " + m);
  if (!plan.arrays().has_arrays_for(w.scheduler))
    return Status::error(fmt::format(
        "the {} scheduler walks a schedule plan, and none was given (sim::plan_schedule)",
        to_string(w.scheduler)));
  if (std::string m = schedule_plan_mismatch(w, plan); !m.empty()) return Status::error(m);
  workload_ = w;
  plan_ = plan.arrays();
  record_trace_ = record_trace;
  clusters_ = clusters;
  // At least one element each: an empty batch still gets valid device pointers.
  const std::size_t q_elems = std::max<std::size_t>(w.q_elements(), 1);
  const std::size_t kv_elems = std::max<std::size_t>(
      w.page_size == 0 ? w.kv_elements()
                       : std::size_t(total_pages(w)) * w.page_size * w.num_kv_heads * w.head_dim,
      1);
  const std::size_t lse_elems = std::max<std::size_t>(w.lse_elements(), 1);
  if (Status s = guarded(
          "allocating device buffers",
          [&] {
            buffers_ = std::make_unique<Buffers>();
            buffers_->q.resize(q_elems);
            buffers_->o.resize(q_elems);
            buffers_->k.resize(kv_elems);
            buffers_->v.resize(kv_elems);
            buffers_->lse.resize(lse_elems);
            const std::vector<u32> qo = w.q_row_offsets(), ko = w.kv_row_offsets();
            buffers_->q_offsets.assign(qo.begin(), qo.end());
            buffers_->kv_offsets.assign(ko.begin(), ko.end());
            buffers_->counter.resize(2);  // the counter and launch_done
            buffers_->split.resize((split_workspace_bytes(w) + sizeof(float) - 1) / sizeof(float));
            // plan_ keeps the plan's counts and points at the device copies of its arrays.
            const auto fields = plan.array_fields(plan_);
            for (std::size_t i = 0; i < fields.size(); ++i) {
              buffers_->plan[i].assign(fields[i].values->begin(), fields[i].values->end());
              if (*fields[i].field != nullptr) *fields[i].field = device_data(buffers_->plan[i]);
            }
            if (w.page_size != 0) {
              buffers_->host_page_table = shuffled_page_table(w, total_pages(w), page_stride());
              buffers_->page_table.assign(buffers_->host_page_table.begin(),
                                          buffers_->host_page_table.end());
            }
          });
      !s)
    return s;
  if (record_trace)
    if (Status s = recorder_.allocate(processed_tile_count(w)); !s) return s;
  return plan_launch(args(), launch_plan_);
}

Status DeviceProblem::upload(const std::vector<std::uint16_t>& q,
                             const std::vector<std::uint16_t>& k,
                             const std::vector<std::uint16_t>& v) {
  const std::size_t q_elems = workload_.q_elements(), kv_elems = workload_.kv_elements();
  if (q.size() != q_elems || k.size() != kv_elems || v.size() != kv_elems)
    return Status::error(
        fmt::format("input sizes do not match the workload: Q {} (want {}), K/V {}/{} (want {})",
                    q.size(), q_elems, k.size(), v.size(), kv_elems));
  return guarded("uploading Q, K, V", [&] {
    thrust::copy(q.begin(), q.end(), buffers_->q.begin());
    if (workload_.page_size == 0) {
      thrust::copy(k.begin(), k.end(), buffers_->k.begin());
      thrust::copy(v.begin(), v.end(), buffers_->v.begin());
      return;
    }
    const std::vector<std::int32_t>& table = buffers_->host_page_table;
    const u32 pages = total_pages(workload_);
    const std::vector<std::uint16_t> kp = to_pages(workload_, k, table, page_stride(), pages);
    const std::vector<std::uint16_t> vp = to_pages(workload_, v, table, page_stride(), pages);
    thrust::copy(kp.begin(), kp.end(), buffers_->k.begin());
    thrust::copy(vp.begin(), vp.end(), buffers_->v.begin());
  });
}

Status DeviceProblem::fill_random(std::uint64_t seed) {
  return guarded("filling Q, K, V", [&] {
    const int blocks = 1024, threads = 256;
    fill_uniform_bf16<<<blocks, threads>>>(thrust::raw_pointer_cast(buffers_->q.data()),
                                           buffers_->q.size(), seed * 3 + 0);
    fill_uniform_bf16<<<blocks, threads>>>(thrust::raw_pointer_cast(buffers_->k.data()),
                                           buffers_->k.size(), seed * 3 + 1);
    fill_uniform_bf16<<<blocks, threads>>>(thrust::raw_pointer_cast(buffers_->v.data()),
                                           buffers_->v.size(), seed * 3 + 2);
  });
}

Status DeviceProblem::poison_outputs() {
  return guarded("poisoning O and LSE", [&] {
    thrust::fill(buffers_->o.begin(), buffers_->o.end(), kPoisonBits);
    thrust::fill(buffers_->lse.begin(), buffers_->lse.end(), std::nanf(""));
  });
}

AttentionArgs DeviceProblem::args() const {
  AttentionArgs a;
  a.workload = workload_;
  a.q = thrust::raw_pointer_cast(buffers_->q.data());
  a.k = thrust::raw_pointer_cast(buffers_->k.data());
  a.v = thrust::raw_pointer_cast(buffers_->v.data());
  a.o = thrust::raw_pointer_cast(buffers_->o.data());
  a.lse = thrust::raw_pointer_cast(buffers_->lse.data());
  a.q_row_offsets = thrust::raw_pointer_cast(buffers_->q_offsets.data());
  a.kv_row_offsets = thrust::raw_pointer_cast(buffers_->kv_offsets.data());
  a.queue_counter = thrust::raw_pointer_cast(buffers_->counter.data());
  if (launch_reuse_) {
    a.launch_done = a.queue_counter + 1;
    a.launch_ready = launch_ready_;
  }
  a.split_workspace =
      buffers_->split.empty() ? nullptr : thrust::raw_pointer_cast(buffers_->split.data());
  a.plan = plan_;
  if (record_trace_ && tracing_) a.trace = recorder_.buffer();
  a.softmax_scale = scale_;
  a.kernel_block_n = kernel_block_n_;
  if (workload_.page_size != 0)
    a.pages = KvPages{thrust::raw_pointer_cast(buffers_->page_table.data()), page_stride(),
                      total_pages(workload_)};
  a.clusters = clusters_;
  a.stream = stream_;
  return a;
}

Status DeviceProblem::run() {
  Status s = launch_planned(args(), launch_plan_);
  if (!s || !launch_reuse_ || launch_ready_) return s;
  // A launch with launch_done leaves the counter at its start and the trace's count at 0 for the
  // next one (the workload, and so the counter's start, never changes here). Not a launch captured
  // in a graph: it has not run. (Asked once: every launch after the first ready one restores
  // the words as well.)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  s = cuda_status(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream_), &capture),
                  "cudaStreamIsCapturing");
  if (s && capture == cudaStreamCaptureStatusNone) launch_ready_ = true;
  return s;
}

Status DeviceProblem::synchronize() {
  return cuda_status(cudaDeviceSynchronize(), "the attention kernel");
}

Status DeviceProblem::count_unwritten(std::uint64_t& o_unwritten, std::uint64_t& lse_unwritten) {
  if (Status s = synchronize(); !s) return s;
  const std::size_t q_elems = workload_.q_elements(), lse_elems = workload_.lse_elements();
  return guarded("counting unwritten outputs", [&] {
    o_unwritten = static_cast<std::uint64_t>(
        thrust::count_if(buffers_->o.begin(), buffers_->o.begin() + q_elems, IsPoisonBits{}));
    lse_unwritten = static_cast<std::uint64_t>(
        thrust::count_if(buffers_->lse.begin(), buffers_->lse.begin() + lse_elems, IsNan{}));
  });
}

Status DeviceProblem::download(std::vector<std::uint16_t>& o_bits, std::vector<float>& lse) {
  if (Status s = synchronize(); !s) return s;
  const std::size_t q_elems = workload_.q_elements(), lse_elems = workload_.lse_elements();
  return guarded("downloading O and LSE", [&] {
    o_bits.resize(q_elems);
    lse.resize(lse_elems);
    thrust::copy(buffers_->o.begin(), buffers_->o.begin() + q_elems, o_bits.begin());
    thrust::copy(buffers_->lse.begin(), buffers_->lse.begin() + lse_elems, lse.begin());
  });
}

Status DeviceProblem::download_trace(Trace& out) const {
  if (!record_trace_) return Status::error("this problem was created without trace recording");
  return recorder_.download(workload_, launch_plan_, out);
}

Status DeviceProblem::download_raw_trace(std::vector<DeviceTraceEvent>& out) const {
  if (!record_trace_) return Status::error("this problem was created without trace recording");
  return recorder_.download_raw(out);
}

Status DeviceProblem::time_launches(int launches, const std::vector<bool>* tracing,
                                    std::vector<float>& ms) {
  ms.clear();
  const auto stream = static_cast<cudaStream_t>(stream_);
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(launches));
  for (auto& e : events)
    if (Status s = cuda_status(cudaEventCreate(&e), "cudaEventCreate"); !s) return s;
  Status result = Status::success();
  for (int i = 0; i < launches && result; ++i) {
    if (tracing != nullptr) set_tracing((*tracing)[static_cast<std::size_t>(i)]);
    result = cuda_status(cudaEventRecord(events[2 * i], stream), "cudaEventRecord");
    if (result) result = run();
    if (result) result = cuda_status(cudaEventRecord(events[2 * i + 1], stream), "cudaEventRecord");
  }
  if (result) result = synchronize();
  for (int i = 0; i < launches && result; ++i) {
    float t = 0;
    result = cuda_status(cudaEventElapsedTime(&t, events[2 * i], events[2 * i + 1]),
                         "cudaEventElapsedTime");
    ms.push_back(t);
  }
  for (auto& e : events) (void)cudaEventDestroy(e);
  return result;
}

Status DeviceProblem::time_tracing_pairs(int pairs, std::uint64_t seed,
                                         std::vector<float>& plain_ms,
                                         std::vector<float>& traced_ms) {
  plain_ms.clear();
  traced_ms.clear();
  if (!record_trace_)
    return Status::error("timing traced launches needs buffers created to record a trace");
  std::vector<bool> traced(2 * static_cast<std::size_t>(pairs));
  std::uint64_t state = seed;
  for (std::size_t p = 0; p < traced.size() / 2; ++p) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // an LCG step
    const bool traced_first = (state >> 63) != 0;
    traced[2 * p] = traced_first;
    traced[2 * p + 1] = !traced_first;
  }
  std::vector<float> ms;
  const Status result = time_launches(2 * pairs, &traced, ms);
  set_tracing(false);
  for (std::size_t i = 0; i < ms.size(); ++i) (traced[i] ? traced_ms : plain_ms).push_back(ms[i]);
  return result;
}

Status DeviceProblem::time(int warmup, int iterations, std::vector<float>& ms) {
  ms.clear();
  for (int i = 0; i < warmup; ++i)
    if (Status s = run(); !s) return s;
  if (Status s = synchronize(); !s) return s;
  return time_launches(iterations, nullptr, ms);
}

Status run_recorded(const Workload& w, const DeviceInputs& inputs, bool warm_up, DeviceRun& out,
                    const SchedulePlan& plan, u32 kernel_block_n, ClusterPolicy clusters) {
  DeviceProblem dev;
  dev.set_kernel_block_n(kernel_block_n);
  Status st = dev.create(w, /*record_trace=*/true, plan, clusters);
  if (st) out.launch = dev.launch_plan();
  if (st) st = dev.upload(inputs.q, inputs.k, inputs.v);
  if (st && warm_up) st = dev.run();
  if (st) st = dev.poison_outputs();
  if (st) st = dev.run();
  if (st) st = dev.count_unwritten(out.o_unwritten, out.lse_unwritten);
  if (st) st = dev.download(out.o_bits, out.lse);
  if (st) st = dev.download_trace(out.trace);
  return st;
}

}  // namespace tilesched::gpu
