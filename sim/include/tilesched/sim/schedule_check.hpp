// Does a measured run follow the model? The schedule (which CTA processed which tile, in which
// order) and the outputs (each tile's O and LSE). One check for the GPU test suite, the
// golden-data replay and `tilesched run`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tilesched/sim/attention.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::sim {

// One sentence per difference; empty when `measured` follows `model` (normally sim::replay of
// the same workload):
// - the same number of launched CTAs;
// - static schedulers (tile, transient, lpt, planned, split_tail, stream_k): each CTA's sequence
//   of tiles (index, offset, head, prompt, rows, KV blocks and first KV block, step) equals the
//   model's;
// - counter schedulers (queued, lpt_queued, ragged_queued, split_kv): the fetch order depends on
//   timing, so the same set of indices (split_kv: pieces, an index and a first KV block), each
//   exactly once and each naming the model's tile, in an order consistent with the counter (a
//   CTA's first index is its static one, below C, every later index comes from the counter and
//   so exceeds the one before; split_kv's counter numbers pieces in stream order).
std::vector<std::string> schedule_differences(const Trace& model, const Trace& measured);

// How far a tile's O and LSE may be from the simulator's blockwise softmax on the same bf16
// inputs, as tile_error() measures it: the kernel rounds O to bf16 (relative step 2^-8, 3.9e-3)
// after accumulating in fp32 in another order, while a misplaced or missing tile errs by order 1.
inline constexpr double kTileTolerance = 1e-2;

struct OutputCheck {
  std::size_t tiles = 0;              // tiles compared: the events of the measured trace
  double worst_error = 0;             // max over tiles of max(O error, LSE error), NaN aside
  std::vector<std::string> failures;  // one sentence per tile out of tolerance or NaN
};

// Holds every tile of `measured` (its rows of `o`, its entries of `lse`, layouts of
// attention.hpp) against sim::tiled_attention of the same inputs, run in the measured trace's
// own tile order so that overlapping writes land as they did there.
OutputCheck check_outputs(const Trace& measured, const AttentionInputs& inputs,
                          const std::vector<float>& o, const std::vector<float>& lse);

}  // namespace tilesched::sim
