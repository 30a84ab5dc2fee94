#include "step_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "tilesched/sim/sim.hpp"
#include "viz/block_m_choice.hpp"
#include "viz/scheduler_choice.hpp"

#if TILESCHED_PYTHON_GPU
#include <cuda_runtime_api.h>

#include "tilesched/gpu/attention.hpp"
#endif

namespace tilesched::python {

namespace {

constexpr std::uint8_t kInt = 0, kBfloat = 4, kFloat = 2;
constexpr int kCuda = 2;

// DLPack's DLDeviceType, named as people know the devices.
std::string dlpack_device_name(int type) {
  switch (type) {
    case 1: return "the CPU";
    case 3: return "pinned host memory (CUDA host)";
    case 13: return "CUDA managed memory";
    default: return fmt::format("DLPack device type {}", type);
  }
}

[[noreturn]] void fail(const std::string& m) { throw ArgumentError(m); }

// "[a, b, c]": a view's sizes or strides, or a shape the plan needs (a view of more than
// TensorView::kMaxDims dimensions shows the first ones and its count).
std::string dims_text(const std::int64_t* values, int ndim) {
  const int shown = std::min(ndim, TensorView::kMaxDims);
  std::string out = "[";
  for (int i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  if (ndim > shown) out += fmt::format(", ... ({} dimensions)", ndim);
  return out + "]";
}

std::string dtype_text(std::uint8_t code, std::uint8_t bits) {
  switch (code) {
    case 0: return fmt::format("int{}", bits);
    case 1: return fmt::format("uint{}", bits);
    case 2: return fmt::format("float{}", bits);
    case 4: return fmt::format("bfloat{}", bits);
    case 5: return fmt::format("complex{}", bits);
    case 6: return "bool";
  }
  return fmt::format("DLPack type code {} of {} bits", code, bits);
}

// What the kernel runs (head dim, lengths, options), checked before anything is planned; the
// rules that follow from the workload (heads, pages per row) are the Workload's own.
void check_shape_request(const StepRequest& r) {
  if (r.q_lens.empty()) fail("the batch is empty: give at least one sequence");
  if (r.kv_lens.size() != r.q_lens.size())
    fail(fmt::format("{} query lengths but {} key lengths: give one of each per sequence",
                     r.q_lens.size(), r.kv_lens.size()));
  if (r.num_q_heads == 0 || r.num_kv_heads == 0) fail("head counts must be at least 1");
  if (r.head_dim != 64 && r.head_dim != 128 && r.head_dim != 256)
    fail(fmt::format("head dim {} is not supported: the kernel runs 64, 128 and 256", r.head_dim));
  for (std::size_t b = 0; b < r.q_lens.size(); ++b)
    if (r.kv_lens[b] == 0 && r.q_lens[b] > 0)
      fail(fmt::format("sequence {} has {} queries but no keys: every query needs a key", b,
                       r.q_lens[b]));
  if (r.page_size > 0) {
    if (r.page_size > Workload::kMaxPageSize)
      fail(fmt::format("page size {} exceeds {}", r.page_size, Workload::kMaxPageSize));
    if (r.num_pages == 0) fail("a paged cache needs at least one page");
  }
  if (r.clusters != "auto" && r.clusters != "never" && r.clusters != "always")
    fail(fmt::format("clusters must be 'auto', 'never' or 'always', not '{}'", r.clusters));
  if (r.api != "varlen" && r.api != "kvcache")
    fail(fmt::format("api must be 'varlen' or 'kvcache', not '{}'", r.api));
}


// The CTAs the device (or, on the host, the cost profile) runs at once for `w`.
u32 resident_of(const Workload& w, bool on_device, const sim::CostModel& cost) {
#if TILESCHED_PYTHON_GPU
  if (on_device) {
    u32 n = 0;
    if (gpu::Status s = gpu::resident_ctas(w, n); !s) throw DeviceError(s.message);
    return n;
  }
#endif
  (void)on_device;
  return cost.resident_ctas(w.head_dim);
}

}  // namespace

bool gpu_built() {
#if TILESCHED_PYTHON_GPU
  return true;
#else
  return false;
#endif
}

// This file also builds without the GPU half (for the simulator and the checks): the kernel's
// shapes are then its own copy of them.
std::vector<u32> kernel_block_ms(u32 head_dim) {
#if TILESCHED_PYTHON_GPU
  return gpu::kernel_block_ms(head_dim);
#else
  return head_dim == 64 ? std::vector<u32>{128, 192} : std::vector<u32>{128};
#endif
}

std::vector<u32> kernel_block_ns(u32 head_dim) {
#if TILESCHED_PYTHON_GPU
  return gpu::kernel_block_ns(head_dim);
#else
  if (head_dim == 256) return {80, 64};
  if (head_dim == 64 || head_dim == 128) return {128};
  return {};
#endif
}

namespace {

// The splitting kinds count their pieces in the kernel's K/V blocks (attention.hpp): `w` under one
// of them takes the kernel's long rows' BN, the first of kernel_block_ns; a head dim the kernel
// does not run keeps its block_n (the checks name the head dim).
void use_kernel_split_block_n(Workload& w) {
  if (splits_tiles(w.scheduler) && !kernel_block_ns(w.head_dim).empty())
    w.block_n = kernel_block_ns(w.head_dim).front();
}

// Whether `w` can run under splitting kind `kind` at the kernel's split K/V block.
bool can_split(const Workload& w, SchedulerKind kind) {
  Workload split = w;
  split.scheduler = kind;
  use_kernel_split_block_n(split);
  return split.validate().empty();
}

// How much faster than the dynamic schedulers' pick a splitting kind must be predicted to replace
// it for a causal batch: the replay predicts the splitting kinds less closely than the whole-tile
// ones (docs/prediction-report.md, "The serving suite on an H100"), so only a clear gain (a batch
// of fewer tiles than CTAs) moves the pick.
constexpr double kSplitKindMargin = 0.10;

}  // namespace

#if TILESCHED_PYTHON_GPU
namespace {

// Makes `device` the current CUDA device for a scope and restores the one before (the kernel
// launches, and the trace recorder allocates, on the current device): what torch.cuda.device does,
// without its Python objects, and only a query where the device is current already.
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess)
      throw DeviceError(fmt::format("cudaGetDevice: {}", cudaGetErrorString(cudaGetLastError())));
    if (previous_ == device) return;
    if (cudaSetDevice(device) != cudaSuccess)
      throw DeviceError(fmt::format("making cuda:{} current: {}", device,
                                    cudaGetErrorString(cudaGetLastError())));
    switched_ = true;
  }
  ~CurrentDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace

struct StepPlan::Device {
  void* words = nullptr;  // row offsets, counter, launch_done, plan arrays, split workspace
  gpu::AttentionArgs args;
  gpu::LaunchPlan launch;
  std::unique_ptr<gpu::TraceRecorder> recorder;
  bool launch_ready = false;
  ~Device() {
    if (words != nullptr) cudaFree(words);
  }
};
#else
struct StepPlan::Device {};
#endif

StepPlan::StepPlan(const StepRequest& r) : request_(r) {
  check_shape_request(r);
  Workload& w = workload_;
  w.q_lens = r.q_lens;
  w.kv_lens = r.kv_lens;
  w.padded = false;
  w.num_q_heads = r.num_q_heads;
  w.num_kv_heads = r.num_kv_heads;
  w.head_dim = r.head_dim;
  w.mask = r.causal ? Mask::Causal : Mask::None;
  w.decoding = r.decoding;
  // The workload's BN counts KV blocks for the cost model (fitted on blocks of 128 keys); the
  // kernel tiles keys by its own BN.
  w.block_n = 128;
  w.page_size = r.page_size;
  if (std::string m = w.heads_problem(); !m.empty()) fail(m);
  if (r.page_size > 0 && w.max_pages_per_seq() > r.max_pages_per_seq)
    fail(fmt::format(
        "page_table has {} pages per row but a sequence of {} keys needs {} pages of {}",
        r.max_pages_per_seq, w.max_key_len(), w.max_pages_per_seq(), r.page_size));
  if (r.causal)
    for (std::size_t b = 0; b < r.q_lens.size(); ++b)
      if (r.q_lens[b] > r.kv_lens[b])
        fail(fmt::format(
            "sequence {} has more queries ({}) than keys ({}): a bottom-right causal mask would "
            "leave its first queries no key",
            b, r.q_lens[b], r.kv_lens[b]));
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  const bool on_device = r.on_device;
  if (on_device && !gpu_built())
    throw DeviceError("this build of tilesched has no GPU half (it was built without CUDA)");
#if TILESCHED_PYTHON_GPU
  if (on_device) {
    if (cudaGetDevice(&device_) != cudaSuccess)
      throw DeviceError(fmt::format("no CUDA device: {}", cudaGetErrorString(cudaGetLastError())));
  }
#endif

  bool auto_scheduler = false;
  if (r.scheduler == "auto") {
    auto_scheduler = !r.deterministic;
    w.scheduler = SchedulerKind::Queued;
  } else if (auto kind = parse_enum<SchedulerKind>(r.scheduler)) {
    w.scheduler = *kind;
  } else {
    fail(fmt::format("unknown scheduler '{}': give 'auto' or one of {}", r.scheduler,
                     enum_choices<SchedulerKind>()));
  }
  use_kernel_split_block_n(w);
  if (r.deterministic) {
    // A tile's result must not depend on its batchmates: whole tiles of a fixed height and K/V
    // block, no clusters (docs/python.md, "Deterministic mode").
    if (w.scheduler == SchedulerKind::SplitTail || w.scheduler == SchedulerKind::StreamK)
      fail(fmt::format("deterministic=True runs whole tiles; the {} scheduler splits them by the "
                       "batch's shape",
                       to_string(w.scheduler)));
    if (r.block_m != 0 && r.block_m != 128)
      fail("deterministic=True runs tiles of 128 rows: leave block_m unset");
    if (r.clusters == "always") fail("deterministic=True runs without clusters");
  }
  const u32 given_ctas = r.num_ctas;
  const auto prepare = [&](Workload& x) {
    if (r.block_m != 0 || r.deterministic) {
      x.block_m = r.block_m != 0 ? r.block_m : 128;
    } else if (x.decoding) {
      // A decode tile is 16 tokens of each query head of the group whatever BM is: the lowest
      // tile height that holds them (check_kernel_support refuses a group none holds).
      x.block_m = 128;
      for (u32 bm : kernel_block_ms(x.head_dim))
        if (bm >= x.decode_tile_rows()) {
          x.block_m = bm;
          break;
        }
    } else {
      const viz::BlockMChoice c = viz::predict_block_m(
          x, kernel_block_ms(x.head_dim), cost,
          [&](const Workload& y) { return resident_of(y, on_device, cost); }, given_ctas == 0);
      x.block_m = c.block_m != 0 ? c.block_m : 128;
    }
    x.resident_ctas = resident_of(x, on_device, cost);
    x.num_ctas = given_ctas != 0 ? given_ctas : x.resident_ctas;
  };
  // A candidate at its kind's K/V block (the splitting kinds': the kernel's), then its tile height
  // and CTAs.
  const auto prepare_kind = [&](Workload& x) {
    use_kernel_split_block_n(x);
    prepare(x);
  };
  if (auto_scheduler && r.decoding) {
    // Decode tiles: few, and each reads a sequence's whole cache. Whole tiles in the static
    // stride, or split into KV ranges (split_kv's fixed chunks, stream_k's equal-cost ranges) so
    // that a small batch fills every CTA. The simulator picks.
    const std::vector<SchedulerKind> kinds = {SchedulerKind::Tile, SchedulerKind::SplitKv,
                                              SchedulerKind::StreamK};
    const viz::SchedulerChoice c = viz::predict_scheduler(w, kinds, cost, prepare_kind);
    if (!c.chosen()) fail("choosing the scheduler: " + c.why_not);
    workload_ = c.workload;
    choice_note_ = "auto: " + viz::describe_scheduler_choice(c);
  } else if (auto_scheduler && r.causal) {
    // The two dynamic schedulers, then the two that split a tile's keys: a batch of fewer tiles
    // than CTAs (a chunk of new tokens over a long cache: 2 tiles per query head for 256 new
    // tokens) leaves the other CTAs idle unless its tiles' keys are split among them. A splitting
    // kind replaces the dynamic pick only where the simulator predicts it faster by more than
    // kSplitKindMargin, its combine included.
    const viz::SchedulerChoice dynamic =
        viz::predict_scheduler(w, viz::kCausalSchedulerCandidates, cost, prepare);
    if (!dynamic.chosen()) fail("choosing the scheduler: " + dynamic.why_not);
    std::vector<SchedulerKind> split_kinds;
    for (const SchedulerKind kind : {SchedulerKind::SplitKv, SchedulerKind::StreamK})
      if (can_split(w, kind)) split_kinds.push_back(kind);
    viz::SchedulerChoice c = dynamic;
    if (!split_kinds.empty()) {
      const viz::SchedulerChoice split = viz::predict_scheduler(w, split_kinds, cost, prepare_kind);
      if (split.chosen()) {
        c.predicted_us.insert(c.predicted_us.end(), split.predicted_us.begin(),
                              split.predicted_us.end());
        if (split.pick_us() < dynamic.pick_us() * (1.0 - kSplitKindMargin))
          c.workload = split.workload;
      }
    }
    workload_ = c.workload;
    choice_note_ = "auto: " + viz::describe_scheduler_choice(c);
  } else if (auto_scheduler) {
    // Dense rows: every tile costs the same, and the static stride balances them, except for a
    // last partial wave, which split_tail spreads over every CTA where the batch is uniform (a
    // decode batch of fewer tiles than CTAs is all last wave). The simulator picks.
    std::vector<SchedulerKind> kinds = {SchedulerKind::Tile};
    if (can_split(w, SchedulerKind::SplitTail)) kinds.push_back(SchedulerKind::SplitTail);
    const viz::SchedulerChoice c = viz::predict_scheduler(w, kinds, cost, prepare_kind);
    if (!c.chosen()) fail("choosing the scheduler: " + c.why_not);
    workload_ = c.workload;
    choice_note_ = kinds.size() > 1 ? "auto: " + viz::describe_scheduler_choice(c)
                                    : "auto: tile (dense rows: every tile costs the same)";
  } else {
    prepare(w);
    if (r.deterministic) choice_note_ = "deterministic: whole tiles of 128 rows";
  }
  if (std::string m = workload_.validate(); !m.empty()) fail("invalid batch: " + m);
  schedule_ = sim::plan_schedule(workload_, cost);
  const std::vector<u32> q_offsets = workload_.q_row_offsets();
  const std::vector<u32> kv_offsets = workload_.kv_row_offsets();
  total_q_ = q_offsets.back();
  total_k_ = r.page_size > 0 ? 0 : kv_offsets.back();

#if TILESCHED_PYTHON_GPU
  dev_ = std::make_unique<Device>();
  gpu::AttentionArgs& a = dev_->args;
  a.workload = workload_;
  a.clusters = r.clusters == "never"    ? gpu::ClusterPolicy::Never
               : r.clusters == "always" ? gpu::ClusterPolicy::Always
                                        : gpu::ClusterPolicy::Auto;
  if (r.deterministic) a.clusters = gpu::ClusterPolicy::Never;
  a.kernel_block_n = r.kernel_block_n;
  if (r.deterministic && a.kernel_block_n == 0) {
    // The K/V block from the head dim and the page size alone, never from the batch.
    a.kernel_block_n = gpu::kernel_block_n(r.head_dim);
    if (r.page_size > 0 && r.page_size % a.kernel_block_n != 0)
      for (u32 bn : gpu::kernel_block_ns(r.head_dim))
        if (r.page_size % bn == 0) a.kernel_block_n = bn;
  }
  a.pages.max_pages_per_seq = r.max_pages_per_seq;
  a.pages.num_pages = r.num_pages;
  if (!on_device) {
    // Host plan: the launch is checked as far as it can be without a device.
    a.q = a.k = a.v = a.o = reinterpret_cast<void*>(std::uintptr_t{256});
    a.lse = reinterpret_cast<float*>(std::uintptr_t{256});
    if (gpu::Status s = gpu::check_kernel_support(workload_); !s) fail(s.message);
    return;
  }
  if (gpu::Status s = gpu::check_kernel_support(workload_); !s) fail(s.message);

  // One allocation: [q offsets | kv offsets | counter | launch_done | plan arrays][workspace].
  std::vector<u32> image;
  image.insert(image.end(), q_offsets.begin(), q_offsets.end());
  image.insert(image.end(), kv_offsets.begin(), kv_offsets.end());
  const std::size_t counter_at = image.size();
  image.push_back(0);  // queue counter (set by the first launch's reset)
  image.push_back(0);  // launch_done
  // Every array of the schedule plan, beside the field of PlanArrays that points at it.
  PlanArrays p = schedule_.arrays();
  const auto arrays = schedule_.array_fields(p);
  std::vector<std::size_t> array_at;
  for (const SchedulePlan::ArrayField& entry : arrays) {
    array_at.push_back(image.size());
    image.insert(image.end(), entry.values->begin(), entry.values->end());
  }
  const std::size_t workspace_bytes = gpu::split_workspace_bytes(workload_);
  const std::size_t workspace_at = (image.size() * sizeof(u32) + 255) / 256 * 256;
  if (cudaMalloc(&dev_->words, workspace_at + workspace_bytes) != cudaSuccess)
    throw DeviceError(fmt::format("allocating the plan's {} bytes of device words: {}",
                                  workspace_at + workspace_bytes,
                                  cudaGetErrorString(cudaGetLastError())));
  if (cudaMemcpy(dev_->words, image.data(), image.size() * sizeof(u32),
                 cudaMemcpyHostToDevice) != cudaSuccess)
    throw DeviceError(fmt::format("uploading the plan: {}",
                                  cudaGetErrorString(cudaGetLastError())));
  u32* base = static_cast<u32*>(dev_->words);
  a.q_row_offsets = base;
  a.kv_row_offsets = base + q_offsets.size();
  if (takes_from_counter(workload_.scheduler)) a.queue_counter = base + counter_at;
  a.launch_done = base + counter_at + 1;
  // The host pointers become the device copies' (null stays null: an array the kind walks not).
  for (std::size_t i = 0; i < arrays.size(); ++i)
    if (*arrays[i].field != nullptr) *arrays[i].field = base + array_at[i];
  a.plan = p;
  if (workspace_bytes > 0) a.split_workspace = static_cast<char*>(dev_->words) + workspace_at;
  // plan_launch checks pointers it does not read; run sets the real ones.
  a.q = a.k = a.v = a.o = dev_->words;
  a.lse = static_cast<float*>(dev_->words);
  if (r.page_size > 0) a.pages.page_table = reinterpret_cast<const std::int32_t*>(dev_->words);
  if (gpu::Status s = gpu::plan_launch(a, dev_->launch); !s) fail(s.message);
#endif
}

StepPlan::~StepPlan() = default;

u32 StepPlan::kernel_block_n() const {
#if TILESCHED_PYTHON_GPU
  if (dev_ && dev_->launch.block_n != 0) return dev_->launch.block_n;
  if (request_.kernel_block_n != 0) return request_.kernel_block_n;
  return gpu::recommended_block_n(workload_);
#else
  return request_.kernel_block_n;
#endif
}

std::string StepPlan::describe() const {
  const Workload& w = workload_;
  std::string s = fmt::format("{} sequences, {} query rows, Hq {}, Hkv {}, d {}, {}{}: {}, BM {}, "
                              "{} CTAs",
                              w.batch_size(), total_q_, w.num_q_heads, w.num_kv_heads, w.head_dim,
                              w.mask == Mask::Causal ? "causal" : "dense",
                              w.page_size ? fmt::format(", pages of {}", w.page_size) : "",
                              to_string(w.scheduler), w.block_m, w.num_ctas);
  if (!choice_note_.empty()) s += " (" + choice_note_ + ")";
#if TILESCHED_PYTHON_GPU
  if (dev_ && dev_->launch.threads != 0) s += "\n" + dev_->launch.describe();
#endif
  return s;
}

void TensorView::set_dims(int dims, const std::int64_t* sizes,
                          const std::int64_t* element_strides) {
  ndim = dims;
  const int kept = std::min(dims, kMaxDims);
  for (int i = 0; i < kept; ++i) shape[i] = sizes[i];
  if (element_strides != nullptr) {
    for (int i = 0; i < kept; ++i) strides[i] = element_strides[i];
    return;
  }
  std::int64_t stride = 1;  // row-major: the product of the sizes after each
  for (int i = dims - 1; i >= 0; --i) {
    if (i < kMaxDims) strides[i] = stride;
    stride *= sizes[i];
  }
}

void StepPlan::check_tensors(const TensorView& q, const TensorView& k, const TensorView& v,
                             const TensorView& o, const TensorView& lse,
                             const TensorView* page_table) const {
  const bool kvcache = request_.api == "kvcache";
  const char* k_name = kvcache ? "k_cache" : "k";
  const char* v_name = kvcache ? "v_cache" : "v";
  const Workload& w = workload_;
  const std::int64_t hq = w.num_q_heads, hk = w.num_kv_heads, d = w.head_dim;
  const bool paged = w.page_size > 0;
  // What each tensor must be; checked rule by rule over all of them (every shape, then every
  // element type, layout and device), so that the first rule broken is named for the first
  // tensor that breaks it. Fixed-size: a launch's checks allocate nothing unless one fails.
  struct Expect {
    const TensorView* t;
    const char* name;
    int ndim;
    std::int64_t shape[TensorView::kMaxDims];
    const char* shape_text;
    std::uint8_t code, bits;

    bool shape_matches() const {
      if (t->ndim != ndim) return false;
      for (int i = 0; i < ndim; ++i)
        if (t->shape[i] != shape[i]) return false;
      return true;
    }
  };
  Expect expect[6];
  int count = 0;
  const auto add = [&](const Expect& e) { expect[count++] = e; };
  // q: [total_q, Hq, d], or [B, S, Hq, d] where every sequence has S queries.
  if (q.ndim == 4) {
    const std::int64_t b = q.shape[0], s = q.shape[1];
    bool uniform = b == w.batch_size();
    for (u32 len : w.q_lens) uniform = uniform && len == s;
    if (!uniform)
      fail(fmt::format("q has shape {} but the plan has {} sequences of query lengths that are "
                       "not all {}",
                       dims_text(q.shape, q.ndim), w.batch_size(), s));
    add({&q, "q", 4, {b, s, hq, d}, "(batch, seqlen_q, heads, head_dim)", kBfloat, 16});
    add({&o, "out", 4, {b, s, hq, d}, "(like q)", kBfloat, 16});
  } else {
    add({&q, "q", 3, {total_q_, hq, d}, "(total_q, heads, head_dim)", kBfloat, 16});
    add({&o, "out", 3, {total_q_, hq, d}, "(like q)", kBfloat, 16});
  }
  add({&lse, "softmax_lse", 2, {total_q_, hq}, "(total_q, heads), float32", kFloat, 32});
  if (paged) {
    const std::int64_t pages = request_.num_pages, ps = w.page_size;
    const char* text = "(num_pages, page_size, kv_heads, head_dim)";
    add({&k, k_name, 4, {pages, ps, hk, d}, text, kBfloat, 16});
    add({&v, v_name, 4, {pages, ps, hk, d}, text, kBfloat, 16});
    if (page_table == nullptr) fail("the plan is for a paged cache but no page_table was given");
    add({page_table, "page_table", 2,
         {std::int64_t(w.batch_size()), request_.max_pages_per_seq},
         "(batch, max_pages), int32", kInt, 32});
  } else {
    if (page_table != nullptr)
      fail("page_table was given but the plan is for a packed KV cache: plan with the page table");
    const char* text = "(total_k, kv_heads, head_dim)";
    add({&k, k_name, 3, {total_k_, hk, d}, text, kBfloat, 16});
    add({&v, v_name, 3, {total_k_, hk, d}, text, kBfloat, 16});
  }
  const Expect* const end = expect + count;
  for (const Expect* e = expect; e != end; ++e)
    if (!e->shape_matches())
      fail(fmt::format("{} has shape {} but the plan needs {} {}", e->name,
                       dims_text(e->t->shape, e->t->ndim), dims_text(e->shape, e->ndim),
                       e->shape_text));
  for (const Expect* e = expect; e != end; ++e)
    if (e->t->dtype_code != e->code || e->t->dtype_bits != e->bits)
      throw DtypeError(fmt::format("{} must be {}, not {}", e->name, dtype_text(e->code, e->bits),
                                   dtype_text(e->t->dtype_code, e->t->dtype_bits)));
  for (const Expect* e = expect; e != end; ++e) {
    // A tensor of no elements has no layout to keep (torch calls every such tensor contiguous).
    if (std::find(e->shape, e->shape + e->ndim, 0) != e->shape + e->ndim) continue;
    std::int64_t stride = 1;
    for (int i = e->ndim - 1; i >= 0; --i) {
      if (e->shape[i] != 1 && e->t->strides[i] != stride)
        fail(fmt::format("{} must be contiguous (row-major); its strides are {}: call "
                         ".contiguous() first",
                         e->name, dims_text(e->t->strides, e->t->ndim)));
      stride *= e->shape[i];
    }
  }
  for (const Expect* e = expect; e != end; ++e) {
    if (e->t->device_type != kCuda)
      fail(fmt::format("{} must be on a CUDA device, not {}", e->name,
                       dlpack_device_name(e->t->device_type)));
    if (device_ >= 0 && e->t->device_id != device_)
      fail(fmt::format("{} is on cuda:{} but the plan was made for cuda:{}", e->name,
                       e->t->device_id, device_));
    if (e->t->data != nullptr && reinterpret_cast<std::uintptr_t>(e->t->data) % 16 != 0)
      fail(fmt::format("{} must start on a 16-byte boundary (the kernel loads it with TMA)",
                       e->name));
  }
}

void StepPlan::run(const TensorView& q, const TensorView& k, const TensorView& v,
                   const TensorView& o, const TensorView& lse, const TensorView* page_table,
                   float softmax_scale, std::uintptr_t stream, bool record, Trace& trace) {
  check_tensors(q, k, v, o, lse, page_table);
  if (!(softmax_scale > 0.f) || !std::isfinite(softmax_scale))
    fail(fmt::format("softmax_scale must be a finite positive number, not {}", softmax_scale));
#if TILESCHED_PYTHON_GPU
  if (!request_.on_device)
    fail("this plan was made on the host (on_device=False): it can be simulated, not launched");
  const CurrentDevice current(device_);  // the tensors are on it (check_tensors)
  gpu::AttentionArgs& a = dev_->args;
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.o = o.data;
  a.lse = static_cast<float*>(lse.data);
  if (page_table != nullptr) a.pages.page_table = static_cast<const std::int32_t*>(page_table->data);
  a.softmax_scale = softmax_scale;
  a.stream = reinterpret_cast<void*>(stream);
  a.trace = {};
  if (record) {
    if (!dev_->recorder) {
      dev_->recorder = std::make_unique<gpu::TraceRecorder>();
      if (gpu::Status s = dev_->recorder->allocate(gpu::processed_tile_count(workload_)); !s)
        throw DeviceError(s.message);
    }
    a.trace = dev_->recorder->buffer();
  }
  // A launch with launch_done leaves the words the next one needs (attention.hpp): only the
  // first launch of a plan, and one after a failure, resets them.
  a.launch_ready = dev_->launch_ready && !record;
  // The workload is the one the plan was made from, and nothing changes it.
  const gpu::Status s = gpu::launch_planned_same_workload(a, dev_->launch);
  dev_->launch_ready = static_cast<bool>(s);
  if (!s) throw DeviceError(s.message);
  if (record) {
    if (gpu::Status d = dev_->recorder->download(workload_, dev_->launch, trace); !d)
      throw DeviceError(d.message);
  }
#else
  (void)softmax_scale;
  (void)stream;
  (void)record;
  (void)trace;
  throw DeviceError("this build of tilesched has no GPU half (it was built without CUDA)");
#endif
}

Trace StepPlan::simulate() const { return sim::replay(workload_); }

}  // namespace tilesched::python
