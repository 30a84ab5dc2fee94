// The sm90 attention kernel for head dim 128, tiles of 128 query rows (one translation unit per
// kernel: see launch.hpp).
#include "sm90/launch.cuh"

namespace tilesched::gpu::sm90 {

template Status launch<128, 128, 128>(const AttentionArgs&, const runtime::AnyScheduler&,
                                      const TileSummary&);
template Status resident_ctas_per_sm<128, 128, 128>(int&);
template Status cluster_ctas<128, 128, 128>(const Workload&, u32&);

}  // namespace tilesched::gpu::sm90
