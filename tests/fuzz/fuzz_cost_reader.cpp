// Fuzz target: the cost-table reader (JSON text -> CostModel). An accepted table gives finite,
// non-negative coefficients and a CTA launch within its limit for every head dim (interpolated or
// scaled) and tile height, and round-trips.
#include <cmath>

#include "fuzz_support.hpp"
#include "json_read.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/value_limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilesched;
  fuzz::expect_accept_or_clean_rejection([&] {
    const sim::CostModel model =
        sim::detail::read_json_text(fuzz::as_text(data, size), "input", sim::CostModel::from_json);
    for (const u32 d : {1u, 63u, 64u, 100u, 128u, 256u, 1000u, 1024u}) {
      const sim::CostCoefficients c = model.coefficients(d);
      for (const double us : {c.fixed_us, c.us_per_block, c.us_per_masked_block})
        fuzz::require(std::isfinite(us) && us >= 0 && us <= 1024 * sim::kMaxCostCoefficientUs,
                      "a coefficient out of range");
      const double launch = model.cta_launch_us(d);
      fuzz::require(std::isfinite(launch) && launch >= 0 && launch <= sim::kMaxCtaLaunchUs,
                    "a CTA launch out of range");
    }
    for (const auto& [d, heights] : model.by_tile_height)
      for (const auto& [bm, c] : heights)
        for (const double us : {c.fixed_us, c.us_per_block, c.us_per_masked_block})
          fuzz::require(std::isfinite(us) && us >= 0 && us <= sim::kMaxCostCoefficientUs,
                        "a tile height's coefficient out of range");
    const sim::CostModel back = sim::CostModel::from_json(model.to_json());
    fuzz::require(back.by_head_dim == model.by_head_dim, "a cost table does not round-trip");
    fuzz::require(back.by_tile_height == model.by_tile_height &&
                      back.block_m_by_head_dim == model.block_m_by_head_dim,
                  "a cost table's tile heights do not round-trip");
    for (const auto& entry : model.by_head_dim)
      fuzz::require(back.cta_launch_us(entry.first) == model.cta_launch_us(entry.first),
                    "a CTA launch does not round-trip");
  });
  return 0;
}
