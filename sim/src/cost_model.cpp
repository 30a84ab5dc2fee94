#include "tilesched/sim/cost_model.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <cmath>
#include <stdexcept>

#include "builtin_costs.hpp"
#include "json_read.hpp"
#include "tilesched/sim/value_limits.hpp"

namespace tilesched::sim {

using nlohmann::json;

namespace {

// "<before> 8 <noun>s<after>": block counts are whole numbers, so print them without a fraction.
std::string fmt_count(const char* before, double count, const char* noun, const char* after) {
  const long long n = static_cast<long long>(count);
  return fmt::format("{} {} {}{}{}", before, n, noun, n == 1 ? "" : "s", after);
}

// A head_dims key: a head dim in 1..1024 written in plain decimal, so that one head dim has one
// spelling ("64", never "064" or "+64" beside it).
u32 head_dim_key(const std::string& key) {
  const bool digits = !key.empty() && key.size() <= 4 && key[0] != '0' &&
                      key.find_first_not_of("0123456789") == std::string::npos;
  const unsigned long d = digits ? std::stoul(key) : 0;
  if (d == 0 || d > 1024)
    detail::fail("head_dims." + key, "key must be a head_dim in 1..1024 in plain decimal");
  return static_cast<u32>(d);
}

CostCoefficients scaled(const CostCoefficients& c, double f) {
  return CostCoefficients{c.fixed_us * f, c.us_per_block * f, c.us_per_masked_block * f};
}

}  // namespace

CostCoefficients CostModel::coefficients(u32 head_dim) const {
  if (by_head_dim.empty())
    throw std::logic_error("cost model '" + device + "' has no coefficients");
  const auto hi = by_head_dim.lower_bound(head_dim);
  if (hi != by_head_dim.end() && hi->first == head_dim) return hi->second;
  if (hi == by_head_dim.begin()) return scaled(hi->second, double(head_dim) / hi->first);
  const auto lo = std::prev(hi);
  if (hi == by_head_dim.end()) return scaled(lo->second, double(head_dim) / lo->first);
  const double f = double(head_dim - lo->first) / double(hi->first - lo->first);
  const CostCoefficients& a = lo->second;
  const CostCoefficients& b = hi->second;
  return CostCoefficients{
      a.fixed_us + f * (b.fixed_us - a.fixed_us),
      a.us_per_block + f * (b.us_per_block - a.us_per_block),
      a.us_per_masked_block + f * (b.us_per_masked_block - a.us_per_masked_block)};
}

double CostModel::tile_time_us(const Workload& w, const TileCost& c) const {
  return coefficients(w.head_dim).tile_time_us(c);
}

CostModel CostModel::from_json(const json& j) {
  using namespace detail;
  require_object(j, "a cost table");
  check_known_fields(j, {"format", "version", "device", "units", "note", "head_dims"}, "");
  const std::string format = as_string(require(j, "format", ""), "format");
  if (format != "tilesched-cost")
    fail("format", "expected \"tilesched-cost\", got \"" + format + "\"");
  const u32 version = as_u32(require(j, "version", ""), "version");
  if (version != 1) fail("version", fmt::format("unsupported cost table version {}", version));
  CostModel m;
  m.device = as_string(require(j, "device", ""), "device");
  const json& dims = require(j, "head_dims", "");
  require_object(dims, "field 'head_dims'");
  if (dims.empty()) fail("head_dims", "needs at least one head_dim entry");
  for (auto it = dims.begin(); it != dims.end(); ++it) {
    const std::string prefix = "head_dims." + it.key() + ".";
    const u32 d = head_dim_key(it.key());
    require_object(it.value(), "field 'head_dims." + it.key() + "'");
    check_known_fields(it.value(), {"fixed_us", "us_per_block", "us_per_masked_block"}, prefix);
    const auto coefficient = [&](const char* name) {
      const std::string field = prefix + name;
      const double us = as_double(require(it.value(), name, prefix), field);
      const std::string problem = cost_coefficient_problem(us);
      if (!problem.empty()) fail(field, problem);
      return us;
    };
    CostCoefficients c;
    c.fixed_us = coefficient("fixed_us");
    c.us_per_block = coefficient("us_per_block");
    c.us_per_masked_block = coefficient("us_per_masked_block");
    m.by_head_dim[d] = c;
  }
  return m;
}

json CostModel::to_json() const {
  json dims = json::object();
  for (const auto& [d, c] : by_head_dim)
    dims[fmt::format("{}", d)] = json{{"fixed_us", c.fixed_us},
                                      {"us_per_block", c.us_per_block},
                                      {"us_per_masked_block", c.us_per_masked_block}};
  return json{{"format", "tilesched-cost"},
              {"version", 1},
              {"device", device},
              {"units",
               "microseconds per tile on one SM; time = fixed_us + us_per_block * "
               "unmasked_kv_blocks + us_per_masked_block * masked_kv_blocks"},
              {"head_dims", dims}};
}

CostModel CostModel::builtin(const std::string& profile) {
  std::string names;
  for (const auto& [name, text] : detail::builtin_cost_tables()) {
    if (name == profile) return from_json(json::parse(text));
    names += (names.empty() ? "" : ", ") + name;
  }
  throw std::invalid_argument("unknown cost profile \"" + profile + "\" (built in: " + names +
                              "; or load a cost file)");
}

CostModel CostModel::load(const std::string& path) {
  return detail::read_json_file(path, from_json);
}

TileCost event_tile_cost(const Workload& w, const TraceEvent& e) {
  const u32 seq_len = w.q_lens.at(e.prompt_idx);
  const u32 num_keys = w.key_len(e.prompt_idx);
  // A faithful-mode tile at or past its sequence's end is processed with rows whose positions lie
  // at or past every key: it sees all keys of its sequence. The KV loop does not depend on how
  // many rows the tile writes, so a tile starting exactly at the end (zero rows) counts them too.
  if (e.prompt_offset >= seq_len) {
    if (num_keys == 0) return TileCost{};
    const u32 blocks = ceil_div(num_keys, w.block_n);
    return TileCost{blocks, num_keys % w.block_n != 0 ? 1u : 0u};
  }
  const u32 rows = tile_query_rows(seq_len, e.prompt_offset, w.block_m);
  return tile_cost(e.prompt_offset, rows, seq_len, num_keys, w.block_m, w.block_n, w.mask);
}

namespace {

// Why the design matrix [1, unmasked, masked] has rank < 3, naming the coefficient the tiles
// leave open, so that the user knows which kind of tile the traces lack.
std::string undetermined_coefficient(const Eigen::MatrixXd& A) {
  const auto constant = [&](Eigen::Index col) { return (A.col(col).array() == A(0, col)).all(); };
  if (constant(1))
    return fmt_count("us_per_block cannot be determined: every tile has", A(0, 1),
                     "unmasked KV block",
                     ", so their time cannot be told apart from fixed_us (add tiles with other "
                     "KV lengths)");
  if (constant(2))
    return fmt_count("us_per_masked_block cannot be determined: every tile has", A(0, 2),
                     "masked KV block",
                     " (add causal tiles, and tiles whose keys end inside a KV block)");
  return "us_per_block and us_per_masked_block cannot be told apart: the unmasked and masked "
         "block counts of the tiles move together (add tiles with other KV lengths or masks)";
}

}  // namespace

CostFit fit_cost(const std::vector<Trace>& traces, u32 head_dim) {
  std::size_t n = 0;
  for (const Trace& t : traces)
    if (t.workload.head_dim == head_dim) n += t.events.size();
  if (n < 3)
    throw std::invalid_argument(
        fmt::format("cannot fit head_dim {}: {} measured tiles, need at least 3", head_dim, n));
  // One row per tile: [1, unmasked blocks, masked blocks] * coefficients = measured time.
  Eigen::MatrixXd A(n, 3);
  Eigen::VectorXd y(n);
  std::size_t r = 0;
  for (const Trace& t : traces) {
    if (t.workload.head_dim != head_dim) continue;
    for (const TraceEvent& e : t.events) {
      const TileCost c = event_tile_cost(t.workload, e);
      A(r, 0) = 1.0;
      A(r, 1) = double(c.kv_blocks - c.masked_blocks);
      A(r, 2) = double(c.masked_blocks);
      y(r) = e.end_us - e.start_us;
      ++r;
    }
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
  if (qr.rank() < 3)
    throw std::invalid_argument(fmt::format(
        "cannot fit head_dim {}: the measured tiles do not determine all three coefficients: {}",
        head_dim, undetermined_coefficient(A)));
  const Eigen::Vector3d x = qr.solve(y);
  CostFit fit;
  fit.coefficients = CostCoefficients{x(0), x(1), x(2)};
  fit.rms_residual_us = std::sqrt((A * x - y).squaredNorm() / double(n));
  const double rms_measured = std::sqrt(y.squaredNorm() / double(n));
  fit.relative_rms_error = rms_measured > 0 ? fit.rms_residual_us / rms_measured : 0;
  fit.samples = n;
  return fit;
}

CostModel CostModel::fit(const std::vector<Trace>& traces, const std::string& device) {
  CostModel m;
  m.device = device;
  for (const Trace& t : traces) m.by_head_dim[t.workload.head_dim] = CostCoefficients{};
  if (m.by_head_dim.empty()) throw std::invalid_argument("cannot fit a cost model: no traces");
  for (auto& [d, c] : m.by_head_dim) c = fit_cost(traces, d).coefficients;
  return m;
}

}  // namespace tilesched::sim
