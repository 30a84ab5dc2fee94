// The workload description both halves exchange (host only): the attention problem, the tile
// sizes and the scheduling strategy. The simulator reads it from JSON or flags; the GPU host code
// launches from it; a trace carries it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "tilesched/cost.hpp"
#include "tilesched/names.hpp"
#include "tilesched/scheduler.hpp"
#include "tilesched/validate.hpp"

namespace tilesched {

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
  u32 num_ctas = 132;
  RaggedMode ragged_mode = RaggedMode::Safe;
  std::string cost_profile = "h200";  // which device's cost coefficients the simulator uses

  u32 batch_size() const { return static_cast<u32>(q_lens.size()); }
  u32 max_seq_len() const {
    return q_lens.empty() ? 0 : *std::max_element(q_lens.begin(), q_lens.end());
  }
  u32 key_len(u32 b) const { return kv_lens.empty() ? q_lens[b] : kv_lens[b]; }
  u32 group_size() const { return num_q_heads / num_kv_heads; }  // query heads per KV head

  // Exclusive prefix sums (B+1 entries). Padded batches use b * S_max for every sequence.
  std::vector<u32> q_row_offsets() const {
    return offsets_of([&](u32 b) { return row_span(b); });
  }
  std::vector<u32> kv_row_offsets() const {
    return offsets_of([&](u32 b) { return padded ? max_key_len() : key_len(b); });
  }
  u32 total_q_rows() const { return q_row_offsets().back(); }
  u32 total_kv_rows() const { return kv_row_offsets().back(); }
  u32 max_key_len() const {
    u32 m = 0;
    for (u32 b = 0; b < batch_size(); ++b) m = std::max(m, key_len(b));
    return m;
  }

  TileMapping mapping() const { return TileMapping{block_m, num_q_heads, schedule}; }

  // The summary the schedulers see. `q_offsets` must outlive it (ragged only; ignored if padded).
  TileSummary summary(const u32* q_offsets) const {
    return TileSummary::make(batch_size(), max_seq_len(), block_m, padded ? nullptr : q_offsets);
  }

  // Empty when the workload is valid; otherwise one sentence naming the problem.
  std::string validate() const {
    if (q_lens.empty()) return "the batch is empty: give at least one sequence";
    if (!kv_lens.empty() && kv_lens.size() != q_lens.size())
      return "kv_lens has " + std::to_string(kv_lens.size()) + " entries but q_lens has " +
             std::to_string(q_lens.size()) + ": give one KV length per sequence";
    if (num_q_heads == 0) return "number of query heads must be at least 1";
    if (num_kv_heads == 0) return "number of KV heads must be at least 1";
    if (num_q_heads % num_kv_heads != 0)
      return "query heads (" + std::to_string(num_q_heads) + ") must be a multiple of KV heads (" +
             std::to_string(num_kv_heads) + ")";
    if (head_dim == 0 || head_dim > 1024)
      return "head dim must be in 1..1024, got " + std::to_string(head_dim);
    if (block_m == 0 || block_m > 4096)
      return "BM must be in 1..4096, got " + std::to_string(block_m);
    if (block_n == 0 || block_n > 4096)
      return "BN must be in 1..4096, got " + std::to_string(block_n);
    if (num_ctas == 0) return "number of CTAs must be at least 1";
    std::uint64_t q_total = 0, kv_total = 0;
    for (u32 b = 0; b < batch_size(); ++b) {
      const u32 q = q_lens[b], k = key_len(b);
      if (q > 0 && k == 0)
        return "sequence " + std::to_string(b) + " has " + std::to_string(q) +
               " query rows but no keys";
      if (mask == Mask::Causal && k < q)
        return "sequence " + std::to_string(b) + " has fewer keys (" + std::to_string(k) +
               ") than query rows (" + std::to_string(q) +
               "): a bottom-right aligned causal mask would leave rows with no keys";
      if (padded && (q != q_lens[0] || k != key_len(0)))
        return "a padded batch needs equal lengths, but sequence " + std::to_string(b) +
               " differs from sequence 0 (use a ragged batch instead)";
      q_total += q;
      kv_total += k;
    }
    if (max_seq_len() == 0) return "every sequence is empty: there is no work";
    const std::uint64_t q_rows = padded ? std::uint64_t(max_seq_len()) * batch_size() : q_total;
    const std::uint64_t kv_rows = padded ? std::uint64_t(max_key_len()) * batch_size() : kv_total;
    if (q_rows > kU32Limit || kv_rows > kU32Limit)
      return "total rows of the batch do not fit in 32 bits";
    return validate_schedule(
        ScheduleProblem{batch_size(), max_seq_len(), block_m, num_q_heads, num_ctas});
  }

 private:
  u32 row_span(u32 b) const { return padded ? max_seq_len() : q_lens[b]; }
  template <class F>
  std::vector<u32> offsets_of(F span) const {
    std::vector<u32> off(q_lens.size() + 1, 0);
    for (u32 b = 0; b < batch_size(); ++b) off[b + 1] = off[b] + span(b);
    return off;
  }
};

// Call f with the runtime scheduler a workload names. One dispatch point for the simulator, the
// GPU host code and the tool. `counter` is used by the queued scheduler only.
template <class F>
decltype(auto) with_scheduler(const Workload& w, AtomicCounter counter, F&& f) {
  const TileMapping m = w.mapping();
  switch (w.scheduler) {
    case SchedulerKind::Queued: return f(runtime::QueuedTileScheduler(m, w.num_ctas, counter));
    case SchedulerKind::Transient: return f(runtime::TransientScheduler(m, w.flip_prompt_idx));
    case SchedulerKind::Tile: break;
  }
  return f(runtime::TileScheduler(m, w.num_ctas, w.ragged_mode));
}

// A short label such as "tile/prompt_rotate" for tables and charts.
inline std::string strategy_name(const Workload& w) {
  std::string s = to_string(w.scheduler);
  if (w.scheduler == SchedulerKind::Transient) return s + (w.flip_prompt_idx ? "/flip" : "");
  s += std::string("/") + to_string(w.schedule);
  if (w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful) s += "/faithful";
  return s;
}

}  // namespace tilesched
