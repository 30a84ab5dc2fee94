// The scheduler `tilesched bench` gives its causal points when nobody chose one: of the
// candidates, the one the simulator predicts fastest.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::viz {

// The candidates of the causal bench points: the two dynamic schedulers, in the order a tie keeps.
// Both take their tiles from the counter as CTAs free up, so a replay's error in a tile's cost
// shifts no work onto a fixed CTA; the static ones (tile, lpt, planned) would carry the model's
// error into the makespan. queued first: on a tie the plain counter needs no plan.
inline const std::vector<SchedulerKind> kCausalSchedulerCandidates = {SchedulerKind::Queued,
                                                                      SchedulerKind::LptQueued};

// A later candidate must be predicted faster than the pick so far by more than this share to
// replace it: the replay's error is 1-3 % (docs/prediction-report.md). The picks on the bench
// grid's causal points are held to what the H200 measured under both candidates
// (tests/data/h200/scheduler_choice/causal_grid.csv, tests/tools/test_scheduler_choice.cpp).
inline constexpr double kSchedulerTieMargin = 0.01;

struct SchedulerChoice {
  Workload workload;  // the pick, as `prepare` left it (scheduler set)
  // Every candidate with its predicted makespan in µs, in the order given.
  std::vector<std::pair<SchedulerKind, double>> predicted_us;
  std::string why_not;  // set (and workload left as given) when no candidate could be replayed
  bool chosen() const { return why_not.empty(); }
  // The pick's predicted makespan in µs (0 without a choice).
  double pick_us() const {
    for (const auto& [kind, us] : predicted_us)
      if (kind == workload.scheduler) return us;
    return 0;
  }
};

// Replays `w` under each of `kinds` with `cost`, each candidate first passed to `prepare` (which
// may set its tile height and CTA count; it sees the candidate's scheduler already set), and picks
// the least predicted makespan (ties within kSchedulerTieMargin: the earlier). why_not when `kinds`
// is empty or holds a scheduler that `w` cannot run (Workload::validate's message).
SchedulerChoice predict_scheduler(const Workload& w, const std::vector<SchedulerKind>& kinds,
                                  const sim::CostModel& cost,
                                  const std::function<void(Workload&)>& prepare);

// "lpt_queued (predicted 1655 us; queued: 1859 us)", or "" without a choice.
std::string describe_scheduler_choice(const SchedulerChoice& c);

}  // namespace tilesched::viz
