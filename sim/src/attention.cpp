#include "tilesched/sim/attention.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

namespace tilesched::sim {

namespace {

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowsView = Eigen::Map<const MatrixRM, Eigen::Unaligned, Eigen::OuterStride<>>;
using RowsView = Eigen::Map<MatrixRM, Eigen::Unaligned, Eigen::OuterStride<>>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Where things live in the buffers of one workload.
struct Layout {
  std::vector<u32> q_off, kv_off;  // B+1 row offsets (padded: b * S_max)
  std::size_t total_q = 0, total_kv = 0;
  u32 hq = 0, hk = 0, d = 0, group = 1;

  explicit Layout(const Workload& w)
      : q_off(w.q_row_offsets()),
        kv_off(w.kv_row_offsets()),
        total_q(q_off.back()),
        total_kv(kv_off.back()),
        hq(w.num_q_heads),
        hk(w.num_kv_heads),
        d(w.head_dim),
        group(w.group_size()) {}

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

float softmax_scale_for(const Workload& w, float scale) {
  return scale > 0 ? scale : 1.0f / std::sqrt(float(w.head_dim));
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

// The blockwise online softmax of one tile (FlashAttention's forward recurrence) in fp32:
// `rows` query rows at sequence positions first_pos, first_pos+1, ..., against the sequence's keys
// in BN-wide blocks.
void attend_tile(const Workload& w, const Layout& L, const AttentionInputs& in, float scale,
                 std::size_t first_row, u32 rows, std::int64_t first_pos, u32 prompt, u32 head,
                 AttentionResult& out, Workspace& ws) {
  const u32 kv_len = w.key_len(prompt);
  const std::int64_t q_len = w.q_lens[prompt];
  const u32 kv_head = head / L.group;
  const bool causal = w.mask == Mask::Causal;
  // Row r sees keys [0, first_pos + r + shift]: the mask is bottom-right aligned.
  const std::int64_t diag = std::int64_t(kv_len) - q_len;
  std::int64_t key_end = kv_len;
  if (causal) key_end = std::min<std::int64_t>(kv_len, first_pos + rows - 1 + diag + 1);

  const ConstRowsView Q = L.q_rows(in.q.data(), first_row, rows, head);
  auto acc = ws.acc.topRows(rows);
  auto m = ws.row_max.head(rows);
  auto l = ws.row_sum.head(rows);
  auto alpha = ws.rescale.head(rows);
  auto shift = ws.shift.head(rows);
  acc.setZero();
  m.setConstant(kNegInf);
  l.setZero();

  for (std::int64_t kv0 = 0; kv0 < key_end; kv0 += w.block_n) {
    const u32 n = static_cast<u32>(std::min<std::int64_t>(w.block_n, kv_len - kv0));
    const ConstRowsView K = L.kv_rows(in.k.data(), L.kv_off[prompt] + kv0, n, kv_head);
    const ConstRowsView V = L.kv_rows(in.v.data(), L.kv_off[prompt] + kv0, n, kv_head);
    auto S = ws.scores.topLeftCorner(rows, n);
    S.noalias() = scale * (Q * K.transpose());

    // Only blocks that cross some row's diagonal need the mask.
    if (causal && kv0 + n - 1 > first_pos + diag) {
      for (u32 r = 0; r < rows; ++r) {
        const std::int64_t visible = first_pos + r + diag + 1 - kv0;  // keys of this block seen
        if (visible < std::int64_t(n))
          S.row(r).tail(n - std::max<std::int64_t>(visible, 0)).setConstant(kNegInf);
      }
    }

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

  RowsView O = L.o_rows(out.o.data(), first_row, rows, head);
  for (u32 r = 0; r < rows; ++r) {
    float* lse = &out.lse[(first_row + r) * L.hq + head];
    if (l(r) > 0) {
      O.row(r) = acc.row(r) / l(r);
      *lse = m(r) + std::log(l(r));
    } else {  // no key visible: nothing to average
      O.row(r).setZero();
      *lse = kNegInf;
    }
  }
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
  const Layout L(w);
  auto check = [](const char* name, std::size_t got, std::size_t want) {
    if (got != want)
      throw std::invalid_argument(std::string("attention input ") + name + " has " +
                                  std::to_string(got) + " values, the workload needs " +
                                  std::to_string(want));
  };
  check("q", in.q.size(), L.total_q * L.hq * L.d);
  check("k", in.k.size(), L.total_kv * L.hk * L.d);
  check("v", in.v.size(), L.total_kv * L.hk * L.d);
}

std::string row_range(u32 row, u32 count) {
  return count == 1 ? "row " + std::to_string(row)
                    : "rows " + std::to_string(row) + ".." + std::to_string(row + count - 1);
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

AttentionInputs make_inputs(const Workload& w, std::uint64_t seed) {
  const Layout L(w);
  std::uint64_t state = seed;
  auto fill = [&](std::vector<float>& v, std::size_t n) {
    v.resize(n);
    for (float& x : v) {
      // 24 random bits -> a float in [0, 1) exactly, then [-1, 1).
      const float u = float(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
      x = round_to_bf16(2.0f * u - 1.0f);
    }
  };
  AttentionInputs in;
  fill(in.q, L.total_q * L.hq * L.d);
  fill(in.k, L.total_kv * L.hk * L.d);
  fill(in.v, L.total_kv * L.hk * L.d);
  return in;
}

std::string CoverageProblem::message() const {
  const std::string tile = "tile (prompt " + std::to_string(prompt_idx) + ", head " +
                           std::to_string(tile_head) + ", prompt_offset " +
                           std::to_string(prompt_offset) + ")";
  const std::string where = row_range(row, row_count) + " of head " + std::to_string(head);
  const std::string on_cta = " on CTA " + std::to_string(cta);
  switch (kind) {
    case Kind::DoubleWrite: return "double write: " + where + " written again by " + tile + on_cta;
    case Kind::Gap: return "gap: " + where + " never written (they belong to " + tile + ")";
    case Kind::OutsideSequence:
      return "write outside the sequence: " + tile + on_cta + " wrote " + where +
             ", which belong to another sequence";
    case Kind::PastEnd:
      return "write past the end: " + tile + on_cta + " would write " + where +
             ", past the end of the output (clamped)";
  }
  return "?";
}

u32 event_first_row(const Workload& w, const TraceEvent& e) {
  if (w.padded) return e.prompt_idx * w.max_seq_len() + e.prompt_offset;
  u32 start = 0;
  for (u32 b = 0; b < e.prompt_idx; ++b) start += w.q_lens[b];
  return start + e.prompt_offset;
}

AttentionResult tiled_attention(const Workload& w, const AttentionInputs& in, const Trace& trace,
                                float softmax_scale, unsigned num_threads) {
  check_inputs(w, in);
  const Layout L(w);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if (e.prompt_idx >= w.batch_size() || e.head_idx >= L.hq)
      throw std::invalid_argument("tiled_attention: trace event " + std::to_string(i) +
                                  " names prompt " + std::to_string(e.prompt_idx) + ", head " +
                                  std::to_string(e.head_idx) + ", outside the workload");
  }
  const float scale = softmax_scale_for(w, softmax_scale);
  AttentionResult out;
  out.o.assign(L.total_q * L.hq * L.d, kNaN);
  out.lse.assign(L.total_q * L.hq, kNaN);
  out.row_writes.assign(L.total_q * L.hq, 0);

  // Tiles that write disjoint rows may run in any order, on several threads. Overlapping ones
  // (faithful mode, duplicated events) run one at a time in the order their results land on the
  // GPU: by end time, then CTA and step (each CTA's own tiles stay in its order), so the last
  // writer wins as it would there. Faithful mode is always sequential: it is the overlap case.
  std::vector<std::size_t> order(trace.events.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto landing_order = [&] {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const TraceEvent &x = trace.events[a], &y = trace.events[b];
      if (x.end_us != y.end_us) return x.end_us < y.end_us;
      return x.cta != y.cta ? x.cta < y.cta : x.step < y.step;
    });
  };
  if (w.ragged_mode == RaggedMode::Faithful) landing_order();

  // Pass 1 (sequential, cheap): which rows each tile writes, counted. A double write is blamed on
  // the tile that writes second in landing order.
  struct TileRowsPlan {
    std::size_t first_row;
    u32 rows;  // clamped to the buffer
  };
  std::vector<TileRowsPlan> plan(trace.events.size());
  bool overlapping = false;
  auto count_writes = [&] {
    std::fill(out.row_writes.begin(), out.row_writes.end(), 0u);
    out.problems.clear();
    overlapping = false;
    for (const std::size_t i : order) {
      const TraceEvent& e = trace.events[i];
      const std::size_t first = L.q_off[e.prompt_idx] + std::size_t(e.prompt_offset);
      const std::size_t seq_end = L.q_off[e.prompt_idx] + w.q_lens[e.prompt_idx];
      const std::size_t end = std::min<std::size_t>(first + e.query_rows, L.total_q);
      plan[i] = {first, static_cast<u32>(end > first ? end - first : 0)};
      auto report = [&](CoverageProblem::Kind kind, std::size_t r) {
        add_problem(out.problems, kind, u32(r), e.head_idx, e.prompt_idx, e.head_idx,
                    e.prompt_offset, e.cta);
      };
      // One loop per kind so that each kind's rows group into one range per tile.
      for (std::size_t r = std::max(first, seq_end); r < end; ++r)
        report(CoverageProblem::Kind::OutsideSequence, r);
      for (std::size_t r = first; r < end; ++r)
        if (++out.row_writes[r * L.hq + e.head_idx] > 1) {
          overlapping = true;
          report(CoverageProblem::Kind::DoubleWrite, r);
        }
      for (std::size_t r = std::max(end, first); r < first + e.query_rows; ++r)
        report(CoverageProblem::Kind::PastEnd, r);
    }
  };
  count_writes();
  // Found overlap in trace order (e.g. a duplicated event): recount in landing order so the
  // blame matches the order the tiles will run in.
  const bool sequential = overlapping || w.ragged_mode == RaggedMode::Faithful;
  if (overlapping && w.ragged_mode != RaggedMode::Faithful) {
    landing_order();
    count_writes();
  }
  for (u32 b = 0; b < w.batch_size(); ++b)
    for (u32 h = 0; h < L.hq; ++h)
      for (u32 t = 0; t < w.q_lens[b]; ++t) {
        const std::size_t r = L.q_off[b] + t;
        if (out.row_writes[r * L.hq + h] == 0)
          add_problem(out.problems, CoverageProblem::Kind::Gap, u32(r), h, b, h,
                      t / w.block_m * w.block_m, -1);
      }

  // Pass 2: the attention itself.
  const unsigned threads = sequential ? 1u : thread_count(num_threads);
  std::vector<Workspace> spaces;
  for (unsigned t = 0; t < threads; ++t) spaces.emplace_back(w.block_m, w.block_n, L.d);
  const u32 bm = w.block_m;
  parallel_for(order.size(), threads, [&](std::size_t k, unsigned id) {
    const std::size_t i = order[k];
    const TraceEvent& e = trace.events[i];
    // A tile is computed in BM-row pieces so the scratch space stays BM x BN even if a malformed
    // event claims more rows.
    for (u32 done = 0; done < plan[i].rows; done += bm) {
      const u32 rows = std::min(bm, plan[i].rows - done);
      attend_tile(w, L, in, scale, plan[i].first_row + done, rows,
                  std::int64_t(e.prompt_offset) + done, e.prompt_idx, e.head_idx, out, spaces[id]);
    }
  });
  return out;
}

AttentionResult reference_attention(const Workload& w, const AttentionInputs& in,
                                    float softmax_scale) {
  check_inputs(w, in);
  const Layout L(w);
  const double scale = softmax_scale_for(w, softmax_scale);
  AttentionResult out;
  out.o.assign(L.total_q * L.hq * L.d, kNaN);
  out.lse.assign(L.total_q * L.hq, kNaN);
  out.row_writes.assign(L.total_q * L.hq, 0);
  const std::size_t jobs = std::size_t(w.batch_size()) * L.hq;
  parallel_for(jobs, 0, [&](std::size_t job, unsigned) {
    const u32 b = u32(job / L.hq), h = u32(job % L.hq);
    const u32 q_len = w.q_lens[b], kv_len = w.key_len(b);
    if (q_len == 0) return;
    const Eigen::MatrixXd K =
        L.kv_rows(in.k.data(), L.kv_off[b], kv_len, h / L.group).cast<double>();
    const Eigen::MatrixXd V =
        L.kv_rows(in.v.data(), L.kv_off[b], kv_len, h / L.group).cast<double>();
    for (u32 i = 0; i < q_len; ++i) {
      const std::size_t row = L.q_off[b] + i;
      const Eigen::RowVectorXd q = L.q_rows(in.q.data(), row, 1, h).cast<double>();
      // Keys 0..visible-1; bottom-right aligned causal mask.
      const u32 visible = w.mask == Mask::Causal ? i + (kv_len - q_len) + 1 : kv_len;
      const Eigen::RowVectorXd s = scale * (q * K.topRows(visible).transpose());
      const double mx = s.maxCoeff();
      const Eigen::RowVectorXd p = (s.array() - mx).exp().matrix();
      const double sum = p.sum();
      const Eigen::RowVectorXd o = (p * V.topRows(visible)) / sum;
      L.o_rows(out.o.data(), row, 1, h) = o.cast<float>();
      out.lse[row * L.hq + h] = float(mx + std::log(sum));
      out.row_writes[row * L.hq + h] = 1;
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
  if (end <= first || e.head_idx >= L.hq) return err;
  err.rows = u32(end - first);
  for (std::size_t r = first; r < end; ++r) {
    const std::size_t base = (r * L.hq + e.head_idx) * L.d;
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
    const float la = lse_a[r * L.hq + e.head_idx], lb = lse_b[r * L.hq + e.head_idx];
    if (std::isfinite(lb)) {
      if (!std::isfinite(la))
        err.has_nan = true;
      else
        err.lse_rel =
            std::max(err.lse_rel, std::abs(double(la) - lb) / std::max(std::abs(double(lb)), 1.0));
    }
  }
  return err;
}

}  // namespace tilesched::sim
