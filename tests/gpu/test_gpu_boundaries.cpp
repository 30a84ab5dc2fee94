// Sequence boundaries under the TMA (label gpu, part of test_gpu). The kernel loads whole boxes:
// BM query rows and BN keys from a tile's first row, across the end of its sequence. What lies
// past the end belongs to the next sequence (or to no one), so
//   - keys at or past kv_len must never enter the softmax: the next sequence's K and V are made
//     huge here, so a leaked key would dominate the scores and drag O towards 1000;
//   - a partial tile must store only its own rows: O and LSE rows past the last sequence, inside
//     the allocation but outside the tensor, hold a sentinel that must survive.
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu_check.hpp"
#include "tilesched/sim/attention.hpp"

using namespace tilesched;

namespace {

Workload two_sequences(u32 d, u32 bm, Mask mask) {
  Workload w;
  // Sequence 0 ends inside the first tile and inside every K/V block size of the kernel;
  // sequence 1 follows it directly in Q, K and V.
  w.q_lens = {100, 200};
  w.kv_lens = mask == Mask::Causal ? std::vector<u32>{130, 200} : std::vector<u32>{100, 260};
  w.num_q_heads = 2;
  w.num_kv_heads = 1;
  w.head_dim = d;
  w.mask = mask;
  w.block_n = 128;
  w.scheduler = SchedulerKind::Tile;
  w.num_ctas = 3;
  w.block_m = bm;
  return w;
}

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { REQUIRE(cudaMalloc(&ptr, bytes) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

TEST_CASE("keys past a sequence's end never enter its softmax (next sequence's K/V huge)") {
  for (u32 d : {64u, 128u, 256u})
    for (const u32 bm : tilesched::gpu::kernel_block_ms(d))
      for (const u32 kernel_bn : tilesched::gpu::kernel_block_ns(d))
        for (Mask mask : {Mask::None, Mask::Causal}) {
          const Workload w = two_sequences(d, bm, mask);
          sim::AttentionInputs in = sim::make_inputs(w, 7000 + d);
          const std::vector<u32> kv_off = w.kv_row_offsets();
          const std::size_t kv_row = std::size_t(w.num_kv_heads) * d;
          for (std::size_t i = kv_off[1] * kv_row; i < kv_off[2] * kv_row; ++i) {
            in.k[i] = 8.f;
            in.v[i] = 1000.f;
          }
          const auto r = tilesched::gpu_test::check_workload(w, in, false, kernel_bn);
          INFO(tilesched::gpu_test::describe(w, kernel_bn));
          for (const auto& f : r.failures) FAIL_CHECK(f);
          CHECK(r.failures.empty());
          CHECK(r.tiles == 2 * (1 + 2));  // heads x (one tile of sequence 0, two of sequence 1)
        }
}

// A warpgroup whose rows see none of its tile's first K/V block past the block's first keys (a
// causal diagonal or the key tail inside the block) may run that block narrow (NarrowFirst,
// docs/gpu-kernel.md): its QK^T and softmax over those keys only. Lengths here put the last visible
// key of a warpgroup's rows just below, at and just past the narrow edge (BN / 2 rounded up to 16
// keys), with and without a causal diagonal shift; every key in the upper half of its block
// carries V = 50, so a visible key dropped or an invisible one kept moves a row's O far past the
// check's tolerance.
TEST_CASE("a warpgroup's first K/V block: keys at the narrow edge count exactly when visible") {
  for (u32 d : {64u, 128u, 256u})
    for (const u32 bm : tilesched::gpu::kernel_block_ms(d))
      for (const u32 bn : tilesched::gpu::kernel_block_ns(d))
        for (Mask mask : {Mask::Causal, Mask::None}) {
          const u32 edge = (bn / 2 + 15) / 16 * 16;
          Workload w;
          w.head_dim = d;
          w.block_m = bm;
          w.block_n = bn;
          w.num_q_heads = 2;
          w.num_kv_heads = 1;
          w.mask = mask;
          w.scheduler = SchedulerKind::Tile;
          w.num_ctas = 3;
          if (mask == Mask::Causal) {
            for (u32 len : {edge - 1, edge, edge + 1, bn + edge - 1, bn + edge, bn + edge + 1,
                            bm + edge, 2 * bn + edge + 1}) {
              w.q_lens.push_back(len);
              w.kv_lens.push_back(len);
            }
            for (u32 shift :
                 {edge - 1, edge, edge + 1}) {  // bottom-right: rows see `shift` more keys
              w.q_lens.push_back(100);
              w.kv_lens.push_back(100 + shift);
            }
          } else {
            for (u32 kv : {bn + 1, bn + edge - 1, bn + edge, bn + edge + 1, 2 * bn + edge}) {
              w.q_lens.push_back(70);
              w.kv_lens.push_back(kv);
            }
          }
          REQUIRE(w.validate().empty());
          sim::AttentionInputs in = sim::make_inputs(w, 9000 + d + bm);
          const std::vector<u32> kv_off = w.kv_row_offsets();
          const std::size_t kv_row = std::size_t(w.num_kv_heads) * d;
          for (std::size_t s = 0; s + 1 < kv_off.size(); ++s)
            for (u32 key = 0; kv_off[s] + key < kv_off[s + 1]; ++key)
              if (key % bn >= bn / 2)
                for (std::size_t i = 0; i < kv_row; ++i)
                  in.v[(kv_off[s] + key) * kv_row + i] = 50.f;
          const auto r = tilesched::gpu_test::check_workload(w, in, false, bn);
          INFO(tilesched::gpu_test::describe(w, bn));
          for (const auto& f : r.failures) FAIL_CHECK(f);
          CHECK(r.failures.empty());
          CHECK(r.tiles > 0);
        }
}

namespace {

struct RowCounts {
  std::size_t owned_unwritten = 0;  // O or LSE entries of the sequence's rows left unwritten
  std::size_t foreign_written = 0;  // entries past the sequence's rows that were overwritten
};

constexpr std::size_t kAllocatedRows = 256;  // at least any kernel's whole tile box (BM rows)

// One 100-row sequence in buffers of kAllocatedRows rows: rows past it hold 1000s in Q, K and V and
// a sentinel in O and LSE. Runs the kernel with K/V blocks of kernel_block_n keys and counts what
// it wrote where.
RowCounts run_partial_tile(const Workload& w, u32 kernel_block_n) {
  const u32 d = w.head_dim;
  const sim::AttentionInputs in = sim::make_inputs(w, 8000 + d);
  std::vector<std::uint16_t> qkv(kAllocatedRows * d, sim::float_to_bf16_bits(1000.f));
  DeviceBuffer q(qkv.size() * 2), k(qkv.size() * 2), v(qkv.size() * 2);
  DeviceBuffer o(kAllocatedRows * d * 2), lse(kAllocatedRows * sizeof(float));
  const auto upload = [&](DeviceBuffer& buf, const std::vector<float>& values) {
    std::vector<std::uint16_t> bits = qkv;
    const std::vector<std::uint16_t> used = sim::to_bf16_bits(values);
    std::memcpy(bits.data(), used.data(), used.size() * 2);
    REQUIRE(cudaMemcpy(buf.ptr, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice) ==
            cudaSuccess);
  };
  upload(q, in.q);
  upload(k, in.k);
  upload(v, in.v);
  REQUIRE(cudaMemset(o.ptr, 0x7f, kAllocatedRows * d * 2) == cudaSuccess);
  REQUIRE(cudaMemset(lse.ptr, 0x7f, kAllocatedRows * sizeof(float)) == cudaSuccess);
  const u32 offsets[2] = {0, 100};
  DeviceBuffer off(sizeof offsets);
  REQUIRE(cudaMemcpy(off.ptr, offsets, sizeof offsets, cudaMemcpyHostToDevice) == cudaSuccess);

  gpu::AttentionArgs a;
  a.workload = w;
  a.q = q.ptr;
  a.k = k.ptr;
  a.v = v.ptr;
  a.o = o.ptr;
  a.lse = static_cast<float*>(lse.ptr);
  a.q_row_offsets = static_cast<const u32*>(off.ptr);
  a.kv_row_offsets = static_cast<const u32*>(off.ptr);
  a.kernel_block_n = kernel_block_n;
  const gpu::Status s = gpu::attention_forward(a);
  REQUIRE_MESSAGE(s.ok, s.message);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  std::vector<std::uint16_t> o_bits(kAllocatedRows * d);
  std::vector<std::uint32_t> lse_bits(kAllocatedRows);
  REQUIRE(cudaMemcpy(o_bits.data(), o.ptr, o_bits.size() * 2, cudaMemcpyDeviceToHost) ==
          cudaSuccess);
  REQUIRE(cudaMemcpy(lse_bits.data(), lse.ptr, lse_bits.size() * 4, cudaMemcpyDeviceToHost) ==
          cudaSuccess);
  RowCounts counts;
  for (std::size_t row = 0; row < kAllocatedRows; ++row) {
    const bool owned = row < 100;
    for (std::size_t c = 0; c < d; ++c) {
      const bool sentinel = o_bits[row * d + c] == 0x7f7f;
      counts.owned_unwritten += owned && sentinel;
      counts.foreign_written += !owned && !sentinel;
    }
    const bool lse_sentinel = lse_bits[row] == 0x7f7f7f7fu;
    counts.owned_unwritten += owned && lse_sentinel;
    counts.foreign_written += !owned && !lse_sentinel;
  }
  return counts;
}

}  // namespace

TEST_CASE("a partial tile stores only its own rows (sentinel past the last sequence survives)") {
  for (u32 d : {64u, 128u, 256u})
    for (const u32 bm : tilesched::gpu::kernel_block_ms(d))
      for (const u32 kernel_bn : tilesched::gpu::kernel_block_ns(d))
        for (Mask mask : {Mask::None, Mask::Causal}) {
          Workload w;
          w.block_m = bm;
          w.q_lens = {100};
          w.num_q_heads = 1;
          w.num_kv_heads = 1;
          w.head_dim = d;
          w.mask = mask;
          w.scheduler = SchedulerKind::Tile;
          w.num_ctas = 1;
          REQUIRE(w.validate().empty());
          REQUIRE(bm <= kAllocatedRows);
          const RowCounts counts = run_partial_tile(w, kernel_bn);
          INFO("d ", d, " BM ", bm, " kernel BN ", kernel_bn, " mask ", to_string(mask));
          CHECK(counts.owned_unwritten == 0);
          CHECK(counts.foreign_written == 0);
        }
}
