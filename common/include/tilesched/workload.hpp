// The workload description both halves exchange (host only): the attention problem, the tile
// sizes and the scheduling strategy. The simulator reads it from JSON or flags; the GPU host code
// launches from it; a trace carries it.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilesched/geometry.hpp"
#include "tilesched/names.hpp"
#include "tilesched/planned_schedulers.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/split_tail.hpp"
#include "tilesched/validate.hpp"

namespace tilesched {

// The L2 size the planned schedulers group heads by unless a workload says otherwise: 50 MiB,
// what cudaDeviceProp::l2CacheSize reports on the H100 SXM and the H200.
inline constexpr std::uint64_t kDefaultL2Bytes = 50ull << 20;
// The fewest rounds of num_ctas tiles an L2 section holds unless a workload says otherwise
// (schedule_plan.hpp's l2_sections). With one round a CTA gets one tile of each section and longest
// first balances nothing inside it. Measured on an NVIDIA H200, 2026-12-02
// (docs/schedulers.md, "Longest first, L2 sections"): at d = 256 causal, where one round's K and V (16.5 MiB at every grid
// length) already filled the 25 MB budget, two rounds made lpt_queued 0.8-1.6 % faster from seq
// 512 to 16384; three lost 6 % at seq 512. Workload files without the field read as 1, the rule
// before.
inline constexpr u32 kDefaultL2MinRounds = 2;

// split_kv's chunk unless a workload says otherwise: 8 KV blocks (1024 keys at BN = 128). A
// one-token decode of 8k keys is then 8 pieces per KV head, so two sequences of 8 KV heads already
// give 128 pieces for 132 SMs, where whole tiles would give 16; and a piece's K and V (2 x 1024 x
// d x 2 bytes, 512 KiB at d = 128) outweigh its partial O and LSE (rows x (d + 1) x 4 bytes, 2 KiB
// for 4 query heads) about 250 to 1, so the combine moves little next to the attention. A choice
// from those two ratios, not a measurement.
inline constexpr u32 kDefaultSplitKvBlocks = 8;

// The K/V block (BN, keys) the GPU kernel runs split_tail, split_kv and stream_k at, the one their
// pieces count: 80 keys at d = 256, 128 at d = 64 and 128 (gpu::kernel_block_n, which
// test_gpu_host holds to this). A split workload whose block_n differs runs in the simulator only.
constexpr u32 split_block_n(u32 head_dim) { return head_dim == 256 ? 80 : 128; }

// Query heads [first, first + count) whose rows one work tile computes.
struct TileHeads {
  u32 first = 0;
  u32 count = 1;
};

struct Workload {
  std::vector<u32> q_lens;   // query rows per sequence (ragged unless `padded`)
  std::vector<u32> kv_lens;  // keys per sequence; empty means the same as q_lens
  bool padded = false;       // homogeneous batch, laid out at b * S_max, no row offsets
  u32 num_q_heads = 32;
  u32 num_kv_heads = 8;
  u32 head_dim = 128;
  Mask mask = Mask::Causal;
  u32 block_m = 128;  // BM: query rows per tile
  u32 block_n = 128;  // BN: keys per KV block
  SchedulerKind scheduler = SchedulerKind::Tile;
  Schedule schedule = Schedule::Default;
  bool flip_prompt_idx = false;  // transient only
  u32 num_ctas = 132;            // C: the persistent schedulers' stride (tile, queued)
  // CTAs the device runs at once (SMs x CTAs per SM of the kernel, SPEC §8); 0 = the device's own
  // (the simulator takes it from its cost profile, the GPU from the occupancy API). Traces record
  // the number that ran. A transient grid launches T*H*B one-tile CTAs and a persistent grid C;
  // beyond this many they run in waves.
  static constexpr u32 kResidentFromDevice = 0;
  u32 resident_ctas = kResidentFromDevice;
  RaggedMode ragged_mode = RaggedMode::Safe;
  std::string cost_profile = "h200";  // which device's cost coefficients the simulator uses
  // Decoding (SPEC §6): new tokens per sequence (q_lens) against kv_lens keys; the schedulers
  // iterate KV heads, and a tile computes decode_tile_tokens() new tokens of one (sequence, KV
  // head) for the group of query heads sharing the KV head. A sequence of 1 to kMaxDecodeTokens
  // tokens (decode, speculative verify) is one tile per KV head; a longer one is a prefill
  // sequence of a mixed batch, in ceil(q / decode_tile_tokens()) tiles per KV head.
  bool decoding = false;
  // L2 bytes the planned schedulers (lpt, lpt_queued, planned) group heads by: a section's K and
  // V fit half of it (schedule_plan.hpp). 0: no sections, one longest-first order over the batch.
  std::uint64_t l2_bytes = kDefaultL2Bytes;
  // The fewest rounds of num_ctas tiles a section holds, even when their K and V exceed the budget.
  u32 l2_min_rounds = kDefaultL2MinRounds;
  // Paged KV cache (vLLM's and FlashAttention's layout): 0 keeps each sequence's keys in rows of
  // K and V (kv_row_offsets); otherwise K and V are [pages][page_size][kv heads][head_dim] and a
  // page table names the pages of each sequence, key j of sequence b in page
  // table[b][j / page_size] at row j % page_size. kv_lens are the sequences' cache lengths. The
  // schedulers and the attention are the same; only where keys live changes.
  u32 page_size = 0;
  static constexpr u32 kMaxPageSize = 1u << 20;
  // split_kv: KV blocks per chunk. A tile's pieces follow from its own KV length and this
  // constant only, never from its batchmates (split_schedules.hpp).
  u32 split_kv_blocks = kDefaultSplitKvBlocks;

  u32 batch_size() const { return static_cast<u32>(q_lens.size()); }
  u32 max_seq_len() const {
    return q_lens.empty() ? 0 : *std::max_element(q_lens.begin(), q_lens.end());
  }
  u32 key_len(u32 b) const { return kv_lens.empty() ? q_lens[b] : kv_lens[b]; }
  u32 group_size() const { return num_q_heads / num_kv_heads; }  // query heads per KV head
  // Decoding: the rows of the GPU kernel's decode tile at its fewest tokens, kMaxDecodeTokens for
  // each query head of a KV head's group; the kernel's tiles of block_m rows hold it when it is
  // at most block_m.
  u32 decode_tile_rows() const { return group_size() * kMaxDecodeTokens; }
  // Decoding: the new tokens a tile holds for each query head of its group (SPEC §6), the
  // largest power of two from kMaxDecodeTokens up whose rows for the whole group fit block_m: 16
  // for 8 query heads per KV head at BM 128, 32 for 4, 64 for 2, 128 for 1. Every decode
  // sequence fits one tile at any of them; a mixed batch's prefill sequence then fills a tile's
  // rows as a prefill tile does, instead of a group x 16 of them.
  u32 decode_tile_tokens() const {
    u32 tokens = kMaxDecodeTokens;
    const std::uint64_t group = group_size();
    while (group != 0 && std::uint64_t(tokens) * 2 * group <= block_m) tokens *= 2;
    return tokens;
  }

  // The scheduler's tile height and heads (SPEC §1): BM and query heads for prefill;
  // decode_tile_tokens() and KV heads for decoding, where a decode sequence's new tokens fit one
  // tile (T = 1 without a prefill sequence).
  u32 tile_shape() const { return decoding ? decode_tile_tokens() : block_m; }
  // A decoding workload whose every sequence fits one tile (no prefill sequence mixed in): every
  // work index below T * H * B is then a tile (T = 1).
  bool decode_only() const { return decoding && max_seq_len() <= kMaxDecodeTokens; }
  // A decoding workload with a prefill sequence beside its decode sequences (SPEC §6).
  bool mixed() const { return decoding && max_seq_len() > kMaxDecodeTokens; }
  u32 scheduled_heads() const { return decoding ? num_kv_heads : num_q_heads; }
  // The query heads a tile of scheduled head `head` computes: itself (prefill) or the group of
  // query heads that reads KV head `head` (decoding).
  TileHeads tile_heads(u32 head) const {
    return decoding ? TileHeads{head * group_size(), group_size()} : TileHeads{head, 1};
  }
  // The KV head a tile of scheduled head `head` reads.
  u32 tile_kv_head(u32 head) const { return decoding ? head : head / group_size(); }
  // What a tile starting at prompt_offset of sequence `prompt` processes (SPEC §7); nothing when
  // it starts at or past the sequence's end.
  TileCost tile_cost(u32 prompt, u32 prompt_offset) const {
    const u32 rows = tile_query_rows(q_lens[prompt], prompt_offset, tile_shape());
    return tilesched::tile_cost(prompt_offset, rows, q_lens[prompt], key_len(prompt), tile_shape(),
                                block_n, mask);
  }
  // KV blocks of every tile that starts inside its sequence: the split schedules' stream.
  std::uint64_t total_kv_blocks() const {
    std::uint64_t blocks = 0;
    for (u32 b = 0; b < batch_size(); ++b)
      for (u32 offset = 0; offset < q_lens[b]; offset += tile_shape())
        blocks += tile_cost(b, offset).kv_blocks;
    return blocks * scheduled_heads();
  }
  // Tiles that start inside their sequence: what every safe-mode scheduler processes.
  std::uint64_t valid_tile_count() const {
    std::uint64_t tiles = 0;
    for (u32 len : q_lens) tiles += ceil_div(len, tile_shape());
    return tiles * scheduled_heads();
  }

  // Exclusive prefix sums (B+1 entries) of the rows of Q/O and K/V, for a ragged batch's
  // RowLayout; for a padded batch they are b * S_max and b * max_key_len (the same rows its
  // RowLayout without offsets gives).
  std::vector<u32> q_row_offsets() const {
    return offsets_of([&](u32 b) { return row_span(b); });
  }
  std::vector<u32> kv_row_offsets() const {
    return offsets_of([&](u32 b) { return padded ? max_key_len() : key_len(b); });
  }
  u32 total_q_rows() const { return q_row_offsets().back(); }
  u32 total_kv_rows() const { return kv_row_offsets().back(); }
  // Elements of Q and O, of K and V, and of LSE ([rows][heads][head_dim], [rows][heads]).
  std::size_t q_elements() const { return std::size_t(total_q_rows()) * num_q_heads * head_dim; }
  std::size_t kv_elements() const { return std::size_t(total_kv_rows()) * num_kv_heads * head_dim; }
  std::size_t lse_elements() const { return std::size_t(total_q_rows()) * num_q_heads; }
  u32 max_key_len() const {
    u32 m = 0;
    for (u32 b = 0; b < batch_size(); ++b) m = std::max(m, key_len(b));
    return m;
  }

  TileMapping mapping() const { return TileMapping{tile_shape(), scheduled_heads(), schedule}; }

  // The summary the schedulers see. `q_offsets` must outlive it (ragged only; ignored if padded).
  TileSummary summary(const u32* q_offsets) const {
    return TileSummary::make(batch_size(), max_seq_len(), tile_shape(),
                             padded ? nullptr : q_offsets);
  }
  // Where the rows of Q/O and of K/V are (geometry.hpp). The offsets (from q_row_offsets() and
  // kv_row_offsets(), host or device copies) must outlive the layouts; padded batches ignore them.
  RowLayout query_layout(const u32* q_offsets) const { return summary(q_offsets).query_layout(); }
  RowLayout kv_layout(const u32* kv_offsets) const {
    return RowLayout{padded ? nullptr : kv_offsets, max_key_len()};
  }

  // validate()'s rule for the head counts (each at least 1, which validate checks first): query
  // heads a multiple of KV heads. Empty when it holds; otherwise its sentence, with `q_note` /
  // `kv_note` after each count (a caller says there where a count came from).
  std::string heads_problem(std::string_view q_note = {}, std::string_view kv_note = {}) const {
    if (num_kv_heads == 0 || num_q_heads % num_kv_heads == 0) return {};
    return fmt::format("query heads ({}{}) must be a multiple of KV heads ({}{})", num_q_heads,
                       q_note, num_kv_heads, kv_note);
  }

  // Empty when the workload is valid; otherwise one sentence naming the problem.
  std::string validate() const {
    if (q_lens.empty()) return "the batch is empty: give at least one sequence";
    if (l2_min_rounds == 0)
      return "l2_min_rounds is 0: an L2 section holds at least one round of num_ctas tiles";
    if (!kv_lens.empty() && kv_lens.size() != q_lens.size())
      return fmt::format(
          "kv_lens has {} entries but q_lens has {}: give one KV length per sequence",
          kv_lens.size(), q_lens.size());
    if (num_q_heads == 0) return "number of query heads must be at least 1";
    if (num_kv_heads == 0) return "number of KV heads must be at least 1";
    if (std::string m = heads_problem(); !m.empty()) return m;
    if (head_dim == 0 || head_dim > 1024)
      return fmt::format("head dim must be in 1..1024, got {}", head_dim);
    if (block_m == 0 || block_m > 4096)
      return fmt::format("BM must be in 1..4096, got {}", block_m);
    if (block_n == 0 || block_n > 4096)
      return fmt::format("BN must be in 1..4096, got {}", block_n);
    if (num_ctas == 0) return "number of CTAs must be at least 1";
    if (page_size > kMaxPageSize)
      return fmt::format("page size must be at most {} keys (0: no paging), got {}", kMaxPageSize,
                         page_size);
    std::uint64_t q_total = 0, kv_total = 0;
    for (u32 b = 0; b < batch_size(); ++b) {
      const u32 q = q_lens[b], k = key_len(b);
      if (q > 0 && k == 0) return fmt::format("sequence {} has {} query rows but no keys", b, q);
      if (mask == Mask::Causal && k < q)
        return fmt::format(
            "sequence {} has fewer keys ({}) than query rows ({}): a bottom-right aligned causal "
            "mask would leave rows with no keys",
            b, k, q);
      if (padded && (q != q_lens[0] || k != key_len(0)))
        return fmt::format(
            "a padded batch needs equal lengths, but sequence {} differs from sequence 0 (use a "
            "ragged batch instead)",
            b);
      q_total += q;
      kv_total += k;
    }
    if (max_seq_len() == 0) return "every sequence is empty: there is no work";
    if (decoding)
      for (u32 b = 0; b < batch_size(); ++b)
        if (q_lens[b] == 0)
          return fmt::format(
              "a decode workload has at least 1 new token per sequence (1 to decode, up to {} to "
              "verify speculated tokens, more for a prefill sequence of a mixed batch), but "
              "sequence {} has none (give the cache lengths as kv_lens and the new tokens as "
              "q_lens)",
              kMaxDecodeTokens, b);
    if (scheduler == SchedulerKind::SplitTail) {
      const std::string problem = validate_split_tail();
      if (!problem.empty()) return problem;
    }
    if (scheduler == SchedulerKind::SplitKv || scheduler == SchedulerKind::StreamK) {
      const std::string problem = validate_split_schedule();
      if (!problem.empty()) return problem;
    }
    const std::uint64_t q_rows = padded ? std::uint64_t(max_seq_len()) * batch_size() : q_total;
    const std::uint64_t kv_rows = padded ? std::uint64_t(max_key_len()) * batch_size() : kv_total;
    if (q_rows > kU32Limit || kv_rows > kU32Limit)
      return "total rows of the batch do not fit in 32 bits";
    return validate_schedule(
        ScheduleProblem{batch_size(), max_seq_len(), tile_shape(), scheduled_heads(), num_ctas});
  }

  // Pages sequence b's keys fill (paged KV cache; 0 without paging).
  u32 pages_of(u32 b) const { return page_size == 0 ? 0 : ceil_div(key_len(b), page_size); }
  // The page table's row length a paged batch needs: the most pages of any sequence.
  u32 max_pages_per_seq() const {
    u32 m = 0;
    for (u32 b = 0; b < batch_size(); ++b) m = std::max(m, pages_of(b));
    return m;
  }

  // split_tail's KV blocks per tile (every tile has the same; validate() checks it).
  u32 split_tail_tile_blocks() const { return ceil_div(key_len(0), block_n); }

 private:
  // split_kv and stream_k number KV blocks and pieces in 32 bits, and the counter runs past the
  // last piece by up to C.
  std::string validate_split_schedule() const {
    if (split_kv_blocks == 0)
      return "split_kv_blocks is 0: a split_kv chunk holds at least one KV block";
    const std::uint64_t blocks = total_kv_blocks();
    if (blocks + num_ctas > kU32Limit)
      return fmt::format(
          "{}: the batch's tiles have {} KV blocks, which with {} CTAs do not fit in 32 bits "
          "(use a larger BN)",
          to_string(scheduler), blocks, num_ctas);
    return {};
  }
  // split_tail splits KV blocks evenly, which balances only tiles of one cost.
  std::string validate_split_tail() const {
    if (decoding) return "split_tail schedules prefill tiles; decoding is not supported";
    if (mask != Mask::None)
      return "split_tail needs mask none (every tile the same cost); for causal masks use lpt or "
             "lpt_queued";
    for (u32 b = 0; b < batch_size(); ++b)
      if (q_lens[b] != q_lens[0] || key_len(b) != key_len(0))
        return fmt::format(
            "split_tail needs every sequence of one query length and one key length (every tile "
            "the same cost), but sequence {} differs from sequence 0",
            b);
    if (q_lens[0] == 0 || key_len(0) == 0) return "split_tail needs non-empty sequences";
    // Tail positions stay below P + W + C, P < C * nb.
    const std::uint64_t nb = ceil_div(key_len(0), block_n);
    if (std::uint64_t(num_ctas) * (nb + 2) > kU32Limit)
      return fmt::format("split_tail: {} CTAs x {} KV blocks per tile do not fit in 32 bits",
                         num_ctas, nb);
    return {};
  }
  u32 row_span(u32 b) const { return padded ? max_seq_len() : q_lens[b]; }
  template <class F>
  std::vector<u32> offsets_of(F span) const {
    std::vector<u32> off(q_lens.size() + 1, 0);
    for (u32 b = 0; b < batch_size(); ++b) off[b + 1] = off[b] + span(b);
    return off;
  }
};

// What a scheduler is built from besides the workload: the queued schedulers' counter and the
// arrays of the workload's schedule plan (schedule_plan.hpp), host or device copies.
struct SchedulerInputs {
  AtomicCounter counter{};
  PlanArrays plan{};
};

// split_tail's scheduler for a workload it accepts (validate()): the host's Arguments -> Params.
inline runtime::SplitTailScheduler split_tail_scheduler(const Workload& w) {
  return runtime::SplitTailScheduler(
      w.mapping(), w.num_ctas, static_cast<u32>(w.valid_tile_count()), w.split_tail_tile_blocks());
}

// Call f with the runtime scheduler a workload names. One dispatch point for the simulator, the
// GPU host code and the tool. Throws std::invalid_argument when the scheduler walks a schedule
// plan and `in` has none.
template <class F>
decltype(auto) with_scheduler(const Workload& w, const SchedulerInputs& in, F&& f) {
  const TileMapping m = w.mapping();
  const PlanArrays& p = in.plan;
  if (!p.has_arrays_for(w.scheduler))
    throw std::invalid_argument(fmt::format(
        "the {} scheduler walks a schedule plan, and none was given (build_schedule_plan)",
        to_string(w.scheduler)));
  switch (w.scheduler) {
    case SchedulerKind::Queued:
      return f(runtime::QueuedTileScheduler(m, w.num_ctas, in.counter, w.decode_only()));
    case SchedulerKind::Transient: return f(runtime::TransientScheduler(m, w.flip_prompt_idx));
    case SchedulerKind::Lpt: return f(runtime::LptScheduler(m, w.num_ctas, p.order, p.tile_count));
    case SchedulerKind::LptQueued:
      return f(runtime::LptQueuedScheduler(m, w.num_ctas, p.order, p.tile_count, in.counter));
    case SchedulerKind::Planned:
      return f(
          runtime::PlannedListScheduler(m, w.num_ctas, p.list_offsets, p.list_tiles, p.tile_count));
    case SchedulerKind::RaggedQueued:
      return f(runtime::RaggedQueuedScheduler(m, w.num_ctas, p.sequence_tiles, p.tile_count,
                                              in.counter));
    case SchedulerKind::SplitTail: return f(split_tail_scheduler(w));
    case SchedulerKind::SplitKv:
      return f(runtime::SplitKvScheduler(m, w.num_ctas, p.tile_count, p.split, w.split_kv_blocks,
                                         in.counter));
    case SchedulerKind::StreamK:
      return f(runtime::StreamKScheduler(m, w.num_ctas, p.tile_count, p.split));
    case SchedulerKind::Tile: break;
  }
  return f(runtime::TileScheduler(m, w.num_ctas, w.ragged_mode));
}

// The seed's schedulers need nothing but a counter.
template <class F>
decltype(auto) with_scheduler(const Workload& w, AtomicCounter counter, F&& f) {
  return with_scheduler(w, SchedulerInputs{counter, PlanArrays{}}, std::forward<F>(f));
}

// A short label such as "tile/prompt_rotate" for tables and charts. The planned orders (lpt,
// lpt_queued, planned) and the split schedules ignore the schedule, so their labels do not name
// one.
inline std::string strategy_name(const Workload& w) {
  switch (w.scheduler) {
    case SchedulerKind::Transient:
      return fmt::format("{}{}", to_string(w.scheduler), w.flip_prompt_idx ? "/flip" : "");
    case SchedulerKind::Lpt:
    case SchedulerKind::LptQueued:
    case SchedulerKind::Planned:
    case SchedulerKind::SplitKv:
    case SchedulerKind::StreamK: return to_string(w.scheduler);
    default: break;
  }
  const bool faithful = w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful;
  return fmt::format("{}/{}{}", to_string(w.scheduler), to_string(w.schedule),
                     faithful ? "/faithful" : "");
}

}  // namespace tilesched
