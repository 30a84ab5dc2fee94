// The ranges of the numbers a trace or a cost file may hold, in one place. The readers reject
// anything outside them, naming the field; the simulator refuses to produce a trace outside them.
// So every trace `sim` writes can be read back by `viz`, `diff` and `fit`, and every figure
// derived from a trace (a duration, a sum over millions of events, Perfetto's nanoseconds) stays
// finite.
#pragma once

#include <cstdint>
#include <string>

#include "tilesched/config.hpp"

namespace tilesched::sim {

// Latest time a trace records, in microseconds from the kernel's start: 1e12 us, about 11.6
// days. In Perfetto's nanoseconds that is 1e15, below 2^53, so it converts to an exact integer,
// and the sum of 2^32 such durations is still finite.
inline constexpr double kMaxTraceTimeUs = 1e12;

// Largest cost coefficient, microseconds per tile or per KV block: one second. No GPU spends that
// long on one block; a larger value is a unit mistake (seconds or cycles given as microseconds).
inline constexpr double kMaxCostCoefficientUs = 1e6;

// Largest CTA launch time, microseconds: one millisecond. A GPU's block scheduler refills a slot in
// about a microsecond; a millisecond per CTA is a unit mistake (nanoseconds given as microseconds).
inline constexpr double kMaxCtaLaunchUs = 1e3;

// Largest paged factor (CostModel::paged_by_head_dim): a block of many page-sized boxes costing
// 100 times a contiguous one. Pages of one key at BN 128 issue 128 boxes per block where a
// contiguous cache issues one, and the copies overlap; a larger factor is a fit gone wrong (the
// contiguous costs of another kernel or device), not a slow copy.
inline constexpr double kMaxPagedFactor = 100;

// Largest cost of saving one query row of a piece's partial output (CostModel::
// saved_row_us_by_head_dim), microseconds: one millisecond. A row's partial O and LSE are about
// half a KiB at d = 128; a millisecond for them is a unit mistake, not a slow store.
inline constexpr double kMaxSavedRowUs = 1e3;

// The HBM bandwidths a cost file may give (hbm_gbps), GB/s: 1 to 100000 (100 TB/s). An H100 SXM
// has 3350, an H200 4800; a value outside is a unit mistake (bytes or TB per second).
inline constexpr double kMinHbmGbps = 1;
inline constexpr double kMaxHbmGbps = 1e5;

// SM ids the GPU reports (%smid) are below this. A simulated transient trace numbers its
// resident slots instead, below its launched_ctas.
inline constexpr std::int64_t kMaxSmCount = 1 << 16;

// Empty when `us` is a time a trace may hold; otherwise why not (for the reader's message).
std::string trace_time_problem(double us);

// Empty when `us` may be a cost coefficient; otherwise why not.
std::string cost_coefficient_problem(double us);

// Empty when `us` may be a CTA launch time (cta_launch_us); otherwise why not.
std::string cta_launch_problem(double us);

// Empty when `factor` may be a paged factor: in (0, kMaxPagedFactor]; otherwise why not.
std::string paged_factor_problem(double factor);

// Empty when `us` may be the cost of saving one row of a piece's partial output; otherwise why
// not.
std::string saved_row_problem(double us);

// Empty when `gbps` may be an HBM bandwidth in GB/s; otherwise why not.
std::string hbm_bandwidth_problem(double gbps);

// Empty when `sm_id` may appear in a trace with `launched_ctas` CTAs: -1 (not recorded), an SM
// id below kMaxSmCount, or a simulated slot below launched_ctas.
std::string sm_id_problem(std::int64_t sm_id, u32 launched_ctas);

}  // namespace tilesched::sim
