// Device trace buffers and their conversion to the common Trace.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <string>

#include "cuda_status.hpp"
#include "tilesched/gpu/attention.hpp"

namespace tilesched::gpu {
namespace {

using detail::cuda_status;

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

TraceRecorder::~TraceRecorder() {
  // Destructors cannot report; a failed free here would only leak device memory.
  if (buffer_.events != nullptr) (void)cudaFree(buffer_.events);
  if (buffer_.count != nullptr) (void)cudaFree(buffer_.count);
}

Status TraceRecorder::allocate(u32 capacity) {
  if (buffer_.events != nullptr && buffer_.capacity >= capacity) return Status::success();
  if (buffer_.events != nullptr) (void)cudaFree(buffer_.events);
  buffer_.events = nullptr;
  buffer_.capacity = 0;
  void* events = nullptr;
  if (Status s =
          cuda_status(cudaMalloc(&events, std::max<u32>(capacity, 1) * sizeof(DeviceTraceEvent)),
                      "cudaMalloc(trace events)");
      !s)
    return s;
  buffer_.events = static_cast<DeviceTraceEvent*>(events);
  buffer_.capacity = capacity;
  if (buffer_.count == nullptr) {  // count and last_count
    void* count = nullptr;
    if (Status s = cuda_status(cudaMalloc(&count, 2 * sizeof(u32)), "cudaMalloc(trace count)"); !s)
      return s;
    buffer_.count = static_cast<u32*>(count);
    buffer_.last_count = buffer_.count + 1;
  }
  return cuda_status(cudaMemset(buffer_.count, 0, 2 * sizeof(u32)), "cudaMemset(trace count)");
}

Status TraceRecorder::download_raw(std::vector<DeviceTraceEvent>& out) const {
  out.clear();
  if (buffer_.events == nullptr) return Status::error("the trace recorder has no buffer");
  if (Status s = cuda_status(cudaDeviceSynchronize(), "the attention kernel"); !s) return s;
  // The launch's events: in count, or moved to last_count by a launch with launch_done (the
  // other word is 0 then: attention_forward's reset zeroes both, and the move leaves count at 0).
  u32 words[2] = {0, 0};
  if (Status s = cuda_status(cudaMemcpy(words, buffer_.count, sizeof words, cudaMemcpyDeviceToHost),
                             "copying the trace count");
      !s)
    return s;
  const u32 count = words[0] + words[1];
  if (count > buffer_.capacity)
    return Status::error(fmt::format(
        "the kernel recorded {} tile events but the buffer holds {} (a tile processed more than "
        "once?)",
        count, buffer_.capacity));
  out.resize(count);
  if (count == 0) return Status::success();
  return cuda_status(cudaMemcpy(out.data(), buffer_.events, count * sizeof(DeviceTraceEvent),
                                cudaMemcpyDeviceToHost),
                     "copying the trace events");
}

Status TraceRecorder::download(const Workload& w, const LaunchPlan& launch, Trace& out) const {
  std::vector<DeviceTraceEvent> raw;
  if (Status s = download_raw(raw); !s) return s;
  std::string name;
  int sms = 0;
  if (Status s = device_info(name, sms); !s) return s;
  out = Trace{};
  out.source = "gpu";
  out.device = name;
  out.created = utc_now_iso8601();
  out.workload = w;
  out.launched_ctas = launch.grid.count();
  std::uint64_t t0 = ~std::uint64_t{0};
  for (const auto& e : raw) t0 = std::min(t0, e.start_ns);
  out.events.reserve(raw.size());
  for (const auto& e : raw) {
    TraceEvent t;
    t.cta = e.cta;
    t.step = e.step;
    t.linear_idx = e.linear_idx;
    t.prompt_offset = e.prompt_offset;
    t.head_idx = e.head_idx;
    t.prompt_idx = e.prompt_idx;
    t.query_rows = e.query_rows;
    t.kv_blocks = e.kv_blocks;
    t.kv_block_begin = e.kv_block_begin;
    t.start_us = static_cast<double>(e.start_ns - t0) * 1e-3;
    t.end_us = static_cast<double>(e.end_ns - t0) * 1e-3;
    t.sm_id = static_cast<std::int32_t>(e.sm_id);
    out.events.push_back(t);
  }
  std::sort(out.events.begin(), out.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.cta != b.cta ? a.cta < b.cta : a.step < b.step;
  });
  return Status::success();
}

}  // namespace tilesched::gpu
