// Predicted time of one work tile on one SM, from its KV-block counts (SPEC §7):
//   time = fixed_us + us_per_block * unmasked_blocks + us_per_masked_block * masked_blocks
// with coefficients per head_dim and device. Defaults live in sim/data/cost_<device>.json and are
// compiled into the library, so the tool works from any directory.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilesched/geometry.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim {

// One head_dim's coefficients, all in microseconds.
struct CostCoefficients {
  double fixed_us = 0;             // per tile: prologue, Q load, epilogue, scheduler step
  double us_per_block = 0;         // per BN-wide KV block with no masked element
  double us_per_masked_block = 0;  // per KV block that needs the mask (diagonal or key tail)

  // Predicted time of a tile with these KV-block counts (the formula above).
  double tile_time_us(const TileCost& c) const {
    return fixed_us + us_per_block * double(c.kv_blocks - c.masked_blocks) +
           us_per_masked_block * double(c.masked_blocks);
  }

  bool operator==(const CostCoefficients& o) const {
    return fixed_us == o.fixed_us && us_per_block == o.us_per_block &&
           us_per_masked_block == o.us_per_masked_block;
  }
};

struct CostModel {
  std::string device;                           // "h200", "h100", or a measured device name
  std::map<u32, CostCoefficients> by_head_dim;  // at least one entry

  // Coefficients for `head_dim`: the table entry when present; otherwise linear interpolation
  // between the neighbouring entries, or proportional scaling of the nearest one outside the
  // table (work per block grows linearly with head_dim).
  CostCoefficients coefficients(u32 head_dim) const;

  // Predicted time of a tile with cost `c` for workload `w` (uses w.head_dim).
  double tile_time_us(const Workload& w, const TileCost& c) const;

  // The compiled-in defaults: "h200" or "h100". Throws std::invalid_argument for other names.
  static CostModel builtin(const std::string& profile);
  // A cost file (format in docs/sim-cost-model.md). Throws std::invalid_argument naming the file
  // and the field at fault, std::runtime_error when it cannot be read.
  static CostModel load(const std::string& path);
  static CostModel from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;

  // Least-squares fit (one entry per head_dim found in the traces) from measured tile times.
  static CostModel fit(const std::vector<Trace>& traces, const std::string& device);
};

// The KV-block counts of a trace event, recomputed from its workload (SPEC §7). A faithful-mode
// tile at or past its sequence's end counts every key of its sequence, as upstream would process
// them, whether it writes BM rows (past the end) or none (starting exactly at the end).
TileCost event_tile_cost(const Workload& w, const TraceEvent& e);

// Result of fitting one head_dim.
struct CostFit {
  CostCoefficients coefficients;
  double rms_residual_us = 0;  // root mean square of (measured - predicted)
  // rms_residual_us / root mean square of the measured tile times: the typical error of one
  // predicted tile time as a fraction of a typical tile time (0 = exact).
  double relative_rms_error = 0;
  std::size_t samples = 0;
};

// Fits fixed_us, us_per_block and us_per_masked_block for `head_dim` by least squares over every
// event (end_us - start_us) of the traces whose workload has that head_dim. Throws
// std::invalid_argument when there are fewer than 3 samples or the counts do not determine the
// three coefficients; the message names the coefficient left open (e.g. us_per_masked_block when
// no tile has masked blocks). Coefficients are returned as fitted, negative ones included: the
// caller decides whether a negative cost is acceptable.
CostFit fit_cost(const std::vector<Trace>& traces, u32 head_dim);

}  // namespace tilesched::sim
