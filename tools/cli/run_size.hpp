// Runs too large for the machine are refused before they start, with what they would need:
// a replay holds every event in memory and the outputs grow with them, so a typo in --batch or
// --seq-len should cost a message, not minutes of swapping and a bare std::bad_alloc.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "tilesched/workload.hpp"
#include "viz/schedule_outputs.hpp"

namespace tilesched::cli {

// 16M tiles: about 1 GiB of events and 7 GB of trace and Perfetto files.
inline constexpr std::uint64_t kDefaultMaxTiles = std::uint64_t(1) << 24;

CLI::Option* add_max_tiles_flag(CLI::App& command, std::uint64_t& max_tiles);

// What a run of `w` would take: `traces` replays held at once (compare holds one per strategy),
// and the outputs `outputs` describes, when it writes them.
struct RunSize {
  std::uint64_t tiles = 0;         // events of one replay
  std::uint64_t memory_bytes = 0;  // the events held, the largest part of the memory
  std::uint64_t output_bytes = 0;
};
RunSize estimate_run_size(const Workload& w, std::size_t traces, const viz::OutputOptions* outputs);

// "1.2 GiB", "840.0 MiB", "12.0 KiB", "512 bytes".
std::string format_bytes(std::uint64_t bytes);

// Throws UsageError (exit 2) when a replay of `w` would record more than `max_tiles` events:
// "<what> has N tiles, more than --max-tiles (M): the run would hold about X of memory and write
// about Y; ...". `what` names the workload where a command runs several ("suite workload 'w'").
void check_run_size(const Workload& w, std::uint64_t max_tiles, std::size_t traces,
                    const viz::OutputOptions* outputs, const std::string& what = "the workload");

// What every command says when an allocation fails (std::bad_alloc), whatever it was doing.
std::string out_of_memory_message();

}  // namespace tilesched::cli
