// The simulator's replay: which CTA processes which tile, in which order, and when (predicted).
//
// - Static schedulers (tile, transient): every CTA runs the common/ scheduler loop
//   (initial_state, first_work, advance) on its own, exactly as on the GPU.
// - Queued: a deterministic discrete-event simulation. A host counter starts at counter_start()
//   and is driven through AtomicCounter; a CTA finishes its tile at start + cost(tile); the
//   earliest finisher calls advance next (ties: lower CTA id). At time 0 every CTA takes its first
//   tile in CTA order. Same inputs, same trace.
// - Transient: CTA id = x + T*(y + H*z). The grid holds T*H*B CTAs but only
//   workload.resident_ctas run at once: CTAs start in id order, each as soon as a resident slot
//   is free. A CTA whose tile starts past its sequence ends at once and records no
//   event.
// Events carry query_rows = tile_rows() rows (faithful mode: faithful_query_rows(), what upstream
// would write), kv_blocks from tile_cost(), and start/end in µs; they are ordered by (cta, step).
// The trace's `created` is left empty so that the same inputs give the same trace; whoever saves
// it may stamp it.
#pragma once

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim {

// Throws std::invalid_argument with Workload::validate()'s message for an invalid workload.
Trace replay(const Workload& w, const CostModel& cost);

// replay with CostModel::builtin(w.cost_profile).
Trace replay(const Workload& w);

}  // namespace tilesched::sim
