#include "tilesched/sim/attention.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "tilesched/geometry.hpp"
#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/describe.hpp"
#include "tilesched/splitmix64.hpp"

namespace tilesched::sim {

namespace {

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowsView = Eigen::Map<const MatrixRM, Eigen::Unaligned, Eigen::OuterStride<>>;
using RowsView = Eigen::Map<MatrixRM, Eigen::Unaligned, Eigen::OuterStride<>>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Where things live in the buffers of one workload (the row layouts of common/geometry.hpp).
struct Layout {
  std::vector<u32> q_off, kv_off;  // B+1 row offsets (a ragged batch's layouts point at them)
  RowLayout queries, keys;
  std::size_t total_q = 0;
  u32 hq = 0, hk = 0, d = 0, group = 1;

  explicit Layout(const Workload& w)
      : q_off(w.q_row_offsets()),
        kv_off(w.kv_row_offsets()),
        queries(w.query_layout(q_off.data())),
        keys(w.kv_layout(kv_off.data())),
        total_q(q_off.back()),
        hq(w.num_q_heads),
        hk(w.num_kv_heads),
        d(w.head_dim),
        group(w.group_size()) {}
  Layout(const Layout&) = delete;  // the layouts point into this object's vectors
  Layout& operator=(const Layout&) = delete;

  // `rows` query rows from `row` for query head h, as a rows x d matrix over the buffer.
  ConstRowsView q_rows(const float* q, std::size_t row, u32 rows, u32 h) const {
    return ConstRowsView(q + (row * hq + h) * d, rows, d, Eigen::OuterStride<>(hq * d));
  }
  RowsView o_rows(float* o, std::size_t row, u32 rows, u32 h) const {
    return RowsView(o + (row * hq + h) * d, rows, d, Eigen::OuterStride<>(hq * d));
  }
  ConstRowsView kv_rows(const float* kv, std::size_t row, u32 rows, u32 kv_head) const {
    return ConstRowsView(kv + (row * hk + kv_head) * d, rows, d, Eigen::OuterStride<>(hk * d));
  }
};

// O and LSE all NaN, no row written yet.
AttentionResult unwritten_result(const Workload& w) {
  AttentionResult out;
  out.o.assign(w.q_elements(), kNaN);
  out.lse.assign(w.lse_elements(), kNaN);
  out.row_writes.assign(w.lse_elements(), 0);
  return out;
}

float softmax_scale_for(const Workload& w, float scale) {
  return scale > 0 ? scale : 1.0f / std::sqrt(float(w.head_dim));
}

// Runs f(i) for i in [0, n) on up to `threads` threads, handing out indices one at a time (tiles
// differ a lot in cost under a causal mask, so static chunks would leave threads idle).
template <class F>
void parallel_for(std::size_t n, unsigned threads, F&& f) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, n));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i, 0u);
    return;
  }
  std::atomic<std::size_t> next{0};
  auto worker = [&](unsigned id) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) f(i, id);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
}

unsigned thread_count(unsigned requested) {
  return requested ? requested : std::max(1u, std::thread::hardware_concurrency());
}

// Scratch space of one thread: a tile's scores, accumulator and softmax state.
struct Workspace {
  MatrixRM scores;  // BM x BN: S, then P in place
  MatrixRM acc;     // BM x d: unnormalised O
  Eigen::VectorXf row_max, row_sum, rescale, shift;

  Workspace(u32 bm, u32 bn, u32 d)
      : scores(bm, bn), acc(bm, d), row_max(bm), row_sum(bm), rescale(bm), shift(bm) {}
};

// At most BM rows of one tile: `rows` query rows from buffer row `first_row`, at positions
// first_pos, first_pos + 1, ... of sequence `prompt`, for query head `head`.
struct TilePiece {
  std::size_t first_row = 0;
  u32 rows = 0;
  u32 first_pos = 0;
  u32 prompt = 0;
  u32 head = 0;
};

// Sets the scores of keys a row of the piece does not see to -inf, in the BN-wide block of `n`
// keys from kv0. Only blocks that cross some row's diagonal need it.
template <class Scores>
void mask_block(Scores& S, const TilePiece& p, u32 q_len, u32 kv_len, u32 kv0, u32 n, Mask mask) {
  if (kv0 + n <= visible_key_end(p.first_pos, 1, q_len, kv_len, mask)) return;
  for (u32 r = 0; r < p.rows; ++r) {
    const std::int64_t visible =  // keys of this block row r sees
        std::int64_t(visible_key_end(p.first_pos + r, 1, q_len, kv_len, mask)) - kv0;
    if (visible < std::int64_t(n))
      S.row(r).tail(n - std::max<std::int64_t>(visible, 0)).setConstant(kNegInf);
  }
}

// O = acc / l and LSE = m + log l for the piece's rows.
template <class Acc, class Vec>
void write_rows(const Layout& L, const TilePiece& p, const Acc& acc, const Vec& m, const Vec& l,
                AttentionResult& out) {
  RowsView O = L.o_rows(out.o.data(), p.first_row, p.rows, p.head);
  for (u32 r = 0; r < p.rows; ++r) {
    float* lse = &out.lse[(p.first_row + r) * L.hq + p.head];
    if (l(r) > 0) {
      O.row(r) = acc.row(r) / l(r);
      *lse = m(r) + std::log(l(r));
    } else {  // no key visible: nothing to average
      O.row(r).setZero();
      *lse = kNegInf;
    }
  }
}

// The partial state of some rows over part of their keys (docs/context-parallel.md): O the rows'
// attention over those keys alone, fp32, and LSE the natural log of their sum of exp(scores);
// O 0 and LSE -inf for a row that sees none of them.
struct PartialRows {
  MatrixRM o;
  Eigen::VectorXf lse;
};

// Keys [begin, end) of a sequence.
struct KeyRange {
  std::uint64_t begin = 0, end = kAllKvBlocks;
};

// The rows' partial state from their running softmax state (unnormalised O, max, sum).
template <class Acc, class Vec>
PartialRows to_partial(const Acc& acc, const Vec& m, const Vec& l) {
  PartialRows p{MatrixRM::Zero(acc.rows(), acc.cols()),
                Eigen::VectorXf::Constant(m.size(), kNegInf)};
  for (Eigen::Index r = 0; r < m.size(); ++r)
    if (l(r) > 0) {
      p.o.row(r) = acc.row(r) / l(r);
      p.lse(r) = m(r) + std::log(l(r));
    }
  return p;
}

// Merges partial states of the same rows, in the order given (a split tile's pieces in KV
// order): LSE = log sum_i exp(LSE_i), O = sum_i exp(LSE_i - LSE) O_i, shifted by the largest LSE_i
// so that no exp() overflows. The order is fixed, so the result never depends on which piece was
// computed first. A row no part saw keeps O 0 and LSE -inf.
template <class Part>
PartialRows merge_rows(const std::vector<Part>& parts, Eigen::Index rows, Eigen::Index cols) {
  Eigen::VectorXf m = Eigen::VectorXf::Constant(rows, kNegInf);
  for (const Part& part : parts) m = m.cwiseMax(part.lse);
  const Eigen::VectorXf shift = (m.array() == kNegInf).select(0.0f, m);
  Eigen::VectorXf sum = Eigen::VectorXf::Zero(rows);
  MatrixRM o = MatrixRM::Zero(rows, cols);
  for (const Part& part : parts) {
    const Eigen::VectorXf weight = (part.lse - shift).array().exp().matrix();
    sum += weight;
    o += weight.asDiagonal() * part.o;
  }
  PartialRows merged{std::move(o), Eigen::VectorXf::Constant(rows, kNegInf)};
  for (Eigen::Index r = 0; r < rows; ++r)
    if (sum(r) > 0) {
      merged.o.row(r) /= sum(r);
      merged.lse(r) = shift(r) + std::log(sum(r));
    }
  return merged;
}

// The blockwise online softmax of one tile (FlashAttention's forward recurrence) in fp32 against
// its sequence's keys in BN-wide blocks from the range's first key; writes the piece's rows of O
// and LSE. Only the keys of `range` that the rows see (all of them by default); with `partial`
// the rows' partial state is stored there instead of O and LSE.
void attend_tile(const Workload& w, const Layout& L, const AttentionInputs& in, float scale,
                 const TilePiece& p, AttentionResult& out, Workspace& ws, KeyRange range = {},
                 PartialRows* partial = nullptr) {
  const RowSpan kv = L.keys.sequence(p.prompt);
  const u32 q_len = w.q_lens[p.prompt];
  const u32 kv_head = p.head / L.group;
  const u32 key_end = visible_key_end(p.first_pos, p.rows, q_len, kv.length, w.mask);

  const ConstRowsView Q = L.q_rows(in.q.data(), p.first_row, p.rows, p.head);
  auto acc = ws.acc.topRows(p.rows);
  auto m = ws.row_max.head(p.rows);
  auto l = ws.row_sum.head(p.rows);
  auto alpha = ws.rescale.head(p.rows);
  auto shift = ws.shift.head(p.rows);
  acc.setZero();
  m.setConstant(kNegInf);
  l.setZero();

  const std::uint64_t range_end = std::min<std::uint64_t>(key_end, range.end);
  for (std::uint64_t kv0_64 = range.begin; kv0_64 < range_end; kv0_64 += w.block_n) {
    const u32 kv0 = static_cast<u32>(kv0_64);
    const u32 n = static_cast<u32>(
        std::min<std::uint64_t>(std::min(w.block_n, kv.length - kv0), range.end - kv0));
    const ConstRowsView K = L.kv_rows(in.k.data(), std::size_t(kv.start) + kv0, n, kv_head);
    const ConstRowsView V = L.kv_rows(in.v.data(), std::size_t(kv.start) + kv0, n, kv_head);
    auto S = ws.scores.topLeftCorner(p.rows, n);
    S.noalias() = scale * (Q * K.transpose());
    mask_block(S, p, q_len, kv.length, kv0, n, w.mask);

    const Eigen::VectorXf new_max = m.cwiseMax(S.rowwise().maxCoeff());
    // A row that has seen no key yet keeps max -inf; shifting by 0 keeps exp() at 0, not NaN.
    shift = (new_max.array() == kNegInf).select(0.0f, new_max);
    alpha = (m - shift).array().exp();
    S.array().colwise() -= shift.array();
    S = S.array().exp();
    l = alpha.cwiseProduct(l) + S.rowwise().sum();
    acc.array().colwise() *= alpha.array();
    acc.noalias() += S * V;
    m = new_max;
  }

  if (partial != nullptr) {
    *partial = to_partial(acc, m, l);
    return;
  }
  write_rows(L, p, acc, m, l, out);
}

// The keys of KV blocks [begin, begin + count).
KeyRange block_keys(const Workload& w, u32 begin, u32 count) {
  return KeyRange{std::uint64_t(begin) * w.block_n, std::uint64_t(begin + count) * w.block_n};
}

void add_problem(std::vector<CoverageProblem>& ps, CoverageProblem::Kind kind, u32 row, u32 head,
                 u32 prompt, u32 tile_head, u32 prompt_offset, std::int64_t cta) {
  if (!ps.empty()) {
    CoverageProblem& p = ps.back();
    if (p.kind == kind && p.head == head && p.prompt_idx == prompt && p.tile_head == tile_head &&
        p.prompt_offset == prompt_offset && p.cta == cta && p.row + p.row_count == row) {
      ++p.row_count;
      return;
    }
  }
  CoverageProblem p;
  p.kind = kind;
  p.row = row;
  p.head = head;
  p.prompt_idx = prompt;
  p.tile_head = tile_head;
  p.prompt_offset = prompt_offset;
  p.cta = cta;
  ps.push_back(p);
}

// The buffers must match the workload's layout; anything else would read out of bounds.
void check_inputs(const Workload& w, const AttentionInputs& in) {
  const std::string problem = w.validate();
  if (!problem.empty()) throw std::invalid_argument("invalid workload: " + problem);
  auto check = [](const char* name, std::size_t got, std::size_t want) {
    if (got != want)
      throw std::invalid_argument(
          fmt::format("attention input {} has {} values, the workload needs {}", name, got, want));
  };
  check("q", in.q.size(), w.q_elements());
  check("k", in.k.size(), w.kv_elements());
  check("v", in.v.size(), w.kv_elements());
}

// Every event must name a tile of the workload.
void check_events(const Workload& w, const Trace& trace) {
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.prompt_idx >= w.batch_size() || e.head_idx >= w.scheduled_heads())
      throw std::invalid_argument(fmt::format(
          "tiled_attention: trace event {} names prompt {}, head {}, outside the workload", i,
          e.prompt_idx, e.head_idx));
  }
}

std::string row_range(u32 row, u32 count) {
  return count == 1 ? fmt::format("row {}", row) : fmt::format("rows {}..{}", row, row + count - 1);
}

// Sorts event indices into the order their results land on the GPU: by end time, then CTA and
// step (each CTA's own tiles stay in its order), so the last writer wins as it would there.
void sort_by_landing(std::vector<std::size_t>& order, const Trace& trace) {
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const TraceEvent &x = trace.events[a], &y = trace.events[b];
    if (x.end_us != y.end_us) return x.end_us < y.end_us;
    return x.cta != y.cta ? x.cta < y.cta : x.step < y.step;
  });
}

// The rows a tile writes, clamped to the buffer.
struct TileWrite {
  std::size_t first_row = 0;
  u32 rows = 0;
};

// Counts every (row, head) write of the tiles in `order` and reports the rows a tile writes
// outside its sequence, a second time (blamed on the tile that writes second in `order`) or past
// the buffer. Returns whether any row is written twice.
bool count_writes(const Workload& w, const Layout& L, const Trace& trace,
                  const std::vector<std::size_t>& order, std::vector<TileWrite>& plan,
                  AttentionResult& out) {
  std::fill(out.row_writes.begin(), out.row_writes.end(), 0u);
  out.problems.clear();
  plan.assign(trace.events.size(), TileWrite{});
  bool overlapping = false;
  for (const std::size_t i : order) {
    const TraceEvent& e = trace.events[i];
    const RowSpan seq = L.queries.sequence(e.prompt_idx);
    const std::size_t first = tile_first_row(L.queries, e.prompt_idx, e.prompt_offset);
    const std::size_t seq_end = std::size_t(seq.start) + seq.length;
    const std::size_t end = std::min<std::size_t>(first + e.query_rows, L.total_q);
    plan[i] = {first, static_cast<u32>(end > first ? end - first : 0)};
    // The pieces of a split tile write its rows once, together: counted with the first piece.
    if (e.kv_block_begin != 0) continue;
    const TileHeads heads = w.tile_heads(e.head_idx);
    for (u32 head = heads.first; head < heads.first + heads.count; ++head) {
      auto report = [&](CoverageProblem::Kind kind, std::size_t r) {
        add_problem(out.problems, kind, u32(r), head, e.prompt_idx, e.head_idx, e.prompt_offset,
                    e.cta);
      };
      // One loop per kind so that each kind's rows group into one range per tile.
      for (std::size_t r = std::max(first, seq_end); r < end; ++r)
        report(CoverageProblem::Kind::OutsideSequence, r);
      for (std::size_t r = first; r < end; ++r)
        if (++out.row_writes[r * L.hq + head] > 1) {
          overlapping = true;
          report(CoverageProblem::Kind::DoubleWrite, r);
        }
      for (std::size_t r = std::max(end, first); r < first + e.query_rows; ++r)
        report(CoverageProblem::Kind::PastEnd, r);
    }
  }
  return overlapping;
}

// Rows of the sequences that no tile wrote, each blamed on the tile that owns it.
void report_gaps(const Workload& w, const Layout& L, AttentionResult& out) {
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 h = 0; h < L.hq; ++h)
      for (u32 pos = 0; pos < w.q_lens[b]; ++pos) {
        const u32 r = L.queries.start(b) + pos;
        if (out.row_writes[std::size_t(r) * L.hq + h] == 0)
          add_problem(out.problems, CoverageProblem::Kind::Gap, r, h, b,
                      w.decoding ? h / L.group : h, owning_tile_offset(pos, w.tile_shape()), -1);
      }
}

// Which events are pieces of a tile (split_tail): they process part of its KV blocks.
std::vector<bool> piece_events(const Workload& w, const Trace& trace) {
  std::vector<bool> piece(trace.events.size(), false);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    piece[i] = processes_part(e, whole_tile_cost(w, e));
  }
  return piece;
}

// Combines each split tile's pieces in KV-block order (merge_rows) and writes its rows once. A tile
// whose pieces do not cover its blocks exactly once (or disagree on the tile) is reported and left
// unwritten.
void combine_pieces(const Workload& w, const Layout& L, const Trace& trace,
                    const std::vector<TileWrite>& plan, const std::vector<bool>& piece,
                    std::vector<std::vector<PartialRows>>& partials, AttentionResult& out) {
  std::map<u32, std::vector<std::size_t>> by_tile;
  for (std::size_t i = 0; i < trace.events.size(); ++i)
    if (piece[i]) by_tile[trace.events[i].linear_idx].push_back(i);
  const u32 bm = w.tile_shape();
  for (auto& [idx, events] : by_tile) {
    std::sort(events.begin(), events.end(), [&](std::size_t a, std::size_t b) {
      return trace.events[a].kv_block_begin < trace.events[b].kv_block_begin;
    });
    const TraceEvent& first = trace.events[events.front()];
    const u32 whole = whole_tile_cost(w, first).kv_blocks;
    std::uint64_t next = 0;
    bool exact = true;
    for (const std::size_t i : events) {
      const TraceEvent& e = trace.events[i];
      exact = exact && e.kv_block_begin == next && e.kv_blocks > 0 &&
              e.prompt_idx == first.prompt_idx && e.head_idx == first.head_idx &&
              e.prompt_offset == first.prompt_offset && plan[i].rows == plan[events[0]].rows &&
              partials[i].size() == partials[events[0]].size();
      next = std::uint64_t(e.kv_block_begin) + e.kv_blocks;
    }
    exact = exact && next == whole;
    const TileWrite rows = plan[events.front()];
    const TileHeads heads = w.tile_heads(first.head_idx);
    if (!exact) {
      for (u32 head = heads.first; head < heads.first + heads.count; ++head)
        for (u32 r = 0; r < rows.rows; ++r)
          add_problem(out.problems, CoverageProblem::Kind::SplitKv, u32(rows.first_row + r), head,
                      first.prompt_idx, first.head_idx, first.prompt_offset, first.cta);
      continue;
    }
    std::size_t part = 0;
    for (u32 head = heads.first; head < heads.first + heads.count; ++head)
      for (u32 done = 0; done < rows.rows; done += bm, ++part) {
        const TilePiece p{rows.first_row + done, std::min(bm, rows.rows - done),
                          first.prompt_offset + done, first.prompt_idx, head};
        std::vector<PartialRows> pieces;
        for (const std::size_t i : events) pieces.push_back(std::move(partials[i][part]));
        const PartialRows merged = merge_rows(pieces, p.rows, L.d);
        L.o_rows(out.o.data(), p.first_row, p.rows, p.head) = merged.o;
        for (u32 r = 0; r < p.rows; ++r) out.lse[(p.first_row + r) * L.hq + p.head] = merged.lse(r);
      }
  }
}

// Computes every planned tile in `order` on `threads` threads. A tile is computed in BM-row
// pieces so the scratch space stays BM x BN even if a malformed event claims more rows.
void attend_tiles(const Workload& w, const Layout& L, const AttentionInputs& in, float scale,
                  const Trace& trace, const std::vector<std::size_t>& order,
                  const std::vector<TileWrite>& plan, unsigned threads,
                  const AttentionProgress& progress, AttentionResult& out) {
  std::vector<Workspace> spaces;
  std::atomic<std::size_t> tiles_done{0};
  const u32 bm = w.tile_shape();
  for (unsigned t = 0; t < threads; ++t) spaces.emplace_back(bm, w.block_n, L.d);
  // A split tile's pieces keep their states here (one per head and BM rows), by event.
  std::vector<std::vector<PartialRows>> partials(trace.events.size());
  const std::vector<bool> piece = piece_events(w, trace);
  parallel_for(order.size(), threads, [&](std::size_t k, unsigned id) {
    const std::size_t i = order[k];
    const TraceEvent& e = trace.events[i];
    const TileHeads heads = w.tile_heads(e.head_idx);
    for (u32 head = heads.first; head < heads.first + heads.count; ++head)
      for (u32 done = 0; done < plan[i].rows; done += bm) {
        const TilePiece rows{plan[i].first_row + done, std::min(bm, plan[i].rows - done),
                             e.prompt_offset + done, e.prompt_idx, head};
        if (!piece[i]) {
          attend_tile(w, L, in, scale, rows, out, spaces[id]);
          continue;
        }
        partials[i].emplace_back();
        attend_tile(w, L, in, scale, rows, out, spaces[id],
                    block_keys(w, e.kv_block_begin, e.kv_blocks), &partials[i].back());
      }
    const std::size_t done = ++tiles_done;
    if (progress) progress(done, order.size());
  });
  combine_pieces(w, L, trace, plan, piece, partials, out);
}

}  // namespace

std::uint16_t float_to_bf16_bits(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  // Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, then truncate.
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

float bf16_bits_to_float(std::uint16_t b) {
  const std::uint32_t bits = std::uint32_t(b) << 16;
  float x = 0;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

std::vector<std::uint16_t> to_bf16_bits(const std::vector<float>& values) {
  std::vector<std::uint16_t> out(values.size());
  std::transform(values.begin(), values.end(), out.begin(), float_to_bf16_bits);
  return out;
}

std::vector<float> from_bf16_bits(const std::vector<std::uint16_t>& bits) {
  std::vector<float> out(bits.size());
  std::transform(bits.begin(), bits.end(), out.begin(), bf16_bits_to_float);
  return out;
}

AttentionInputs make_inputs(const Workload& w, std::uint64_t seed) {
  std::uint64_t state = seed;
  auto fill = [&](std::vector<float>& v, std::size_t n) {
    v.resize(n);
    for (float& x : v) x = round_to_bf16(uniform_symmetric(splitmix64_next(state)));
  };
  AttentionInputs in;
  fill(in.q, w.q_elements());
  fill(in.k, w.kv_elements());
  fill(in.v, w.kv_elements());
  return in;
}

std::string CoverageProblem::message() const {
  const std::string tile = describe_tile(prompt_idx, tile_head, prompt_offset);
  const std::string where = fmt::format("{} of head {}", row_range(row, row_count), head);
  switch (kind) {
    case Kind::DoubleWrite:
      return fmt::format("double write: {} written again by {} on CTA {}", where, tile, cta);
    case Kind::Gap: return fmt::format("gap: {} never written (they belong to {})", where, tile);
    case Kind::OutsideSequence:
      return fmt::format(
          "write outside the sequence: {} on CTA {} wrote {}, which belong to another sequence",
          tile, cta, where);
    case Kind::PastEnd:
      return fmt::format(
          "write past the end: {} on CTA {} would write {}, past the end of the output (clamped)",
          tile, cta, where);
    case Kind::SplitKv:
      return fmt::format(
          "split tile: the pieces of {} do not cover its KV blocks exactly once; {} left "
          "unwritten",
          tile, where);
  }
  return "?";
}

u32 event_first_row(const Workload& w, const TraceEvent& e) {
  const std::vector<u32> q_offsets = w.q_row_offsets();
  return tile_first_row(w.query_layout(q_offsets.data()), e.prompt_idx, e.prompt_offset);
}

AttentionResult tiled_attention(const Workload& w, const AttentionInputs& in, const Trace& trace,
                                float softmax_scale, unsigned num_threads,
                                const AttentionProgress& progress) {
  check_inputs(w, in);
  check_events(w, trace);
  const Layout L(w);
  AttentionResult out = unwritten_result(w);

  // Tiles that write disjoint rows may run in any order, on several threads. Overlapping ones
  // (faithful mode, duplicated events) run one at a time in the order their results land on the
  // GPU. Faithful mode is always sequential: it is the overlap case.
  std::vector<std::size_t> order(trace.events.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const bool faithful = w.ragged_mode == RaggedMode::Faithful;
  if (faithful) sort_by_landing(order, trace);
  std::vector<TileWrite> plan;
  const bool overlapping = count_writes(w, L, trace, order, plan, out);
  // Found overlap in trace order (e.g. a duplicated event): recount in landing order so the
  // blame matches the order the tiles will run in.
  if (overlapping && !faithful) {
    sort_by_landing(order, trace);
    count_writes(w, L, trace, order, plan, out);
  }
  report_gaps(w, L, out);

  const unsigned threads = overlapping || faithful ? 1u : thread_count(num_threads);
  attend_tiles(w, L, in, softmax_scale_for(w, softmax_scale), trace, order, plan, threads, progress,
               out);
  return out;
}

PartialAttention partial_attention(const Workload& w, const AttentionInputs& in,
                                   const std::vector<KvRange>& ranges, float softmax_scale,
                                   unsigned num_threads) {
  check_inputs(w, in);
  if (ranges.size() != w.batch_size())
    throw std::invalid_argument(
        fmt::format("partial_attention: {} KV ranges for {} sequences: give one per sequence",
                    ranges.size(), w.batch_size()));
  for (u32 b = 0; b < w.batch_size(); ++b)
    if (ranges[b].begin > ranges[b].end || ranges[b].end > w.key_len(b))
      throw std::invalid_argument(fmt::format(
          "partial_attention: sequence {} has {} keys, so its KV range [{}, {}) does not fit it", b,
          w.key_len(b), ranges[b].begin, ranges[b].end));
  const Layout L(w);
  const float scale = softmax_scale_for(w, softmax_scale);
  PartialAttention out;
  out.o.assign(w.q_elements(), 0.0f);
  out.lse.assign(w.lse_elements(), kNegInf);
  const u32 bm = w.block_m;
  const unsigned threads = thread_count(num_threads);
  std::vector<Workspace> spaces;
  for (unsigned t = 0; t < threads; ++t) spaces.emplace_back(bm, w.block_n, L.d);
  AttentionResult unused;  // attend_tile writes its partial state instead
  parallel_for(std::size_t(w.batch_size()) * L.hq, threads, [&](std::size_t job, unsigned id) {
    const u32 b = u32(job / L.hq), head = u32(job % L.hq);
    const KeyRange keys{ranges[b].begin, ranges[b].end};
    for (u32 done = 0; done < w.q_lens[b]; done += bm) {
      const TilePiece rows{std::size_t(L.queries.start(b)) + done, std::min(bm, w.q_lens[b] - done),
                           done, b, head};
      PartialRows part;
      attend_tile(w, L, in, scale, rows, unused, spaces[id], keys, &part);
      L.o_rows(out.o.data(), rows.first_row, rows.rows, head) = part.o;
      for (u32 r = 0; r < rows.rows; ++r) out.lse[(rows.first_row + r) * L.hq + head] = part.lse(r);
    }
  });
  return out;
}

PartialAttention merge_partials(const std::vector<PartialAttention>& parts, u32 head_dim) {
  if (parts.empty()) throw std::invalid_argument("merge_partials: no partial results to merge");
  const std::size_t n = parts[0].lse.size();
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (parts[i].lse.size() != n || parts[i].o.size() != n * head_dim)
      throw std::invalid_argument(fmt::format(
          "merge_partials: part {} has {} LSE and {} O values, part 0 {} LSE: every part needs "
          "the same rows and {} O values per LSE entry",
          i, parts[i].lse.size(), parts[i].o.size(), n, head_dim));
  struct PartView {
    Eigen::Map<const MatrixRM> o;
    Eigen::Map<const Eigen::VectorXf> lse;
  };
  std::vector<PartView> views;
  const auto rows = Eigen::Index(n);
  for (const PartialAttention& p : parts)
    views.push_back(PartView{Eigen::Map<const MatrixRM>(p.o.data(), rows, head_dim),
                             Eigen::Map<const Eigen::VectorXf>(p.lse.data(), rows)});
  const PartialRows merged = merge_rows(views, rows, head_dim);
  PartialAttention out;
  out.o.assign(merged.o.data(), merged.o.data() + merged.o.size());
  out.lse.assign(merged.lse.data(), merged.lse.data() + merged.lse.size());
  return out;
}

AttentionResult reference_attention(const Workload& w, const AttentionInputs& in,
                                    float softmax_scale, const AttentionProgress& progress) {
  check_inputs(w, in);
  const Layout L(w);
  const double scale = softmax_scale_for(w, softmax_scale);
  AttentionResult out = unwritten_result(w);
  // One job per (sequence, KV head): its keys and values are converted to double once for the
  // query heads that share them. Rows go in blocks so that the scores are one matrix product
  // (each row's softmax is still over all its visible keys at once, in double).
  constexpr u32 kRowBlock = 256;
  const std::size_t jobs = std::size_t(w.batch_size()) * L.hk;
  std::atomic<std::size_t> rows_done{0};
  const std::size_t rows_total = std::size_t(L.total_q) * L.hq;
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  parallel_for(jobs, 0, [&](std::size_t job, unsigned) {
    const u32 b = u32(job / L.hk), kv_head = u32(job % L.hk);
    const u32 q_len = w.q_lens[b];
    const RowSpan kv = L.keys.sequence(b);
    if (q_len == 0) return;
    const MatrixD K = L.kv_rows(in.k.data(), kv.start, kv.length, kv_head).cast<double>();
    const MatrixD V = L.kv_rows(in.v.data(), kv.start, kv.length, kv_head).cast<double>();
    MatrixD S;
    for (u32 h = kv_head * L.group; h < (kv_head + 1) * L.group; ++h) {
      for (u32 i0 = 0; i0 < q_len; i0 += kRowBlock) {
        const u32 rows = std::min(kRowBlock, q_len - i0);
        const std::size_t row0 = std::size_t(L.queries.start(b)) + i0;
        const u32 keys = visible_key_end(i0, rows, q_len, kv.length, w.mask);
        const MatrixD Q = L.q_rows(in.q.data(), row0, rows, h).cast<double>();
        S.noalias() = scale * (Q * K.topRows(keys).transpose());
        for (u32 r = 0; r < rows; ++r) {
          const u32 visible = visible_key_end(i0 + r, 1, q_len, kv.length, w.mask);
          const std::size_t row = row0 + r;
          out.row_writes[row * L.hq + h] = 1;
          if (visible == 0) {  // no key visible: nothing to average (O 0), as tiled_attention does
            out.lse[row * L.hq + h] = kNegInf;
            S.row(r).setZero();
            continue;
          }
          const double mx = S.row(r).head(visible).maxCoeff();
          S.row(r).head(visible) = (S.row(r).head(visible).array() - mx).exp().matrix();
          S.row(r).tail(keys - visible).setZero();
          const double sum = S.row(r).head(visible).sum();
          S.row(r) /= sum;
          out.lse[row * L.hq + h] = float(mx + std::log(sum));
        }
        const MatrixD O = S * V.topRows(keys);
        L.o_rows(out.o.data(), row0, rows, h) = O.cast<float>();
      }
      const std::size_t done = rows_done += q_len;
      if (progress) progress(done, rows_total);
    }
  });
  return out;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::quiet_NaN();
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(b[i])) continue;
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::quiet_NaN();
    const double d = double(a[i]) - double(b[i]);
    diff += d * d;
    ref += double(b[i]) * double(b[i]);
  }
  if (ref == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / ref);
}

TileError tile_error(const Workload& w, const TraceEvent& e, const std::vector<float>& o_a,
                     const std::vector<float>& lse_a, const std::vector<float>& o_b,
                     const std::vector<float>& lse_b) {
  const Layout L(w);
  TileError err;
  const std::size_t first = event_first_row(w, e);
  const std::size_t end = std::min<std::size_t>(first + e.query_rows, L.total_q);
  const TileHeads heads = w.tile_heads(e.head_idx);
  if (end <= first || heads.first + heads.count > L.hq) return err;
  err.rows = u32(end - first);
  for (std::size_t r = first; r < end; ++r)
    for (u32 head = heads.first; head < heads.first + heads.count; ++head) {
      const std::size_t base = (r * L.hq + head) * L.d;
      double diff = 0, ref = 0;
      for (u32 c = 0; c < L.d; ++c) {
        const float x = o_a[base + c], y = o_b[base + c];
        if (!std::isfinite(y)) continue;
        if (!std::isfinite(x)) {
          err.has_nan = true;
          continue;
        }
        diff += (double(x) - y) * (double(x) - y);
        ref += double(y) * y;
      }
      const double rel = ref > 0 ? std::sqrt(diff / ref) : (diff > 0 ? INFINITY : 0.0);
      err.o_rel = std::max(err.o_rel, rel);
      const float la = lse_a[r * L.hq + head], lb = lse_b[r * L.hq + head];
      if (std::isfinite(lb)) {
        if (!std::isfinite(la))
          err.has_nan = true;
        else
          err.lse_rel = std::max(err.lse_rel,
                                 std::abs(double(la) - lb) / std::max(std::abs(double(lb)), 1.0));
      }
    }
  return err;
}

}  // namespace tilesched::sim
