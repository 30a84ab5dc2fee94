// Attention on the CPU, tile by tile as a trace says, plus a naive reference to check it.
//
// Layouts (row-major, fp32 holding bf16-rounded values):
//   Q, O: [total_q_rows][num_q_heads][head_dim]    LSE: [total_q_rows][num_q_heads]
//   K, V: [total_kv_rows][num_kv_heads][head_dim]
// Where each sequence's rows are: Workload::query_layout()/kv_layout() (common/geometry.hpp;
// padded: sequence b at b*S_max, its keys at b*max_key_len). Causal mask is bottom-right aligned:
// query row i of a sequence sees keys j <= i + kv_len - q_len. GQA: query head h reads KV head h /
// group_size(). Decoding (SPEC §6): an event's head is a KV head, and its tile computes the new
// tokens' rows of its sequence (1 to 16, causal among themselves) for each query head of that KV
// head's group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim {

// How far a long computation has come: (done, total), called from worker threads.
using AttentionProgress = std::function<void(std::size_t done, std::size_t total)>;

struct AttentionInputs {
  std::vector<float> q, k, v;  // bf16-rounded values, layouts above
};

// fp32 -> bf16 round to nearest even (NaN stays NaN), and back.
std::uint16_t float_to_bf16_bits(float x);
float bf16_bits_to_float(std::uint16_t b);
inline float round_to_bf16(float x) {
  return bf16_bits_to_float(float_to_bf16_bits(x));
}
// The raw bf16 bits of a buffer, for uploading the exact same inputs to the GPU, and back.
std::vector<std::uint16_t> to_bf16_bits(const std::vector<float>& values);
std::vector<float> from_bf16_bits(const std::vector<std::uint16_t>& bits);

// Uniform values in [-1, 1], rounded to bf16, from a splitmix64 stream: identical on every platform
// for one seed (q first, then k, then v).
AttentionInputs make_inputs(const Workload& w, std::uint64_t seed);

// One coverage problem: `row_count` consecutive rows from `row`, for query head `head`.
struct CoverageProblem {
  enum class Kind {
    DoubleWrite,      // a second tile wrote rows another tile (or itself) already wrote
    Gap,              // no tile wrote these rows (the tile fields name the tile that owns them)
    OutsideSequence,  // a tile wrote rows of another sequence (faithful mode past the end)
    PastEnd,          // a tile would have written past the end of the output buffer (clamped)
    SplitKv,          // a split tile's pieces do not cover its KV blocks exactly once (its rows
                      // are left unwritten)
  };
  Kind kind = Kind::Gap;
  u32 row = 0;        // first query row (packed/padded row index)
  u32 row_count = 1;  // consecutive rows with the same problem from the same tile
  u32 head = 0;
  // The tile (prompt, head, prompt_offset) and the CTA that wrote; cta = -1 for a gap.
  u32 prompt_idx = 0;
  u32 tile_head = 0;
  u32 prompt_offset = 0;
  std::int64_t cta = -1;
  std::string message() const;  // one sentence naming all of the above (describe.hpp's tile)
};

struct AttentionResult {
  std::vector<float> o;    // like Q; NaN where no tile wrote
  std::vector<float> lse;  // [total_q_rows][num_q_heads], log(sum_j exp(scale * s_j)), natural log
  std::vector<std::uint32_t> row_writes;  // per (row, head): how many tiles wrote it
  std::vector<CoverageProblem> problems;  // empty when every row was written exactly once
};

// For every event of `trace` in its CTA's order: the blockwise online softmax over BN-wide KV
// blocks in fp32 (running max and sum), writing the tile's rows of O and LSE. The pieces of a
// split tile (split_tail, split_kv, stream_k: events of one index, each over part of its KV
// blocks) each keep their partial O and LSE (PartialAttention's); once all are computed they are
// merged in KV-block order (merge_partials' formula) and the tile's rows written once (a tile whose
// pieces miss or repeat a block is reported, SplitKv, and left unwritten). Output starts as NaN and
// every write is counted. A faithful-mode tile past its sequence writes query_rows rows from its
// first row (over the next sequence; rows past the buffer are clamped and reported), so the
// overwrite shows up in `problems` and as attention error. softmax_scale <= 0 means 1/sqrt(d).
// Tiles run on `num_threads` threads (0: hardware concurrency) when they write disjoint rows;
// when any row is written twice (or in faithful mode) they run one at a time in the order their
// results would land on the GPU, by (end_us, cta, step), so the last writer wins.
// `progress`, when given, is told the tiles done so far and the total, from any of the threads.
AttentionResult tiled_attention(const Workload& w, const AttentionInputs& in, const Trace& trace,
                                float softmax_scale = 0.f, unsigned num_threads = 0,
                                const AttentionProgress& progress = {});

// Keys [begin, end) of one sequence, counted from its first key.
struct KvRange {
  u32 begin = 0;
  u32 end = 0;
};

// The attention of every row over part of its keys: what one GPU of a context-parallel engine
// holds before the merge (docs/context-parallel.md). Per (row, query head):
//   lse = log(sum_j exp(scale * s_j)), natural log, over the keys j of the range the row sees
//         (the causal mask still applies, by the key's position in the whole sequence);
//         -inf when it sees none of them;
//   o   = sum_j exp(scale * s_j - lse) v_j over the same keys, fp32: the range's own softmax
//         average, not divided by the whole row's sum (merge_partials weighs it by exp(lse));
//         0 when it sees none.
// Carrying o normalised over its own range, with lse, keeps every value finite: the
// unnormalised sum exp(lse) * o overflows fp32 from scores of about 88 on.
struct PartialAttention {
  std::vector<float> o;    // like Q
  std::vector<float> lse;  // [total_q_rows][num_q_heads]
};

// Every row of the workload over the keys [ranges[b].begin, ranges[b].end) of its sequence b (one
// range per sequence, end at most its key length; an empty range gives O 0 and LSE -inf): the
// blockwise online softmax of tiled_attention in fp32, in BN-wide blocks from the range's first
// key. Throws std::invalid_argument naming a sequence whose range does not fit it.
PartialAttention partial_attention(const Workload& w, const AttentionInputs& in,
                                   const std::vector<KvRange>& ranges, float softmax_scale = 0.f,
                                   unsigned num_threads = 0);

// Merges partial results of the same rows over disjoint key ranges, in the order given:
// lse = log(sum_i exp(lse_i)), o = sum_i exp(lse_i - lse) o_i (shifted by the largest lse_i), the
// combine the split schedules use for a tile's pieces. Throws std::invalid_argument when the
// parts' sizes differ or do not hold head_dim values per LSE entry.
PartialAttention merge_partials(const std::vector<PartialAttention>& parts, u32 head_dim);

// Naive full softmax per (row, head) in double, over all of a row's visible keys at once (rows
// are taken in blocks so the scores are one matrix product); every row written once (no
// problems). Runs on all hardware threads; `progress` is told the (row, head) outputs done.
AttentionResult reference_attention(const Workload& w, const AttentionInputs& in,
                                    float softmax_scale = 0.f,
                                    const AttentionProgress& progress = {});

// ||a - b|| / ||b|| (2-norm) over the entries where b is finite. If a is non-finite where b is
// finite the result is NaN, so a gap can never look like agreement. 0 when ||b|| = 0 and a == b.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

// How far one tile's output is from another computation of it.
struct TileError {
  double o_rel = 0;      // max over the tile's rows of ||o_a - o_b|| / ||o_b|| (row 2-norms)
  double lse_rel = 0;    // max over the tile's rows of |lse_a - lse_b| / max(|lse_b|, 1)
  bool has_nan = false;  // a NaN/inf in a where b is finite (unwritten or broken rows)
  u32 rows = 0;          // rows compared (the tile's rows clamped to the buffer)
};

// Compares the rows the event's tile owns (first row from the workload's layout, query_rows rows
// clamped to the buffer) for the query heads it computes (Workload::tile_heads: the event's head,
// or a decoding tile's group).
TileError tile_error(const Workload& w, const TraceEvent& e, const std::vector<float>& o_a,
                     const std::vector<float>& lse_a, const std::vector<float>& o_b,
                     const std::vector<float>& lse_b);

// First query row of an event's tile in the Q/O layout.
u32 event_first_row(const Workload& w, const TraceEvent& e);

}  // namespace tilesched::sim
