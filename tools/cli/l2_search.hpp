// The L2 section sizes `compare` and `recommend` replay besides the workload's own, and what a
// workload's sections hold (docs/schedulers.md, "Longest first, L2 sections").
//
// The replay has no L2: it sees only what sections do to the balance. Sections constrain longest
// first to reorder within each of them, so larger sections (or none) are where the replay can find
// time, and the L2 reuse they give up is what it cannot see. So the search tries the workload's own
// size, twice and four times it, and no sections (l2_bytes 0), and a size other than the
// workload's own is recommended only when it is predicted faster by more than the recommendation's
// tolerance (strategies.hpp). Smaller sections are not tried: in the replay they can only balance
// worse, and measured on the H200 they were no faster (docs/schedulers.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/workload.hpp"

namespace tilesched::cli {

// Whether a scheduler's order is built in L2 sections, so that l2_bytes changes its walk.
bool walks_l2_sections(SchedulerKind kind);

// The l2_bytes values worth replaying for `w` at its num_ctas: its own first, then the larger
// sizes and 0 (no sections), leaving out every size that gives the same sections as one before it
// (its replay would be the same). Only the sections matter, not the scheduler: callers run each
// value under every scheduler that walks_l2_sections.
std::vector<std::uint64_t> l2_bytes_to_search(const Workload& w);
// The most values l2_bytes_to_search gives.
inline constexpr std::size_t kMaxL2SizesSearched = 4;

// The sections of `w`'s longest-first order at its l2_bytes and num_ctas.
struct L2SectionSizes {
  std::size_t sections = 0;
  std::uint64_t largest_bytes = 0;  // K and V of the (sequence, KV head) units one section reads
  std::uint64_t budget_bytes = 0;   // the share of l2_bytes a section's K and V are meant to fit
  // Sections made larger than the budget by l2_min_rounds (or by a single round that exceeds it).
  std::size_t over_budget = 0;
};
L2SectionSizes l2_section_sizes(const Workload& w);

// How an l2_bytes value is named to a user: "L2 sections off" (0), "L2 sections of 100 MiB".
std::string describe_l2_bytes(std::uint64_t l2_bytes);

// Bytes in MiB with one decimal: "25.0 MiB".
std::string format_mib(std::uint64_t bytes);

}  // namespace tilesched::cli
