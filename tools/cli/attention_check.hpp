// `sim --attention`: attention computed tile by tile as the trace says, checked against the naive
// reference. Turns a scheduling bug (a tile run twice or never) into a visible failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::cli {

struct AttentionReport {
  std::size_t rows_total = 0;  // (query row, head) pairs of the output
  std::size_t written_once = 0, gaps = 0, double_writes = 0;
  std::vector<std::string> problems;  // first few coverage problems, one sentence each
  std::size_t problem_count = 0;
  double o_error = 0, lse_error = 0;  // relative 2-norm error vs the reference (NaN: gaps)
  bool coverage_ok() const { return gaps == 0 && double_writes == 0 && problem_count == 0; }
};

// Beyond fp32 rounding the tiled and reference results must agree; 1e-3 leaves room for long
// sequences while any misplaced tile gives an error of order 1.
inline constexpr double kAttentionTolerance = 1e-3;

AttentionReport check_attention(const Trace& trace, std::uint64_t seed);

// Lines for stdout.
std::string format_attention_report(const AttentionReport& r);

}  // namespace tilesched::cli
