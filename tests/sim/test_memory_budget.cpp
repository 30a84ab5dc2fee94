// Running out of memory, made deterministic: this test program replaces operator new with one
// that fails once the bytes held would pass a budget, as in a process under `ulimit -v`. A valid
// workload of 100M sequences read under a memory limit once aborted the tool (std::bad_alloc
// thrown while nlohmann freed the document, inside a noexcept destructor); here every reader is
// run under budgets from nothing to enough and must either succeed or say it lacked memory.
// And the metrics, whose per-CTA vectors a trace claiming 2^30 CTAs once sized to 16 GiB, must
// come out within a small budget.
#include <doctest/doctest.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#include "sim_test_util.hpp"

namespace {

std::size_t g_bytes_held = 0;
std::size_t g_budget = SIZE_MAX;  // bytes that may be held at once; SIZE_MAX: no limit
// After the first failure a few more bytes are allowed: in practice the request that fails is a
// large one, and the few bytes of an error message are still there. Freeing a large document
// the way nlohmann's destructor does (a new vector of all its elements) takes far more.
constexpr std::size_t kSlackAfterFailure = 4096;
bool g_slack_given = false;

void* budgeted_allocation(std::size_t n) {
  if (n > g_budget || g_bytes_held > g_budget - n) {
    if (!g_slack_given) g_budget += kSlackAfterFailure;
    g_slack_given = true;
    throw std::bad_alloc();
  }
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_bytes_held += ::malloc_usable_size(p);
  return p;
}

void budgeted_release(void* p) noexcept {
  if (p == nullptr) return;
  g_bytes_held -= ::malloc_usable_size(p);
  std::free(p);
}

// Allows `extra` bytes beyond what is held now, for the scope's lifetime.
class Budget {
 public:
  explicit Budget(std::size_t extra) {
    g_budget = g_bytes_held + extra;
    g_slack_given = false;
  }
  ~Budget() { g_budget = SIZE_MAX; }
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;
};

}  // namespace

void* operator new(std::size_t n) {
  return budgeted_allocation(n);
}
void* operator new[](std::size_t n) {
  return budgeted_allocation(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return budgeted_allocation(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& tag) noexcept {
  return operator new(n, tag);
}
void operator delete(void* p) noexcept {
  budgeted_release(p);
}
void operator delete[](void* p) noexcept {
  budgeted_release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  budgeted_release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  budgeted_release(p);
}

using namespace tilesched;
using namespace tilesched::simtest;

namespace {

// How a read under a budget ended: "ok", the reader's message, or what else escaped it.
template <class Read>
std::string outcome_under_budget(std::size_t extra, Read&& read) {
  try {
    const Budget budget(extra);
    read();
    return "ok";
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return "std::bad_alloc escaped";
  } catch (const std::exception& e) {
    return std::string("unexpected: ") + e.what();
  }
}

// Runs `read` under budgets growing from 0 by `step` until it succeeds; every failure before
// must be exactly `lacked_memory`. Returns how many budgets failed first.
template <class Read>
std::size_t failures_until_success(std::size_t step, const std::string& lacked_memory,
                                   Read&& read) {
  std::size_t failures = 0;
  for (std::size_t extra = 0;; extra += step) {
    const std::string outcome = outcome_under_budget(extra, read);
    if (outcome == "ok") return failures;
    REQUIRE_MESSAGE(outcome == lacked_memory, "with ", extra, " bytes to spare");
    ++failures;
  }
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path + "/" + name;
  sim::write_file_atomically(path, text);
  return path;
}

}  // namespace

TEST_CASE("every reader, out of memory at any point, says so; the document is freed safely") {
  TempDir dir;
  // 3000 one-row sequences: 6 KB of text, tens of KB once parsed. The budget grows in steps of
  // 256 bytes, so allocation failures land in reading, parsing, converting and in between.
  std::string lens = "1";
  for (int i = 1; i < 3000; ++i) lens += ",1";
  const std::string workload = write(dir, "w.json", "{\"q_lens\": [" + lens + "]}");
  const std::string lacked = "not enough memory to read '" + workload + "' (" +
                             std::to_string(sim::read_file(workload).size()) + " bytes)";
  CHECK(failures_until_success(256, lacked, [&] { sim::read_workload(workload); }) > 100);

  Workload w;
  w.q_lens = {300, 1000, 129};
  w.num_q_heads = 4;
  w.num_kv_heads = 2;
  w.num_ctas = 5;
  const std::string trace_path = dir.path + "/t.json";
  sim::write_trace(trace_path, sim::replay(w));
  const std::string trace_text = sim::read_file(trace_path);
  CHECK(failures_until_success(512,
                               "not enough memory to read '" + trace_path + "' (" +
                                   std::to_string(trace_text.size()) + " bytes)",
                               [&] { sim::read_trace(trace_path); }) > 50);

  const std::string cost_path = std::string(TILESCHED_SIM_DATA_DIR) + "/cost_h200_sm90.json";
  const std::string cost_text = sim::read_file(cost_path);
  CHECK(failures_until_success(64,
                               "not enough memory to read '" + cost_path + "' (" +
                                   std::to_string(cost_text.size()) + " bytes)",
                               [&] { sim::CostModel::load(cost_path); }) > 10);
}

TEST_CASE("metrics are sized by the events present, never by launched_ctas or an SM id") {
  // Per-unit vectors for 2^30 CTAs or 2^31 SMs would take 16-64 GiB; 1 MiB must do.
  Trace wide;
  wide.workload.q_lens = {1u << 20};
  wide.workload.num_q_heads = 1 << 10;
  wide.workload.num_kv_heads = 1;
  wide.workload.block_m = 1;
  wide.launched_ctas = 1u << 30;
  TraceEvent e;
  e.cta = (1u << 30) - 1;
  e.end_us = 4;
  wide.events = {e};

  Trace slots;
  slots.workload.q_lens = {128};
  slots.workload.num_q_heads = 2;
  slots.workload.num_kv_heads = 1;
  slots.workload.scheduler = SchedulerKind::Transient;
  slots.launched_ctas = 2;
  e.cta = 0;
  e.sm_id = INT32_MAX;
  slots.events = {e};
  e.cta = 1;
  e.sm_id = 3;
  e.end_us = 2;
  slots.events.push_back(e);

  sim::Metrics a, b;
  CHECK(outcome_under_budget(1 << 20, [&] {
          a = sim::compute_metrics(wide);
          b = sim::compute_metrics(slots);
        }) == "ok");
  CHECK(a.unit_count == (1u << 30));
  CHECK(a.busy_max_us == 4);
  CHECK(a.busy_min_us == 0);  // the other 2^30 - 1 CTAs ran nothing
  CHECK(a.tiles_max == 1);
  CHECK(a.tiles_min == 0);
  CHECK(b.unit == sim::ExecutionUnit::Slot);
  CHECK(b.unit_count == 2);  // transient units are the time slots the two overlapping CTAs took
  CHECK(b.busy_max_us == 4);
  CHECK(b.busy_min_us == 2);
  CHECK(b.tiles_max == 1);
  CHECK(b.total_busy_us == 6);
}
