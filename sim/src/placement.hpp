// Where and when CTAs run (SPEC §8): the one place where the tiles a CTA processes become start
// and end times. Every scheduler's replay goes through it.
//
// - The device has `multiprocessors` SMs and `slots` resident CTA slots; slot s lives on SM
//   s % multiprocessors, so the first CTAs spread one per SM before any SM takes a second, as the
//   hardware's block scheduler does.
// - CTAs start in id order: the first `slots` at time 0, each later one in the slot of the CTA
//   that exits before it (a grid larger than the resident capacity runs in waves), `cta_launch_us`
//   after that exit: the block scheduler's refill and the kernel's prologue, which the H200
//   measures at about a microsecond per CTA (docs/sim-cost-model.md). A CTA without a tile holds
//   its slot that long and exits.
// - Co-resident CTAs share their SM (processor sharing): while k CTAs of an SM are busy each
//   progresses at SmSharing::rate(k) of its solo speed, so a tile's end depends on what its
//   neighbours run. With one busy CTA on an SM a tile takes exactly its solo time.
// - Tiles that stream their K and V from HBM (decode tiles, CostModel::stream_bytes) share the
//   device's bandwidth: a streaming tile runs its fixed part first, then its blocks, during which
//   it asks stream_bytes / stream_us bytes a microsecond of its solo speed; while the tiles
//   streaming at once ask more than hbm_bytes_per_us in all, each of them progresses at the
//   bandwidth over their demand (processor sharing of the HBM). A tile's fixed part (its Q, its
//   epilogue, the hand-off) takes no share: it runs at its SM's rate whatever the others stream.
// - A CTA asks for its next tile when it starts and whenever its tile ends; CTAs that ask at the
//   same time ask in CTA id order (the queued scheduler's fetch order depends on it). Same inputs,
//   same trace.
#pragma once

#include <functional>
#include <vector>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::sim::detail {

// What the device offers a grid.
struct SlotLayout {
  u32 multiprocessors = 1;   // SMs
  u32 slots = 1;             // CTAs resident at once
  SmSharing sharing;         // how busy CTAs on one SM progress
  double cta_launch_us = 0;  // from a slot's CTA exit to the start of the next CTA in it
  // The HBM bandwidth streaming tiles share, bytes per µs (CostModel::hbm_bytes_per_us).
  double hbm_bytes_per_us = 0;
};

// The layout for a workload: the workload's resident_ctas when it sets one, else the profile's
// SMs x CTAs per SM at its head_dim; the profile's sharing and CTA launch at its head_dim.
SlotLayout slot_layout(const Workload& w, const CostModel& cost);

// One call for a CTA's next tile.
struct CtaTurn {
  u32 cta = 0;
  u32 slot = 0;  // the resident slot the CTA runs in (for per-slot scheduler state)
  u32 step = 0;  // tiles the CTA has processed so far (0: the CTA just started)
  double now_us = 0;
};

// The tile a CTA processes next: its event (the placement fills in cta, step, start, end and
// sm_id) and how long it takes alone on an SM: solo_us, of which the last stream_us stream
// stream_bytes of K and V from HBM (0 for a tile that reads them through the L2).
struct PlacedTile {
  TraceEvent event;
  double solo_us = 0;
  double stream_us = 0;
  double stream_bytes = 0;
};

// Fills `tile` and returns true, or returns false when the CTA exits.
using NextTile = std::function<bool(const CtaTurn& turn, PlacedTile& tile)>;

// Runs CTAs 0 .. launched_ctas - 1 on `layout`, asking `next` for their tiles; `events` (empty,
// reserved by the caller for the tiles it expects) receives every processed tile's event, ordered
// by (cta, step), with sm_id the SM it ran on. The events are held once: they are recorded in
// start order and then sorted in place, which takes 4 more bytes per tile unless they already
// are in CTA order.
void place_ctas(const SlotLayout& layout, u32 launched_ctas, const NextTile& next,
                std::vector<TraceEvent>& events);

}  // namespace tilesched::sim::detail
