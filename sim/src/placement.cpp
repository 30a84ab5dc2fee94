#include "placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "tilesched/sim/value_limits.hpp"

namespace tilesched::sim::detail {

SlotLayout slot_layout(const Workload& w, const CostModel& cost) {
  SlotLayout layout;
  layout.multiprocessors = cost.multiprocessors;
  layout.slots = w.resident_ctas > 0 ? w.resident_ctas : cost.resident_ctas(w.head_dim);
  layout.sharing = cost.sharing(w.head_dim);
  layout.cta_launch_us = cost.cta_launch_us(w.head_dim);
  return layout;
}

namespace {

// Below this many µs of solo work left a tile counts as done: rounding in the sharing arithmetic
// must not leave a tile a femtosecond short of its end.
constexpr double kDoneUs = 1e-9;

// A tile on an SM: whose it is, where its event is, and how much of its solo time is left.
struct Running {
  u32 cta;
  std::size_t event;
  double remaining_us;
};

struct Sm {
  std::vector<Running> running;
  double since_us = 0;        // time `remaining_us` refers to
  std::uint64_t version = 0;  // changes whenever the SM's tiles change; older ends are stale
};

// Something due at a time: a tile's end on an SM, or a CTA that starts (sm = kStart).
struct Due {
  double time_us;
  u32 cta;
  u32 sm;
  std::uint64_t version;
  bool operator>(const Due& o) const {
    return std::tie(time_us, cta, sm, version) > std::tie(o.time_us, o.cta, o.sm, o.version);
  }
};
constexpr u32 kStart = ~0u;

class Placement {
 public:
  Placement(const SlotLayout& layout, u32 launched, const NextTile& next,
            std::vector<TraceEvent>& events)
      : layout_(layout),
        next_(next),
        sms_(std::min(layout.multiprocessors, std::max<u32>(layout.slots, 1))),
        slot_of_(launched, 0),
        steps_(launched, 0),
        launched_(launched),
        events_(events) {}

  void run() {
    const u32 first_wave = std::min(layout_.slots, launched_);
    for (u32 c = 0; c < first_wave; ++c) start(c, c, 0.0);
    next_waiting_ = first_wave;
    while (!due_.empty()) {
      const Due d = due_.top();
      due_.pop();
      if (d.sm == kStart) {
        turn(d.cta, d.time_us);
      } else if (d.version == sms_[d.sm].version) {
        finish(d);
        turn(d.cta, d.time_us);
      }
    }
    sort_by_cta();
  }

 private:
  u32 sm_of_slot(u32 slot) const { return slot % u32(sms_.size()); }

  void start(u32 cta, u32 slot, double time) {
    slot_of_[cta] = slot;
    due_.push(Due{time, cta, kStart, 0});
  }

  // Brings the SM's remaining work up to `time` at its current sharing rate.
  void advance(Sm& sm, double time) {
    const double progress = layout_.sharing.rate(u32(sm.running.size())) * (time - sm.since_us);
    for (Running& r : sm.running) {
      r.remaining_us -= progress;
      if (r.remaining_us < kDoneUs) r.remaining_us = 0;
    }
    sm.since_us = time;
  }

  // The SM's next tile end (lowest remaining work, ties to the lower CTA), superseding older ones.
  void schedule(u32 index) {
    Sm& sm = sms_[index];
    ++sm.version;
    if (sm.running.empty()) return;
    const auto first = std::min_element(
        sm.running.begin(), sm.running.end(), [](const Running& a, const Running& b) {
          return std::tie(a.remaining_us, a.cta) < std::tie(b.remaining_us, b.cta);
        });
    const double rate = layout_.sharing.rate(u32(sm.running.size()));
    due_.push(Due{sm.since_us + first->remaining_us / rate, first->cta, index, sm.version});
  }

  void finish(const Due& d) {
    Sm& sm = sms_[d.sm];
    advance(sm, d.time_us);
    const auto it = std::find_if(sm.running.begin(), sm.running.end(),
                                 [&](const Running& r) { return r.cta == d.cta; });
    // A trace beyond the readers' range could be written but not read back (viz, diff, fit).
    if (!(d.time_us <= kMaxTraceTimeUs))
      throw std::invalid_argument(fmt::format(
          "the predicted times run past {:g} us (11.6 days), the most a trace records: tile {} "
          "of CTA {} would end at {:g} us; check the cost model's coefficients and the "
          "workload's size",
          kMaxTraceTimeUs, events_[it->event].linear_idx, d.cta, d.time_us));
    events_[it->event].end_us = d.time_us;
    sm.running.erase(it);
    schedule(d.sm);
  }

  // The CTA asks for its next tile; without one it exits and the next waiting CTA takes its slot,
  // starting once the device has launched it there.
  void turn(u32 cta, double time) {
    const u32 slot = slot_of_[cta];
    PlacedTile tile;
    if (!next_(CtaTurn{cta, slot, steps_[cta], time}, tile)) {
      if (next_waiting_ < launched_) start(next_waiting_++, slot, time + layout_.cta_launch_us);
      return;
    }
    const u32 index = sm_of_slot(slot);
    TraceEvent& e = tile.event;
    e.cta = cta;
    e.step = steps_[cta]++;
    e.start_us = e.end_us = time;
    e.sm_id = static_cast<std::int32_t>(index);
    events_.push_back(e);
    Sm& sm = sms_[index];
    advance(sm, time);
    sm.running.push_back(Running{cta, events_.size() - 1, std::max(tile.solo_us, 0.0)});
    schedule(index);
  }

  // Into (cta, step) order in place, so the events are held once (a sorted copy would double
  // the peak memory): each event's destination by a counting sort over CTAs (stable, so each
  // CTA's events stay in step order), then the permutation applied cycle by cycle. A grid whose
  // CTAs start one after another (transient) is in order already. Sizes in size_t: `launched + 1`
  // in u32 would wrap to 0 for a grid of 2^32-1 CTAs.
  void sort_by_cta() {
    const auto by_cta = [](const TraceEvent& a, const TraceEvent& b) { return a.cta < b.cta; };
    if (std::is_sorted(events_.begin(), events_.end(), by_cta)) return;
    std::vector<std::size_t> first(std::size_t(launched_) + 1, 0);
    for (const TraceEvent& e : events_) ++first[std::size_t(e.cta) + 1];
    for (std::size_t c = 1; c < first.size(); ++c) first[c] += first[c - 1];
    std::vector<u32> destination(events_.size());  // N < 2^32 (Workload::validate)
    for (std::size_t i = 0; i < events_.size(); ++i)
      destination[i] = static_cast<u32>(first[events_[i].cta]++);
    for (std::size_t i = 0; i < events_.size(); ++i) {
      while (destination[i] != i) {
        const u32 j = destination[i];
        std::swap(events_[i], events_[j]);
        std::swap(destination[i], destination[j]);
      }
    }
  }

  const SlotLayout& layout_;
  const NextTile& next_;
  std::vector<Sm> sms_;
  std::vector<u32> slot_of_;  // by CTA: the slot it runs (or ran) in
  std::vector<u32> steps_;    // by CTA: tiles processed so far
  u32 launched_;
  u32 next_waiting_ = 0;             // lowest CTA id not started yet
  std::vector<TraceEvent>& events_;  // in start order until sorted
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
};

}  // namespace

void place_ctas(const SlotLayout& layout, u32 launched_ctas, const NextTile& next,
                std::vector<TraceEvent>& events) {
  Placement(layout, launched_ctas, next, events).run();
}

}  // namespace tilesched::sim::detail
