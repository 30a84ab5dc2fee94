#include "cli/l2_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "tilesched/schedule_plan.hpp"

namespace tilesched::cli {
namespace {

// Sections depend on the tiles' sequences and heads only, not on their costs.
std::vector<PlannedTile> tiles_in_default_order(const Workload& w) {
  return valid_tiles(w, [](const TileCost&) { return 0.0; });
}

std::vector<u32> sections_at(const Workload& w, const std::vector<PlannedTile>& tiles,
                             std::uint64_t l2_bytes) {
  Workload sized = w;
  sized.l2_bytes = l2_bytes;
  return l2_sections(sized, tiles, l2_section_budget(sized));
}

}  // namespace

bool walks_l2_sections(SchedulerKind kind) {
  return kind == SchedulerKind::Lpt || kind == SchedulerKind::LptQueued ||
         kind == SchedulerKind::Planned;
}

std::vector<std::uint64_t> l2_bytes_to_search(const Workload& w) {
  const std::vector<PlannedTile> tiles = tiles_in_default_order(w);
  std::vector<std::uint64_t> sizes;
  std::vector<std::vector<u32>> seen;
  const std::uint64_t own = w.l2_bytes;
  const std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  // Saturated: a file may give any l2_bytes.
  const std::uint64_t twice = own > most / 2 ? most : 2 * own;
  const std::uint64_t four_times = own > most / 4 ? most : 4 * own;
  const std::uint64_t candidates[kMaxL2SizesSearched] = {own, twice, four_times, 0};
  for (const std::uint64_t size : candidates) {
    std::vector<u32> sections = sections_at(w, tiles, size);
    if (std::find(seen.begin(), seen.end(), sections) != seen.end()) continue;
    seen.push_back(std::move(sections));
    sizes.push_back(size);
  }
  return sizes;
}

L2SectionSizes l2_section_sizes(const Workload& w) {
  const std::vector<PlannedTile> tiles = tiles_in_default_order(w);
  const std::vector<u32> section = sections_at(w, tiles, w.l2_bytes);
  L2SectionSizes s;
  s.budget_bytes = l2_section_budget(w);
  std::uint64_t bytes = 0;  // of the current section's units
  const auto close = [&] {
    s.largest_bytes = std::max(s.largest_bytes, bytes);
    if (s.budget_bytes > 0 && bytes > s.budget_bytes) ++s.over_budget;
  };
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const bool new_section = i == 0 || section[i] != section[i - 1];
    if (new_section && i > 0) close();
    if (new_section) {
      ++s.sections;
      bytes = 0;
    }
    // DEFAULT order keeps a (sequence, KV head) unit's tiles together, as l2_sections counts them.
    const bool new_unit = new_section || tiles[i].prompt != tiles[i - 1].prompt ||
                          w.tile_kv_head(tiles[i].head) != w.tile_kv_head(tiles[i - 1].head);
    if (new_unit) bytes += kv_unit_bytes(w, tiles[i].prompt);
  }
  if (!tiles.empty()) close();
  return s;
}

std::string describe_l2_bytes(std::uint64_t l2_bytes) {
  if (l2_bytes == 0) return "L2 sections off";
  return fmt::format("L2 sections for l2_bytes {}", format_mib(l2_bytes));
}

std::string format_mib(std::uint64_t bytes) {
  return fmt::format("{:.1f} MiB", double(bytes) / double(1ull << 20));
}

}  // namespace tilesched::cli
