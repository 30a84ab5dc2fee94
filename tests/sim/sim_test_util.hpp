// Helpers shared by the simulator tests.
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tilesched/sim/sim.hpp"
#include "tilesched/splitmix64.hpp"

namespace tilesched::simtest {

// A fresh directory under /tmp, removed (with its files) at the end of the test.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tilesched-sim-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    for (const auto& f : files()) std::remove((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
          out.push_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }
};

// Deterministic random numbers for generating test problems.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64_next(state_); }
  u32 uniform(u32 lo, u32 hi) { return lo + u32(next() % (std::uint64_t(hi) - lo + 1)); }

 private:
  std::uint64_t state_;
};

// The message of the std::invalid_argument that f throws; "<no exception>" otherwise.
inline std::string invalid_argument_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<other exception> ") + e.what();
  }
  return "<no exception>";
}

// The message of the std::runtime_error that f throws; "<no runtime_error>" otherwise.
inline std::string runtime_error_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no runtime_error>";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The JSON of a replayed trace of sequences `q_lens` (2 query heads, 1 KV head, 3 CTAs): a
// valid trace for tests to break one field at a time.
inline nlohmann::json replayed_trace_json(const std::vector<u32>& q_lens) {
  Workload w;
  w.q_lens = q_lens;
  w.num_q_heads = 2;
  w.num_kv_heads = 1;
  w.num_ctas = 3;
  return sim::trace_to_json(sim::replay(w));
}

// trace_from_json's message for `j`, "<no exception>" when it reads.
inline std::string trace_error(const nlohmann::json& j) {
  return invalid_argument_text([&] { sim::trace_from_json(j); });
}

inline bool same_event(const TraceEvent& a, const TraceEvent& b) {
  return a.cta == b.cta && a.step == b.step && a.linear_idx == b.linear_idx &&
         a.prompt_offset == b.prompt_offset && a.head_idx == b.head_idx &&
         a.prompt_idx == b.prompt_idx && a.query_rows == b.query_rows &&
         a.kv_blocks == b.kv_blocks && a.kv_block_begin == b.kv_block_begin &&
         a.start_us == b.start_us && a.end_us == b.end_us && a.sm_id == b.sm_id;
}

inline std::string show(const TraceEvent& e) {
  return fmt::format("(cta {} step {} idx {} off {} head {} prompt {} rows {} kv {} {}..{})", e.cta,
                     e.step, e.linear_idx, e.prompt_offset, e.head_idx, e.prompt_idx, e.query_rows,
                     e.kv_blocks, e.start_us, e.end_us);
}

// A cost model with the same coefficients for every head_dim (handy for hand-computed times).
inline sim::CostModel flat_cost(double fixed, double per_block, double per_masked) {
  sim::CostModel m;
  m.device = "test";
  // Equal entries at both ends of the head_dim range: interpolation gives them for every d.
  m.by_head_dim[1] = sim::CostCoefficients{fixed, per_block, per_masked};
  m.by_head_dim[1024] = m.by_head_dim[1];
  return m;
}

// A random valid workload: 1..6 sequences (ragged or padded, empty ones included), BM 1..40,
// BN 1..48, causal or not, sometimes cached keys, GQA groups 1..4, 1..40 CTAs and resident CTAs.
inline Workload random_workload(Rng& rng) {
  Workload w;
  const u32 b = rng.uniform(1, 6);
  w.block_m = rng.uniform(0, 1) ? 16 : rng.uniform(1, 40);
  w.block_n = rng.uniform(1, 48);
  w.padded = rng.uniform(0, 4) == 0;
  const u32 common_len = rng.uniform(1, 200);
  for (u32 i = 0; i < b; ++i) w.q_lens.push_back(w.padded ? common_len : rng.uniform(0, 200));
  if (w.max_seq_len() == 0) w.q_lens[0] = 1;
  w.mask = rng.uniform(0, 1) ? Mask::Causal : Mask::None;
  if (rng.uniform(0, 2) == 0) {
    const u32 extra = rng.uniform(0, 50);
    for (u32 q : w.q_lens) w.kv_lens.push_back(q + (q > 0 || w.padded ? extra : 0));
  }
  w.num_kv_heads = rng.uniform(1, 3);
  w.num_q_heads = w.num_kv_heads * rng.uniform(1, 4);
  w.head_dim = 64;
  w.num_ctas = rng.uniform(1, 40);
  w.resident_ctas = rng.uniform(1, 40);
  w.schedule = rng.uniform(0, 1) ? Schedule::PromptRotate : Schedule::Default;
  REQUIRE_MESSAGE(w.validate().empty(), w.validate());
  return w;
}

// Events ordered by (cta, step), and each CTA's tiles back to back.
inline void check_ordered_and_back_to_back(const Trace& t) {
  for (std::size_t i = 1; i < t.events.size(); ++i) {
    const TraceEvent &p = t.events[i - 1], &e = t.events[i];
    REQUIRE_MESSAGE((p.cta < e.cta || (p.cta == e.cta && p.step + 1 == e.step)), show(p), show(e));
    if (p.cta == e.cta) CHECK(e.start_us == p.end_us);
  }
}

// The loop the replay properties share: `count` random workloads from `seed`, each set to
// `scheduler` and handed to `check` (with the iteration, which is also captured for failures).
template <class Check>
void for_random_workloads(std::uint64_t seed, int count, SchedulerKind scheduler, Check check) {
  Rng rng(seed);
  for (int iter = 0; iter < count; ++iter) {
    Workload w = random_workload(rng);
    w.scheduler = scheduler;
    if (scheduler == SchedulerKind::SplitTail) {  // tiles of one cost: no mask, one length
      w.mask = Mask::None;
      const u32 q = std::max<u32>(w.q_lens[0], 1), kv = std::max(w.key_len(0), q);
      w.q_lens.assign(w.q_lens.size(), q);
      w.kv_lens.assign(w.q_lens.size(), kv);
      REQUIRE_MESSAGE(w.validate().empty(), w.validate());
    }
    CAPTURE(iter);
    check(w, iter);
  }
}

}  // namespace tilesched::simtest
