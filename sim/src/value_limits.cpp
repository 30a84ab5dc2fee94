#include "tilesched/sim/value_limits.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tilesched::sim {

std::string trace_time_problem(double us) {
  if (!std::isfinite(us)) return fmt::format("must be a finite number of microseconds, got {}", us);
  if (us < 0) return fmt::format("must not be negative (microseconds from the start), got {}", us);
  if (us > kMaxTraceTimeUs)
    return fmt::format("{:g} us is beyond the {:g} us (11.6 days) a trace may record", us,
                       kMaxTraceTimeUs);
  return {};
}

namespace {

// Empty when `us` is a finite, non-negative number of microseconds up to `limit`; otherwise why
// not, with what the limit stands for (`beyond`): above it is a unit mistake, not a slow GPU.
std::string microseconds_problem(double us, double limit, const char* beyond) {
  if (!std::isfinite(us)) return fmt::format("must be a finite number of microseconds, got {}", us);
  if (us < 0) return fmt::format("must not be negative, got {:g}", us);
  if (us > limit)
    return fmt::format("{:g} us is more than the {:g} us {}; is it in microseconds?", us, limit,
                       beyond);
  return {};
}

}  // namespace

std::string cost_coefficient_problem(double us) {
  return microseconds_problem(us, kMaxCostCoefficientUs, "(one second) any tile or KV block takes");
}

std::string cta_launch_problem(double us) {
  return microseconds_problem(us, kMaxCtaLaunchUs,
                              "(one millisecond) a GPU takes to start a CTA in a freed slot");
}

std::string paged_factor_problem(double factor) {
  if (!(std::isfinite(factor) && factor > 0 && factor <= kMaxPagedFactor))
    return fmt::format("must be a factor in (0, {:g}] on the per-block costs, got {}",
                       kMaxPagedFactor, factor);
  return {};
}

std::string saved_row_problem(double us) {
  return microseconds_problem(us, kMaxSavedRowUs,
                              "(one millisecond) a piece takes to save one row of its partial "
                              "output");
}

std::string hbm_bandwidth_problem(double gbps) {
  if (!(std::isfinite(gbps) && gbps >= kMinHbmGbps && gbps <= kMaxHbmGbps))
    return fmt::format(
        "must be the HBM bandwidth in {:g}..{:g} GB/s (an H100 SXM's is 3350), got {:g}",
        kMinHbmGbps, kMaxHbmGbps, gbps);
  return {};
}

std::string sm_id_problem(std::int64_t sm_id, u32 launched_ctas) {
  if (sm_id == -1 || (sm_id >= 0 && (sm_id < kMaxSmCount || sm_id < std::int64_t(launched_ctas))))
    return {};
  return fmt::format(
      "{} is neither -1 (not recorded), an SM id below {}, nor a simulated slot below "
      "launched_ctas ({})",
      sm_id, kMaxSmCount, launched_ctas);
}

}  // namespace tilesched::sim
