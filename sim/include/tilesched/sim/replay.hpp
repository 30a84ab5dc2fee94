// The simulator's replay: which CTA processes which tile, in which order, where and when
// (predicted).
//
// Every scheduler runs the common/ scheduler loop (initial_state, first_work, advance) per CTA,
// exactly as on the GPU, inside one placement model of the device (SPEC §8, sim/src/placement.hpp):
// - The device has the cost profile's SMs, and resident slots = SMs x CTAs per SM at the
//   workload's head_dim (or workload.resident_ctas when it sets one). Slot s lives on SM
//   s % SMs: the first CTAs spread one per SM before any SM takes a second.
// - CTAs start in id order, the first `slots` at time 0 and each later one in the slot of a CTA
//   that exits, the profile's cta_launch_us later (a persistent grid larger than the resident
//   capacity runs in waves; a transient grid of T*H*B one-tile CTAs streams through the slots).
//   Transient CTA id = x + T*(y + H*z).
// - A CTA's tile takes its cost model time when it has its SM to itself; while k CTAs of an SM
//   are busy each progresses at the profile's rate(k) (processor sharing).
// - The queued scheduler's counter starts at counter_start(); a CTA asks for its next tile when
//   its tile ends, CTAs asking at the same time in CTA id order, so the counter hands out indices
//   in the order a GPU with these tile times would. At time 0 every resident CTA takes its first
//   tile in CTA order. Same inputs, same trace.
// - A CTA whose first tile starts past its sequence exits at once and records no event (in a
//   refilled slot it has held the slot for its launch).
// - Planned schedulers (lpt, lpt_queued, planned, ragged_queued) walk the schedule plan that
//   plan_schedule() builds with the replay's cost model.
// Events carry query_rows = tile_rows() rows (faithful mode: faithful_query_rows(), what upstream
// would write; decoding: the tile's new-token rows, for each query head of the tile's KV head), kv_blocks
// from tile_cost(), start/end in µs and sm_id = the SM; they are ordered by (cta, step). The
// trace's workload.resident_ctas is the slot count the replay used, and its `created` is left empty
// so that the same inputs give the same trace; whoever saves it may stamp it.
#pragma once

#include <cstdint>

#include "tilesched/schedule_plan.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim {

// The schedule plan of `w` (schedule_plan.hpp), its tiles costed by `cost`: what the replay
// walks, and what a GPU run must upload to follow the same schedule. Empty for the seed's
// schedulers. `w` must be valid.
SchedulePlan plan_schedule(const Workload& w, const CostModel& cost);

// plan_schedule with CostModel::builtin(w.cost_profile): the plan replay(w) walks.
SchedulePlan plan_schedule(const Workload& w);

// Throws std::invalid_argument with Workload::validate()'s message for an invalid workload.
Trace replay(const Workload& w, const CostModel& cost);

// replay with CostModel::builtin(w.cost_profile).
Trace replay(const Workload& w);

// How many events replay(w) records, without replaying: the tiles inside their sequences
// (Workload::valid_tile_count: ceil(q_len / tile height) per sequence, times the scheduled
// heads); for the static tile scheduler in faithful mode, every work index T*H*B but the first
// of each CTA whose first tile starts past its sequence. Lets a caller size memory and outputs
// before it commits to a replay. `w` must be valid.
std::uint64_t replayed_tile_count(const Workload& w);

// Bytes replay(w) holds at its peak, per recorded event: the event itself, plus the placement's
// destination index while it sorts the events into (cta, step) order (or, for a transient grid,
// whose events come in CTA order, each one-tile CTA's slot and step).
std::uint64_t replay_bytes_per_tile(const Workload& w);

}  // namespace tilesched::sim
