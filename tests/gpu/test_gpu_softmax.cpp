// The softmax's held max (label gpu, part of test_gpu). In a K/V block no mask touches, the kernel
// takes each weight against the row's max so far, without the block's own max first, and checks
// the block's sums afterwards; a warp whose rows' scores jumped redoes the block from the scaled
// scores it kept (softmax_held, docs/gpu-kernel.md). Uniform random inputs never jump far, so here
// each K block is scaled by its own factor: blocks run from the highest to the lowest, and the
// lower ones carry scores 8, 40 and 400 times larger than the first, so that a block's weights
// against the held max reach about 2^9 (the block is taken as it is), 2^50 (too large: the slow
// path, from finite weights) and past 2^128 (+inf: the slow path again). V is large where the
// scores are, so a block dropped, or counted against the wrong max, moves O far past the check's
// tolerance.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "gpu_check.hpp"
#include "tilesched/gpu/device_problem.hpp"
#include "tilesched/sim/attention.hpp"

using namespace tilesched;

namespace {

// Factor of the scores in K block `block` (in kernel blocks of `bn` keys) of a sequence with
// `blocks` of them, counted from the highest (the kernel's first).
float score_factor(u32 block, u32 blocks) {
  constexpr float kFactors[] = {1.f, 8.f, 1.f, 40.f, 40.f, 400.f, 1.f, 8.f};
  const u32 from_top = blocks - 1 - block;
  return kFactors[from_top % (sizeof(kFactors) / sizeof(kFactors[0]))];
}

}  // namespace

TEST_CASE("scores that jump in later K/V blocks: the held max's slow path, finite and infinite") {
  int i = 0;
  for (u32 d : {64u, 128u, 256u})
    for (const u32 bm : gpu::kernel_block_ms(d))
      for (const u32 bn : gpu::kernel_block_ns(d))
        for (Mask mask : {Mask::None, Mask::Causal})
          for (SchedulerKind kind :
               {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::LptQueued}) {
            Workload w;
            w.head_dim = d;
            w.block_m = bm;
            w.block_n = bn;
            w.num_q_heads = 2;
            w.num_kv_heads = 1;
            w.mask = mask;
            w.scheduler = kind;
            w.num_ctas = 5;
            // Eight and a half K blocks and more; causal rows also meet the jumps below their
            // diagonal, dense ones with fewer queries than keys.
            w.q_lens = mask == Mask::Causal ? std::vector<u32>{8 * bn + 40, 3 * bn}
                                            : std::vector<u32>{150, 64};
            w.kv_lens = mask == Mask::Causal ? w.q_lens : std::vector<u32>{8 * bn + 40, 6 * bn};
            REQUIRE(w.validate().empty());
            sim::AttentionInputs in = sim::make_inputs(w, 12000 + i);
            const std::vector<u32> kv_off = w.kv_row_offsets();
            const std::size_t kv_row = std::size_t(w.num_kv_heads) * d;
            for (std::size_t s = 0; s + 1 < kv_off.size(); ++s) {
              const u32 keys = kv_off[s + 1] - kv_off[s];
              const u32 blocks = (keys + bn - 1) / bn;
              for (u32 key = 0; key < keys; ++key) {
                const float f = score_factor(key / bn, blocks);
                for (std::size_t e = 0; e < kv_row; ++e) {
                  float& k = in.k[(kv_off[s] + key) * kv_row + e];
                  k = sim::round_to_bf16(k * f);
                  if (f > 1.f) {
                    float& v = in.v[(kv_off[s] + key) * kv_row + e];
                    v = sim::round_to_bf16(v + f);
                  }
                }
              }
            }
            const auto r = gpu_test::check_workload(w, in, false, bn);
            INFO(gpu_test::describe(w, bn));
            for (const auto& f : r.failures) FAIL_CHECK(f);
            CHECK(r.failures.empty());
            CHECK(r.tiles > 0);
            ++i;
          }
}
