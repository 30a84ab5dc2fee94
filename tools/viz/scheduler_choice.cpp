#include "viz/scheduler_choice.hpp"

#include <fmt/format.h>

#include "tilesched/names.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::viz {

SchedulerChoice predict_scheduler(const Workload& w, const std::vector<SchedulerKind>& kinds,
                                  const sim::CostModel& cost,
                                  const std::function<void(Workload&)>& prepare) {
  SchedulerChoice c;
  c.workload = w;
  if (kinds.empty()) {
    c.why_not = "no candidate scheduler";
    return c;
  }
  double best = 0;
  bool picked = false;
  for (const SchedulerKind kind : kinds) {
    Workload candidate = w;
    candidate.scheduler = kind;
    if (prepare) prepare(candidate);
    if (const std::string err = candidate.validate(); !err.empty()) {
      c.predicted_us.clear();
      c.workload = w;
      c.why_not = fmt::format("scheduler {}: {}", to_string(kind), err);
      return c;
    }
    const double us = sim::compute_metrics(sim::replay(candidate, cost)).makespan_us;
    c.predicted_us.emplace_back(kind, us);
    if (!picked || us < best * (1.0 - kSchedulerTieMargin)) {
      c.workload = candidate;
      best = us;
      picked = true;
    }
  }
  return c;
}

std::string describe_scheduler_choice(const SchedulerChoice& c) {
  if (!c.chosen() || c.predicted_us.empty()) return "";
  std::string others;
  for (const auto& [kind, us] : c.predicted_us)
    if (kind != c.workload.scheduler) others += fmt::format("; {}: {:.0f} us", to_string(kind), us);
  return fmt::format("{} (predicted {:.0f} us{})", to_string(c.workload.scheduler), c.pick_us(),
                     others);
}

}  // namespace tilesched::viz
