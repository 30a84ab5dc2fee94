// Fuzz target: Workload::validate on workloads built field by field from the fuzzer's bytes,
// edges of every range included. What validate accepts must be safe to schedule: the replay of
// a small accepted workload runs (or refuses in one line a workload longer than a trace records),
// hands out every tile of a sequence exactly once (safe mode),
// and writes a trace the trace reader accepts.
#include <array>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "fuzz_support.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/trace_io.hpp"

namespace {

using namespace tilesched;

// Replays are kept small so that the fuzzer stays fast (validate itself sees every size), and
// the JSON round trip, most of the time of an execution, smaller still.
constexpr std::uint64_t kMaxReplayedTiles = 128;
constexpr std::size_t kMaxRoundTripEvents = 16;

Workload workload_from(fuzz::ByteSource& in) {
  Workload w;
  const u32 batch = in.take_in(0, 12);
  const bool separate_keys = in.take<std::uint8_t>() & 1;
  for (u32 b = 0; b < batch; ++b) {
    w.q_lens.push_back(in.take_in(0, 0xFFFFFFFFu));
    if (separate_keys) w.kv_lens.push_back(in.take_in(0, 0xFFFFFFFFu));
  }
  const auto flags = in.take<std::uint8_t>();
  w.padded = flags & 1;
  w.mask = (flags & 2) ? Mask::Causal : Mask::None;
  w.schedule = (flags & 4) ? Schedule::PromptRotate : Schedule::Default;
  w.flip_prompt_idx = flags & 8;
  w.ragged_mode = (flags & 16) ? RaggedMode::Faithful : RaggedMode::Safe;
  w.scheduler = std::array{SchedulerKind::Tile, SchedulerKind::Queued,
                           SchedulerKind::Transient}[(flags >> 5) % 3];
  w.num_q_heads = in.take_in(0, 0xFFFFFFFFu);
  w.num_kv_heads = in.take_in(0, 0xFFFFFFFFu);
  w.head_dim = in.take_in(0, 2048);
  w.block_m = in.take_in(0, 8192);
  w.block_n = in.take_in(0, 8192);
  w.num_ctas = in.take_in(0, 0xFFFFFFFFu);
  return w;
}

// Safe mode: the tiles that start inside their sequence, each (prompt, head, offset) once.
void check_coverage(const Workload& w, const Trace& t) {
  std::set<std::tuple<u32, u32, u32>> seen;
  for (const TraceEvent& e : t.events) {
    fuzz::require(e.prompt_offset < w.q_lens[e.prompt_idx],
                  "safe mode handed out a tile past "
                  "its sequence's end");
    fuzz::require(seen.insert({e.prompt_idx, e.head_idx, e.prompt_offset}).second,
                  "a tile was handed out twice");
  }
  std::uint64_t expected = 0;
  for (const u32 len : w.q_lens) expected += ceil_div(len, w.block_m);
  fuzz::require(seen.size() == expected * w.num_q_heads, "a tile was never handed out");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::ByteSource in(data, size);
  const Workload w = workload_from(in);
  const std::string problem = w.validate();
  if (!problem.empty()) {
    fuzz::require(problem.find('\n') == std::string::npos, "a multi-line validation message");
    return 0;
  }
  const std::uint64_t tiles =
      std::uint64_t(ceil_div(w.max_seq_len(), w.block_m)) * w.num_q_heads * w.batch_size();
  fuzz::require(tiles <= 0xFFFFFFFFull, "validate accepted more work indices than fit 32 bits");
  if (tiles > kMaxReplayedTiles) return 0;  // grids are at most one CTA per tile, C any size
  static const sim::CostModel cost = sim::CostModel::builtin("h200");
  Trace t;
  try {
    t = sim::replay(w, cost);
  } catch (const std::invalid_argument& e) {
    // A valid workload can still take longer than a trace records (tiles of billions of KV
    // blocks at a large head dim): the replay refuses it with one line, as the tool reports it.
    const std::string what = e.what();
    fuzz::require(what.find('\n') == std::string::npos, "a multi-line replay message");
    fuzz::require(what.find("predicted times run past") != std::string::npos,
                  "the replay refused a valid workload for another reason than its length");
    return 0;
  }
  if (w.ragged_mode == RaggedMode::Safe || w.scheduler != SchedulerKind::Tile) check_coverage(w, t);
  const sim::Metrics m = sim::compute_metrics(t);
  fuzz::require(m.tile_count == t.events.size(), "metrics miscount the tiles");
  // The simulator's own trace must pass its reader: what `sim` writes, `viz` reads.
  if (t.events.size() > kMaxRoundTripEvents) return 0;
  try {
    sim::trace_from_json(sim::trace_to_json(t));
  } catch (const std::exception& e) {
    fuzz::finding("the trace reader rejects a replayed trace:", e.what());
  }
  return 0;
}
