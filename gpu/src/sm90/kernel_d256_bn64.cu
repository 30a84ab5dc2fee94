// The sm90 attention kernel for head dim 256, tiles of 128 query rows, K/V blocks of 64 keys: the
// short rows' kernel (recommended_block_n; one translation unit per kernel: see launch.hpp).
#include "sm90/launch.cuh"

namespace tilesched::gpu::sm90 {

template Status plan_kernel<256, 128, 64>(const AttentionArgs&, LaunchPlan&);
template Status launch<256, 128, 64>(const AttentionArgs&, const LaunchPlan&);
template Status resident_ctas_per_sm<256, 128, 64>(int&);

}  // namespace tilesched::gpu::sm90
