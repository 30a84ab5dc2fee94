// Comparing two traces (sim vs GPU, one strategy vs another, before vs after a change): is it the
// same workload, the same schedule, the same set of tiles, and how do per-CTA times compare.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::cli {

// The first (CTA, step), in schedule order, where the two traces process different tiles; a
// missing side means that trace has no tile there.
struct FirstScheduleDifference {
  u32 cta = 0, step = 0;
  std::optional<TraceEvent> a, b;
};

struct CtaRatio {
  u32 cta = 0;
  double a_busy_us = 0, b_busy_us = 0;
  double ratio() const { return b_busy_us / a_busy_us; }
};

struct TraceDiff {
  std::vector<std::string> workload_differences;  // names of workload fields that differ
  // Those of them that change the attention problem itself (lengths, heads, head_dim, mask, tile
  // sizes), not only how it is scheduled: then tiles and times do not compare at all.
  std::vector<std::string> problem_differences;
  bool launched_ctas_differ = false;
  std::optional<FirstScheduleDifference> first_difference;
  std::size_t only_in_a_count = 0, only_in_b_count = 0;  // tiles (prompt, head, offset)
  std::vector<TraceEvent> only_in_a, only_in_b;          // the first few of each
  // Per-CTA busy time ratio B / A over CTAs that are busy in A.
  std::size_t ratio_ctas = 0;
  double ratio_min = 0, ratio_median = 0, ratio_max = 0;
  std::vector<CtaRatio> worst_ratios;  // furthest from 1 first

  bool same_workload() const { return workload_differences.empty(); }
  bool same_problem() const { return problem_differences.empty(); }
  bool same_tile_set() const { return only_in_a_count == 0 && only_in_b_count == 0; }
  // Every CTA processes the same tiles in the same order (times may differ).
  bool schedules_identical() const { return !first_difference && !launched_ctas_differ; }
};

TraceDiff diff_traces(const Trace& a, const Trace& b, std::size_t max_listed = 5);

// What is wrong with one trace on its own, whatever it is compared with, one sentence each
// (`max_listed` tiles named per kind, then how many more): a tile processed more than once (tiles
// are told apart as diff tells them apart), a tile that starts past its sequence's end (except in
// faithful mode, where running them is upstream's behaviour), and a persistent grid of more CTAs
// than the workload's C. `viz` and `diff` warn with them.
std::vector<std::string> trace_warnings(const Trace& t, std::size_t max_listed = 5);

std::string format_trace_diff(const TraceDiff& d, const Trace& a, const Trace& b);

}  // namespace tilesched::cli
