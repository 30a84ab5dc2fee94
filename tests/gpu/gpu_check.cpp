#include "gpu_check.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

namespace tilesched::gpu_test {
namespace {

std::string tile_name(const TraceEvent& e) {
  std::ostringstream s;
  s << "tile (prompt " << e.prompt_idx << ", head " << e.head_idx << ", offset " << e.prompt_offset
    << ", idx " << e.linear_idx << ") on CTA " << e.cta << " step " << e.step;
  return s.str();
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
  const std::vector<std::string> sched = sim::schedule_differences(sim_trace, r.gpu_trace);
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
