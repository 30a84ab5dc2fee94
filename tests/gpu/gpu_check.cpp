#include "gpu_check.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::gpu_test {
namespace {

std::string tile_name(const TraceEvent& e) {
  std::ostringstream s;
  s << "tile (prompt " << e.prompt_idx << ", head " << e.head_idx << ", offset " << e.prompt_offset
    << ", idx " << e.linear_idx << ") on CTA " << e.cta << " step " << e.step;
  return s.str();
}

std::map<u32, std::vector<TraceEvent>> by_cta(const Trace& t) {
  std::map<u32, std::vector<TraceEvent>> m;
  for (const auto& e : t.events) m[e.cta].push_back(e);
  return m;
}

bool same_tile(const TraceEvent& a, const TraceEvent& b) {
  return a.step == b.step && a.linear_idx == b.linear_idx && a.prompt_offset == b.prompt_offset &&
         a.head_idx == b.head_idx && a.prompt_idx == b.prompt_idx && a.query_rows == b.query_rows &&
         a.kv_blocks == b.kv_blocks;
}

void check_static_schedule(const Trace& gpu, const Trace& sim, std::vector<std::string>& out) {
  const auto g = by_cta(gpu), s = by_cta(sim);
  for (const auto& [cta, sim_events] : s) {
    const auto it = g.find(cta);
    const std::size_t n = it == g.end() ? 0 : it->second.size();
    if (n != sim_events.size()) {
      out.push_back("CTA " + std::to_string(cta) + " processed " + std::to_string(n) +
                    " tiles on the GPU, the simulator says " + std::to_string(sim_events.size()));
      continue;
    }
    for (std::size_t i = 0; i < n; ++i)
      if (!same_tile(it->second[i], sim_events[i]))
        out.push_back(
            "CTA " + std::to_string(cta) + " step " + std::to_string(i) + ": GPU ran " +
            tile_name(it->second[i]) + " (rows " + std::to_string(it->second[i].query_rows) +
            ", kv blocks " + std::to_string(it->second[i].kv_blocks) + "), simulator says " +
            tile_name(sim_events[i]) + " (rows " + std::to_string(sim_events[i].query_rows) +
            ", kv blocks " + std::to_string(sim_events[i].kv_blocks) + ")");
  }
  for (const auto& [cta, events] : g)
    if (!s.count(cta))
      out.push_back("CTA " + std::to_string(cta) + " processed " + std::to_string(events.size()) +
                    " tiles on the GPU; the simulator gives it none");
}

void check_queued_schedule(const Workload& w, const Trace& gpu, const Trace& sim,
                           std::vector<std::string>& out) {
  std::multiset<u32> gpu_set;
  for (const auto& e : gpu.events) gpu_set.insert(e.linear_idx);
  std::set<u32> sim_set;
  for (const auto& e : sim.events) sim_set.insert(e.linear_idx);
  for (u32 idx : gpu_set) {
    if (gpu_set.count(idx) > 1)
      out.push_back("tile " + std::to_string(idx) + " was processed " +
                    std::to_string(gpu_set.count(idx)) + " times on the GPU");
    if (!sim_set.count(idx))
      out.push_back("the GPU processed tile " + std::to_string(idx) +
                    ", which the simulator never schedules (past its sequence?)");
  }
  for (u32 idx : sim_set)
    if (!gpu_set.count(idx)) out.push_back("tile " + std::to_string(idx) + " was never processed");
  // Fetch order: the first C indices are taken statically (CTA c takes c when it is a tile);
  // everything else comes from the counter, which only grows, so within a CTA indices increase.
  const u32 c = w.num_ctas;
  for (const auto& [cta, events] : by_cta(gpu)) {
    for (std::size_t i = 0; i < events.size(); ++i) {
      const u32 idx = events[i].linear_idx;
      if (i > 0 && idx <= events[i - 1].linear_idx)
        out.push_back("CTA " + std::to_string(cta) + " fetched " + std::to_string(idx) + " after " +
                      std::to_string(events[i - 1].linear_idx) + ": counter order violated");
      if (idx < c && idx != cta)
        out.push_back("CTA " + std::to_string(cta) + " processed static tile " +
                      std::to_string(idx) + ", which belongs to CTA " + std::to_string(idx));
      if (i > 0 && idx < c)
        out.push_back("CTA " + std::to_string(cta) + " got index " + std::to_string(idx) +
                      " below C from the counter");
    }
  }
}

std::vector<float> bf16_to_float(const std::vector<std::uint16_t>& bits) {
  std::vector<float> f(bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) f[i] = sim::bf16_bits_to_float(bits[i]);
  return f;
}

}  // namespace

std::string describe(const Workload& w) {
  std::ostringstream s;
  s << (w.padded ? "padded" : "ragged") << " q_lens [";
  for (std::size_t i = 0; i < w.q_lens.size(); ++i) s << (i ? "," : "") << w.q_lens[i];
  s << "]";
  if (!w.kv_lens.empty()) {
    s << " kv_lens [";
    for (std::size_t i = 0; i < w.kv_lens.size(); ++i) s << (i ? "," : "") << w.kv_lens[i];
    s << "]";
  }
  s << " Hq " << w.num_q_heads << " Hkv " << w.num_kv_heads << " d " << w.head_dim << " mask "
    << to_string(w.mask) << " BN " << w.block_n << " " << strategy_name(w) << " C " << w.num_ctas;
  return s.str();
}

CheckOutcome check_workload(const Workload& w, std::uint64_t seed, double tolerance) {
  CheckOutcome r;
  auto fail = [&](const std::string& m) { r.failures.push_back(describe(w) + ": " + m); };

  const sim::AttentionInputs in = sim::make_inputs(w, seed);
  gpu::DeviceProblem dev;
  gpu::Status st = dev.create(w, /*record_trace=*/true);
  if (st)
    st = dev.upload(sim::to_bf16_bits(in.q), sim::to_bf16_bits(in.k), sim::to_bf16_bits(in.v));
  if (st) st = dev.poison_outputs();
  if (st) st = dev.run();
  std::uint64_t o_unwritten = 0, lse_unwritten = 0;
  if (st) st = dev.count_unwritten(o_unwritten, lse_unwritten);
  if (st) st = dev.download(r.o_bits, r.lse);
  if (st) st = dev.download_trace(r.gpu_trace);
  if (!st) {
    fail(st.message);
    return r;
  }
  if (o_unwritten || lse_unwritten)
    fail(std::to_string(o_unwritten) + " elements of O and " + std::to_string(lse_unwritten) +
         " of LSE were never written (poison left)");

  const Trace sim_trace = sim::replay(w);
  if (r.gpu_trace.launched_ctas != sim_trace.launched_ctas)
    fail("launched " + std::to_string(r.gpu_trace.launched_ctas) + " CTAs, simulator " +
         std::to_string(sim_trace.launched_ctas));
  std::vector<std::string> sched;
  if (w.scheduler == SchedulerKind::Queued)
    check_queued_schedule(w, r.gpu_trace, sim_trace, sched);
  else
    check_static_schedule(r.gpu_trace, sim_trace, sched);
  const std::size_t shown = std::min<std::size_t>(sched.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) fail(sched[i]);
  if (sched.size() > shown) fail("... and " + std::to_string(sched.size() - shown) + " more");

  // Tile by tile against the simulator's blockwise softmax in the GPU's own tile order.
  const sim::AttentionResult ref = sim::tiled_attention(w, in, r.gpu_trace);
  const std::vector<float> o = bf16_to_float(r.o_bits);
  std::size_t bad = 0;
  for (const auto& e : r.gpu_trace.events) {
    const sim::TileError err = sim::tile_error(w, e, o, r.lse, ref.o, ref.lse);
    const double worst = std::max(err.o_rel, err.lse_rel);
    if (!std::isnan(worst)) r.worst_tile_error = std::max(r.worst_tile_error, worst);
    if (err.has_nan || !(worst <= tolerance)) {
      if (++bad <= 8) {
        std::ostringstream m;
        m << tile_name(e) << " (SM " << e.sm_id << "): O rel error " << err.o_rel
          << ", LSE rel error " << err.lse_rel << (err.has_nan ? ", NaN/unwritten rows" : "")
          << " over " << err.rows << " rows";
        fail(m.str());
      }
    }
  }
  if (bad > 8) fail("... " + std::to_string(bad) + " tiles out of tolerance in all");
  r.tiles = r.gpu_trace.events.size();
  return r;
}

}  // namespace tilesched::gpu_test
