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
  layout.hbm_bytes_per_us = cost.hbm_bytes_per_us;
  return layout;
}

namespace {

// Below this many µs of solo work left a tile counts as done: rounding in the sharing arithmetic
// must not leave a tile a femtosecond short of its end.
constexpr double kDoneUs = 1e-9;

// A tile on an SM: whose it is, where its event is, and how much of its solo time is left: of
// its fixed part (all of a tile that does not stream), then of its streaming part.
struct Running {
  u32 cta;
  std::size_t event;
  double remaining_us;
  double stream_left_us = 0;
  double demand = 0;       // bytes a µs of its solo speed asks of the HBM while it streams
  bool streaming = false;  // in its streaming part
};

struct Sm {
  std::vector<Running> running;
  double since_us = 0;        // time `remaining_us` refers to
  double since_stream = 0;    // the stream clock then, which `stream_left_us` refers to
  std::uint64_t version = 0;  // changes whenever the SM's tiles change; older ends are stale
  u32 streaming = 0;          // running tiles in their streaming part
  double asked = 0;           // the sum of their demands
};

// Something due at a time: a tile's end on an SM (or the end of a streaming tile's fixed part),
// or a CTA that starts (sm = kStart).
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

// A streaming tile's end: due when the stream clock reaches `stream`. Every streaming tile
// progresses at its SM's rate times one share of the HBM, so the order of their ends on the
// stream clock stays whatever the share does, and a change of share moves none of them.
struct StreamDue {
  double stream;
  u32 cta;
  u32 sm;
  std::uint64_t version;
  bool operator>(const StreamDue& o) const {
    return std::tie(stream, cta, sm, version) > std::tie(o.stream, o.cta, o.sm, o.version);
  }
};

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
    for (;;) {
      while (!due_.empty() && stale(due_.top().sm, due_.top().version)) due_.pop();
      while (!streams_.empty() && stale(streams_.top().sm, streams_.top().version)) streams_.pop();
      if (due_.empty() && streams_.empty()) break;
      if (!streams_.empty()) {
        const StreamDue& s = streams_.top();
        const Due end{std::max(now_, time_of_stream(s.stream)), s.cta, s.sm, s.version};
        if (due_.empty() || due_.top() > end) {
          streams_.pop();
          now_ = end.time_us;
          Sm& sm = sms_[end.sm];
          advance(sm, end.time_us);
          finish(end, running_tile(sm, end.cta));
          turn(end.cta, end.time_us);
          continue;
        }
      }
      const Due d = due_.top();
      due_.pop();
      now_ = d.time_us;
      if (d.sm == kStart) {
        turn(d.cta, d.time_us);
      } else if (reach(d)) {
        turn(d.cta, d.time_us);
      }
    }
    sort_by_cta();
  }

 private:
  u32 sm_of_slot(u32 slot) const { return slot % u32(sms_.size()); }

  bool stale(u32 sm, std::uint64_t version) const {
    return sm != kStart && version != sms_[sm].version;
  }

  static std::vector<Running>::iterator running_tile(Sm& sm, u32 cta) {
    return std::find_if(sm.running.begin(), sm.running.end(),
                        [&](const Running& r) { return r.cta == cta; });
  }

  void start(u32 cta, u32 slot, double time) {
    slot_of_[cta] = slot;
    due_.push(Due{time, cta, kStart, 0});
  }

  // The stream clock: solo µs of streaming a tile alone on its SM has made since the start,
  // advancing at the HBM's share.
  double stream_clock(double time) const {
    return stream_at_ + hbm_share_ * (time - stream_since_);
  }
  double time_of_stream(double stream) const {
    return stream_since_ + (stream - stream_at_) / hbm_share_;
  }

  // Brings the SM's remaining work up to `time` at its current sharing rate (and the HBM's share
  // for its streaming tiles).
  void advance(Sm& sm, double time) {
    const double rate = layout_.sharing.rate(u32(sm.running.size()));
    const double progress = rate * (time - sm.since_us);
    const double stream = stream_clock(time);
    const double streamed = rate * (stream - sm.since_stream);
    for (Running& r : sm.running) {
      double& left = r.streaming ? r.stream_left_us : r.remaining_us;
      left -= r.streaming ? streamed : progress;
      if (left < kDoneUs) left = 0;
    }
    sm.since_us = time;
    sm.since_stream = stream;
  }

  // The SM's next end of a tile or of a streaming tile's fixed part (least work left, ties to
  // the lower CTA) and, apart, its next streaming tile's end on the stream clock, superseding
  // older ones.
  void schedule(u32 index) {
    Sm& sm = sms_[index];
    ++sm.version;
    const double rate = layout_.sharing.rate(u32(sm.running.size()));
    const Running* first = nullptr;         // of the tiles in their fixed part (or not streaming)
    const Running* first_stream = nullptr;  // of the streaming tiles
    for (const Running& r : sm.running) {
      if (r.streaming) {
        if (!first_stream || std::tie(r.stream_left_us, r.cta) <
                                 std::tie(first_stream->stream_left_us, first_stream->cta))
          first_stream = &r;
      } else if (!first ||
                 std::tie(r.remaining_us, r.cta) < std::tie(first->remaining_us, first->cta)) {
        first = &r;
      }
    }
    if (first)
      due_.push(Due{sm.since_us + first->remaining_us / rate, first->cta, index, sm.version});
    if (first_stream)
      streams_.push(StreamDue{sm.since_stream + first_stream->stream_left_us / rate,
                              first_stream->cta, index, sm.version});
  }

  // What the SM's streaming tiles ask of the HBM, bytes per µs.
  double asked_by(const Sm& sm) const {
    return sm.streaming == 0 ? 0.0 : layout_.sharing.rate(u32(sm.running.size())) * sm.asked;
  }

  // `change` alters the tiles of `sm` (brought up to `time`) and with them what the streaming
  // tiles ask of the HBM: the stream clock runs at the old share up to `time`, at the new one
  // after. Only `sm`'s work is touched: every other streaming tile's end stays where it is on
  // the stream clock.
  template <class Change>
  void change_streams(Sm& sm, double time, Change&& change) {
    asked_ -= asked_by(sm);
    streaming_tiles_ -= sm.streaming;
    change();
    if (sm.streaming == 0) sm.asked = 0;
    asked_ += asked_by(sm);
    streaming_tiles_ += sm.streaming;
    if (streaming_tiles_ == 0) asked_ = 0;  // no rounding left behind once the streams stop
    stream_at_ = stream_clock(time);
    stream_since_ = time;
    const double bandwidth = layout_.hbm_bytes_per_us;
    hbm_share_ = bandwidth > 0 && asked_ > bandwidth ? bandwidth / asked_ : 1.0;
  }

  // The SM's due tile has reached its time: true when it ended (its CTA asks for its next tile),
  // false when it ended its fixed part and starts to stream.
  bool reach(const Due& d) {
    Sm& sm = sms_[d.sm];
    advance(sm, d.time_us);
    const auto it = running_tile(sm, d.cta);
    if (it->stream_left_us > 0) {
      change_streams(sm, d.time_us, [&] {
        it->streaming = true;
        ++sm.streaming;
        sm.asked += it->demand;
      });
      schedule(d.sm);
      return false;
    }
    finish(d, it);
    return true;
  }

  void finish(const Due& d, std::vector<Running>::iterator it) {
    Sm& sm = sms_[d.sm];
    // A trace beyond the readers' range could be written but not read back (viz, diff, fit).
    if (!(d.time_us <= kMaxTraceTimeUs))
      throw std::invalid_argument(fmt::format(
          "the predicted times run past {:g} us (11.6 days), the most a trace records: tile {} "
          "of CTA {} would end at {:g} us; check the cost model's coefficients and the "
          "workload's size",
          kMaxTraceTimeUs, events_[it->event].linear_idx, d.cta, d.time_us));
    events_[it->event].end_us = d.time_us;
    if (sm.streaming == 0) {
      sm.running.erase(it);
    } else {
      // A streaming tile ends, or one beside it whose SM's rate (and so its neighbours' demand)
      // changes.
      change_streams(sm, d.time_us, [&] {
        if (it->streaming) {
          --sm.streaming;
          sm.asked -= it->demand;
        }
        sm.running.erase(it);
      });
    }
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
    const double solo = std::max(tile.solo_us, 0.0);
    const double stream = tile.stream_bytes > 0 ? std::clamp(tile.stream_us, 0.0, solo) : 0.0;
    Running r{cta, events_.size() - 1, solo};
    if (stream > 0) {
      r.remaining_us = solo - stream;
      r.stream_left_us = stream;
      r.demand = tile.stream_bytes / stream;
    }
    // A tile without a fixed part streams from its start.
    r.streaming = stream > 0 && r.remaining_us == 0;
    if (!r.streaming && sm.streaming == 0) {
      sm.running.push_back(r);
    } else {
      change_streams(sm, time, [&] {
        if (r.streaming) {
          ++sm.streaming;
          sm.asked += r.demand;
        }
        sm.running.push_back(r);
      });
    }
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
  std::priority_queue<StreamDue, std::vector<StreamDue>, std::greater<StreamDue>> streams_;
  double now_ = 0;  // the time of the last due reached
  // The HBM: what the streaming tiles ask in all, how many they are, and the share of their
  // solo speed each gets (1 while they ask no more than the bandwidth, else the bandwidth over
  // what they ask), since the stream clock stood at stream_at_ at time stream_since_.
  double asked_ = 0;
  u32 streaming_tiles_ = 0;
  double hbm_share_ = 1.0;
  double stream_at_ = 0;
  double stream_since_ = 0;
};

}  // namespace

void place_ctas(const SlotLayout& layout, u32 launched_ctas, const NextTile& next,
                std::vector<TraceEvent>& events) {
  Placement(layout, launched_ctas, next, events).run();
}

}  // namespace tilesched::sim::detail
