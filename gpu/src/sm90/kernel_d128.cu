// The sm90 attention kernel for head dim 128, tiles of 128 query rows (one translation unit per
// kernel: see launch.hpp).
#include "sm90/launch.cuh"

namespace tilesched::gpu::sm90 {

template Status plan_kernel<128, 128, 128>(const AttentionArgs&, LaunchPlan&);
template Status launch<128, 128, 128>(const AttentionArgs&, const LaunchPlan&);
template Status resident_ctas_per_sm<128, 128, 128>(int&);

}  // namespace tilesched::gpu::sm90
