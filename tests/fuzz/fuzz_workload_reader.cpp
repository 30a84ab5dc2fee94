// Fuzz target: the workload reader (JSON text -> Workload). An accepted workload must be valid
// and must read back from what workload_to_json writes.
#include "fuzz_support.hpp"
#include "json_read.hpp"
#include "tilesched/sim/workload_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilesched;
  fuzz::expect_accept_or_clean_rejection([&] {
    const Workload w =
        sim::detail::read_json_text(fuzz::as_text(data, size), "input", sim::workload_from_json);
    fuzz::require(w.validate().empty(), "the reader accepted an invalid workload");
    const nlohmann::json written = sim::workload_to_json(w);
    const Workload back = sim::workload_from_json(written);
    fuzz::require(sim::workload_to_json(back) == written, "a workload does not round-trip");
  });
  return 0;
}
