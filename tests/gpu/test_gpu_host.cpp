// Host-only checks of the GPU half's API (label cpu: no device needed, so CI runs them where
// test_gpu skips): the kernel's tile shapes, the rules that pick them, and validate()'s refusals of
// a K/V block the kernel does not run. validate() never touches the buffers it is given, so
// aligned placeholder addresses stand in for device memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tilesched/gpu/attention.hpp"

using namespace tilesched;

namespace {

// A padded batch of two sequences of `seq` rows under `mask`, and what a rule of the kernel's tile
// shapes (recommended_block_m, recommended_block_n) must give for it.
struct PaddedCase {
  u32 seq;
  Mask mask;
  u32 expected;
};
void check_padded_cases(Workload w, std::initializer_list<PaddedCase> cases,
                        u32 (*rule)(const Workload&)) {
  w.padded = true;
  for (const PaddedCase& c : cases) {
    w.q_lens.assign(2, c.seq);
    w.mask = c.mask;
    CAPTURE(c.seq);
    CAPTURE(to_string(c.mask));
    CHECK(rule(w) == c.expected);
  }
}

}  // namespace

TEST_CASE("the recommended BM: 192 at d = 64 once a query row sees 1536 keys on average") {
  Workload w;
  w.head_dim = 64;
  check_padded_cases(w,
                     {{1024, Mask::None, 128},
                      {2048, Mask::None, 192},
                      {2048, Mask::Causal, 128},   // 1024.5 keys per row
                      {4096, Mask::Causal, 192}},  // 2048.5
                     gpu::recommended_block_m);
  // Short queries against long caches: a row sees 9393 keys on average.
  w.padded = false;
  w.q_lens = {400, 300};
  w.kv_lens = {10000, 9000};
  w.mask = Mask::Causal;
  CHECK(gpu::recommended_block_m(w) == 192);
  w.kv_lens = {400, 300};  // the same queries alone: 179 keys per row on average
  CHECK(gpu::recommended_block_m(w) == 128);
  w.head_dim = 128;
  CHECK(gpu::recommended_block_m(w) == 128);
  w.head_dim = 96;
  CHECK(gpu::recommended_block_m(w) == 0);
}

TEST_CASE("the recommended BN: 64 at d = 256 while a query row sees fewer than 1024 keys") {
  Workload w;
  w.head_dim = 256;
  check_padded_cases(w,
                     {{512, Mask::None, 64},
                      {512, Mask::Causal, 64},   // 256.5 keys per row
                      {1024, Mask::Causal, 64},  // 512.5
                      {1024, Mask::None, 80},    // 1024
                      {2048, Mask::Causal, 80},  // 1024.5
                      {16384, Mask::None, 80}},
                     gpu::recommended_block_n);
  CHECK(gpu::kernel_block_ns(256) == std::vector<u32>{80, 64});
  // split_tail's pieces count the kernel's blocks: always kernel_block_n's.
  w.q_lens.assign(2, 512);
  w.scheduler = SchedulerKind::SplitTail;
  CHECK(gpu::recommended_block_n(w) == gpu::kernel_block_n(256));
  w.scheduler = SchedulerKind::Tile;
  // Short queries against a long cache: a row sees about 9000 keys.
  w.padded = false;
  w.q_lens = {400, 300};
  w.kv_lens = {10000, 9000};
  w.mask = Mask::Causal;
  CHECK(gpu::recommended_block_n(w) == 80);
  for (u32 d : {64u, 128u}) {
    w.head_dim = d;
    CHECK(gpu::recommended_block_n(w) == 128);
    CHECK(gpu::kernel_block_ns(d) == std::vector<u32>{128});
  }
  w.head_dim = 96;
  CHECK(gpu::recommended_block_n(w) == 0);
  CHECK(gpu::kernel_block_ns(96).empty());
}

TEST_CASE("the kernel's shapes per head dim") {
  CHECK(gpu::kernel_block_ms(64) == std::vector<u32>{128, 192});
  CHECK(gpu::kernel_block_ms(128) == std::vector<u32>{128});
  CHECK(gpu::kernel_block_ms(256) == std::vector<u32>{128});
  CHECK(gpu::kernel_block_ms(96).empty());
  CHECK(gpu::kernel_block_n(256) == 80);
  CHECK(gpu::kernel_block_n(128) == 128);
}

TEST_CASE("validate: the kernel's K/V block, given or the launch's own") {
  // A ragged causal batch at d = 256 on placeholder device addresses.
  std::vector<u32> placeholder(64);
  void* addr = placeholder.data();
  gpu::AttentionArgs a;
  a.workload.q_lens = {300, 77};
  a.workload.num_q_heads = 4;
  a.workload.num_kv_heads = 2;
  a.workload.head_dim = 256;
  a.workload.mask = Mask::Causal;
  a.workload.block_m = 128;
  a.workload.scheduler = SchedulerKind::Tile;
  a.q = a.k = a.v = a.o = addr;
  a.lse = static_cast<float*>(addr);
  a.q_row_offsets = a.kv_row_offsets = placeholder.data();
  REQUIRE(gpu::validate(a).ok);  // 0: recommended_block_n's
  for (const u32 bn : {64u, 80u}) {
    a.kernel_block_n = bn;
    CAPTURE(bn);
    CHECK(gpu::validate(a).ok);
  }
  a.kernel_block_n = 96;
  gpu::Status s = gpu::validate(a);
  CHECK_FALSE(s.ok);
  CHECK(s.message ==
        "kernel_block_n 96 is not supported by the GPU kernel at head dim 256: its K/V blocks are "
        "80 or 64 keys");
  a.workload.head_dim = 128;
  a.kernel_block_n = 64;
  s = gpu::validate(a);
  CHECK_FALSE(s.ok);
  CHECK(s.message ==
        "kernel_block_n 64 is not supported by the GPU kernel at head dim 128: its K/V blocks are "
        "128 keys");
  // split_tail runs kernel_block_n's blocks only (its pieces count them).
  a.workload.head_dim = 256;
  a.workload.q_lens = {300, 300};
  a.workload.mask = Mask::None;
  a.workload.block_n = 80;
  a.workload.scheduler = SchedulerKind::SplitTail;
  a.split_workspace = addr;
  s = gpu::validate(a);
  INFO(s.message);
  CHECK_FALSE(s.ok);
  CHECK(s.message.find("split_tail runs the kernel's K/V blocks of 80 keys at head dim 256") !=
        std::string::npos);
  a.kernel_block_n = 0;
  CHECK(gpu::recommended_block_n(a.workload) == 80);
}
