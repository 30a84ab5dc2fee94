// Each kind of bad input gets its own message (the text is what a user reads, so it is tested).
#include <doctest/doctest.h>

#include <string>

#include "tilesched/validate.hpp"
#include "tilesched/workload.hpp"

using namespace tilesched;

namespace {

Workload good() {
  Workload w;
  w.q_lens = {300, 129, 1};
  w.num_q_heads = 8;
  w.num_kv_heads = 2;
  return w;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("a sensible workload validates") {
  CHECK(good().validate().empty());
  Workload padded = good();
  padded.q_lens = {512, 512};
  padded.padded = true;
  CHECK(padded.validate().empty());
  Workload with_empty = good();
  with_empty.q_lens = {0, 17, 0};
  CHECK(with_empty.validate().empty());
}

TEST_CASE("schedule problems: zero sizes") {
  CHECK(validate_schedule({0, 100, 128, 4, 132}) == "batch size must be at least 1");
  CHECK(contains(validate_schedule({1, 0, 128, 4, 132}), "longest sequence has length 0"));
  CHECK(validate_schedule({1, 100, 0, 4, 132}) == "tile shape (BM) must be at least 1");
  CHECK(validate_schedule({1, 100, 128, 0, 132}) == "number of heads must be at least 1");
  CHECK(validate_schedule({1, 100, 128, 4, 0}) == "number of CTAs must be at least 1");
}

TEST_CASE("schedule problems: 32-bit overflow of N and of idx + C") {
  // N = T*H*B = 2^20 * 64 * 64 = 2^32: one past the limit.
  CHECK(contains(validate_schedule({64, 1u << 20, 1, 64, 132}), "does not fit in 32 bits"));
  CHECK(contains(validate_schedule({64, 1u << 20, 1, 64, 132}), "N = T*H*B"));
  // N = 2^32 - 100 fits, but stepping by C = 132 would wrap.
  const std::uint64_t n = (1ull << 32) - 100;
  CHECK(contains(validate_schedule({1, n, 1, 1, 132}), "N + num_ctas"));
  CHECK(validate_schedule({1, n, 1, 1, 99}).empty());
  // A value that itself exceeds 32 bits.
  CHECK(validate_schedule({1ull << 33, 1, 1, 1, 1}) == "a problem size does not fit in 32 bits");
}

TEST_CASE("row offsets: count, start, monotone, range") {
  CHECK(contains(validate_row_offsets({0}), "need at least 2 entries"));
  CHECK(contains(validate_row_offsets({5, 10}), "must start at 0, got 5"));
  CHECK(contains(validate_row_offsets({0, 10, 7}),
                 "not monotone: entry 2 (7) is below entry 1 (10)"));
  CHECK(contains(validate_row_offsets({0, 1ull << 32}), "entry 1 does not fit in 32 bits"));
  CHECK(validate_row_offsets({0, 0, 10, 10}).empty());
  CHECK(lengths_from_offsets({0, 0, 10, 13}) == std::vector<u32>{0, 10, 3});
}

TEST_CASE("workload problems with the shapes each name themselves") {
  Workload w = good();
  w.q_lens.clear();
  CHECK(contains(w.validate(), "batch is empty"));

  w = good();
  w.kv_lens = {1, 2};
  CHECK(contains(w.validate(), "kv_lens has 2 entries but q_lens has 3"));

  w = good();
  w.num_q_heads = 6;
  w.num_kv_heads = 4;
  CHECK(w.validate() == "query heads (6) must be a multiple of KV heads (4)");

  w = good();
  w.num_kv_heads = 0;
  CHECK(w.validate() == "number of KV heads must be at least 1");

  w = good();
  w.num_q_heads = 0;
  CHECK(w.validate() == "number of query heads must be at least 1");

  w = good();
  w.head_dim = 0;
  CHECK(contains(w.validate(), "head dim must be in 1..1024"));

  w = good();
  w.block_m = 0;
  CHECK(contains(w.validate(), "BM must be in 1..4096"));

  w = good();
  w.block_n = 5000;
  CHECK(contains(w.validate(), "BN must be in 1..4096, got 5000"));

  w = good();
  w.num_ctas = 0;
  CHECK(w.validate() == "number of CTAs must be at least 1");

  w = good();
  w.resident_ctas = Workload::kResidentFromDevice;  // 0: the device's own, not an error
  CHECK(w.validate().empty());
}

TEST_CASE("workload problems with the sequences each name themselves") {
  Workload w = good();
  w.kv_lens = {300, 0, 1};
  CHECK(contains(w.validate(), "sequence 1 has 129 query rows but no keys"));

  w = good();
  w.kv_lens = {300, 100, 1};
  CHECK(contains(w.validate(), "sequence 1 has fewer keys (100) than query rows (129)"));
  w.mask = Mask::None;  // without a causal mask, fewer keys than queries is fine
  CHECK(w.validate().empty());

  w = good();
  w.padded = true;
  CHECK(contains(w.validate(), "a padded batch needs equal lengths"));

  w = good();
  w.q_lens = {0, 0};
  CHECK(contains(w.validate(), "every sequence is empty"));

  w = good();
  w.q_lens = {4000000000u, 4000000000u};
  w.mask = Mask::None;
  CHECK(contains(w.validate(), "do not fit in 32 bits"));
}

TEST_CASE("row offsets derived from a workload") {
  Workload w = good();
  CHECK(w.q_row_offsets() == std::vector<u32>{0, 300, 429, 430});
  w.kv_lens = {310, 129, 5};
  CHECK(w.kv_row_offsets() == std::vector<u32>{0, 310, 439, 444});
  CHECK(w.max_key_len() == 310);
  w.q_lens = {64, 64};
  w.kv_lens = {};
  w.padded = true;
  CHECK(w.q_row_offsets() == std::vector<u32>{0, 64, 128});
  CHECK(w.summary(nullptr).row_offsets == nullptr);
}

TEST_CASE("with_scheduler dispatches on the workload's scheduler kind") {
  Workload w = good();
  u32 counter = 0;
  for (auto kind : {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::Transient}) {
    w.scheduler = kind;
    const SchedulerKind seen =
        with_scheduler(w, AtomicCounter{&counter}, [](const auto& s) { return s.kind; });
    CHECK(seen == kind);
  }
  w.scheduler = SchedulerKind::Tile;
  w.schedule = Schedule::PromptRotate;
  w.ragged_mode = RaggedMode::Faithful;
  CHECK(strategy_name(w) == "tile/prompt_rotate/faithful");
  w.scheduler = SchedulerKind::Transient;
  w.flip_prompt_idx = true;
  CHECK(strategy_name(w) == "transient/flip");
}
