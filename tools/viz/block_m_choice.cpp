#include "viz/block_m_choice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::viz {

BlockMChoice predict_block_m(const Workload& w, const std::vector<u32>& block_ms,
                             const sim::CostModel& cost,
                             const std::function<u32(const Workload&)>& resident,
                             bool ctas_from_device) {
  BlockMChoice c;
  if (block_ms.empty()) {
    c.why_not = fmt::format("the kernel runs no tile height at head dim {}", w.head_dim);
    return c;
  }
  if (block_ms.size() == 1) {
    c.block_m = block_ms.front();
    return c;
  }
  std::vector<u32> unmeasured;
  for (const u32 bm : block_ms)
    if (!cost.measured_at(w.head_dim, bm)) unmeasured.push_back(bm);
  if (!unmeasured.empty()) {
    c.why_not = fmt::format(
        "cost table '{}' has no coefficients measured at BM {} for head dim {}", cost.device,
        fmt::join(unmeasured, ", "), w.head_dim);
    return c;
  }
  double best = 0;
  for (const u32 bm : block_ms) {
    Workload candidate = w;
    candidate.block_m = bm;
    candidate.resident_ctas = resident(candidate);
    if (ctas_from_device) candidate.num_ctas = candidate.resident_ctas;
    const double us = sim::compute_metrics(sim::replay(candidate, cost)).makespan_us;
    c.predicted_us.emplace_back(bm, us);
    if (c.block_m == 0 || us < best * (1.0 - kBlockMTieMargin)) {
      c.block_m = bm;
      best = us;
    }
  }
  return c;
}

std::string describe_block_m_choice(const BlockMChoice& c) {
  if (c.block_m == 0 || c.predicted_us.empty()) return "";
  std::string others;
  double own = 0;
  for (const auto& [bm, us] : c.predicted_us) {
    if (bm == c.block_m)
      own = us;
    else
      others += fmt::format("; BM {}: {:.0f} us", bm, us);
  }
  return fmt::format("BM {} (predicted {:.0f} us{})", c.block_m, own, others);
}

}  // namespace tilesched::viz
