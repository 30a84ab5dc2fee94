#include "cli/run_size.hpp"

#include <fmt/format.h>

#include "cli/errors.hpp"
#include "cli/typed_flags.hpp"
#include "tilesched/sim/replay.hpp"

namespace tilesched::cli {

CLI::Option* add_max_tiles_flag(CLI::App& command, std::uint64_t& max_tiles) {
  return add_number_flag(command, "--max-tiles", max_tiles,
                         "Refuse workloads of more tiles than this, before replaying (the "
                         "message gives the memory and output they would need)",
                         /*min=*/1)
      ->capture_default_str();
}

RunSize estimate_run_size(const Workload& w, std::size_t traces,
                          const viz::OutputOptions* outputs) {
  RunSize size;
  size.tiles = sim::replayed_tile_count(w);
  size.memory_bytes = size.tiles * sim::replay_bytes_per_tile(w) * traces;
  if (outputs) size.output_bytes = viz::estimated_output_bytes(size.tiles, *outputs);
  return size;
}

std::string format_bytes(std::uint64_t bytes) {
  const double b = double(bytes);
  if (b >= double(1ull << 30)) return fmt::format("{:.1f} GiB", b / double(1ull << 30));
  if (b >= double(1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  if (b >= double(1ull << 10)) return fmt::format("{:.1f} KiB", b / double(1ull << 10));
  return fmt::format("{} bytes", bytes);
}

void check_run_size(const Workload& w, std::uint64_t max_tiles, std::size_t traces,
                    const viz::OutputOptions* outputs, const std::string& what) {
  const RunSize size = estimate_run_size(w, traces, outputs);
  if (size.tiles <= max_tiles) return;
  const std::string written =
      outputs ? fmt::format(" and write about {}", format_bytes(size.output_bytes)) : "";
  throw UsageError(fmt::format(
      "{} has {} tiles, more than --max-tiles ({}): the run would hold about {} of memory{}; pass "
      "--max-tiles {} to run it anyway{}",
      what, size.tiles, max_tiles, format_bytes(size.memory_bytes), written, size.tiles,
      outputs && outputs->pictures != viz::Pictures::None ? " (--pictures none writes less)" : ""));
}

std::string out_of_memory_message() {
  return "out of memory: the run needed more than this process may allocate (a smaller workload "
         "needs less; --max-tiles refuses large ones before they start)";
}

}  // namespace tilesched::cli
