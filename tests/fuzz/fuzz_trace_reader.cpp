// Fuzz target: the trace reader (JSON text -> Trace), then what every command does with a trace
// it accepted: metrics, per-tile costs, and writing it again (which must read back unchanged).
#include "fuzz_support.hpp"
#include "json_read.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilesched;
  fuzz::expect_accept_or_clean_rejection([&] {
    const Trace t =
        sim::detail::read_json_text(fuzz::as_text(data, size), "input", sim::trace_from_json);
    const sim::Metrics m = sim::compute_metrics(t);
    fuzz::require(m.tile_count == t.events.size(), "metrics miscount the tiles");
    fuzz::require(m.makespan_us >= 0 && m.makespan_us <= 1e12, "a makespan out of range");
    for (const TraceEvent& e : t.events) {
      const TileCost c = sim::event_tile_cost(t.workload, e);
      fuzz::require(c.masked_blocks <= c.kv_blocks, "more masked blocks than blocks");
    }
    const nlohmann::json written = sim::trace_to_json(t);
    fuzz::require(sim::trace_to_json(sim::trace_from_json(written)) == written,
                  "a trace does not round-trip");
  });
  return 0;
}
