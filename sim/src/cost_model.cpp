#include "tilesched/sim/cost_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include "builtin_costs.hpp"
#include "json_read.hpp"
#include "tilesched/names.hpp"
#include "tilesched/sim/value_limits.hpp"

namespace tilesched::sim {

using nlohmann::json;

namespace {

// "<before> 8 <noun>s<after>": block counts are whole numbers, so print them without a fraction.
std::string fmt_count(const char* before, double count, const char* noun, const char* after) {
  const long long n = static_cast<long long>(count);
  return fmt::format("{} {} {}{}{}", before, n, noun, n == 1 ? "" : "s", after);
}

constexpr u32 kMaxTileHeight = 4096;  // a workload's BM limit (Workload::validate)
constexpr u32 kMaxBlockN = 4096;      // a workload's BN limit (Workload::validate)

// A key naming a number in 1..max (max <= 9999) written in plain decimal, so that one number has
// one spelling ("64", never "064" or "+64" beside it); 0 when the key is not one.
u32 plain_decimal_key(const std::string& key, u32 max) {
  const bool digits = !key.empty() && key.size() <= 4 && key[0] != '0' &&
                      key.find_first_not_of("0123456789") == std::string::npos;
  const unsigned long n = digits ? std::stoul(key) : 0;
  return n <= max ? static_cast<u32>(n) : 0;
}

// A head_dims key: a head dim in 1..1024.
u32 head_dim_key(const std::string& key) {
  const u32 d = plain_decimal_key(key, 1024);
  if (d == 0)
    detail::fail("head_dims." + key, "key must be a head_dim in 1..1024 in plain decimal");
  return d;
}

// A tile_heights key (version 4): a BM in 1..4096, spelt one way like head dims.
u32 tile_height_key(const std::string& key, const std::string& field) {
  const u32 bm = plain_decimal_key(key, kMaxTileHeight);
  if (bm == 0)
    detail::fail(field, fmt::format("key must be a tile height (BM) in 1..{} in plain decimal",
                                    kMaxTileHeight));
  return bm;
}

// A paged key (version 7): TMA boxes per K/V block, 1..4096 (a box holds at least one of BN <= 4096
// keys), spelt one way like head dims.
u32 boxes_key(const std::string& key, const std::string& field) {
  const u32 boxes = plain_decimal_key(key, kMaxBlockN);
  if (boxes == 0)
    detail::fail(field, fmt::format("key must be a count of TMA boxes per K/V block in 1..{} in "
                                    "plain decimal",
                                    kMaxBlockN));
  return boxes;
}

// An entry's paged factors (version 7): {"<boxes>": factor, ...}, each factor in (0, 100].
std::map<u32, double> paged_from_json(const json& members, const std::string& field) {
  using namespace detail;
  require_object(members, "field '" + field + "'");
  std::map<u32, double> factors;
  for (auto it = members.begin(); it != members.end(); ++it) {
    const std::string member = field + "." + it.key();
    const u32 boxes = boxes_key(it.key(), member);
    const double factor = as_double(it.value(), member);
    const std::string problem = paged_factor_problem(factor);
    if (!problem.empty()) fail(member, problem);
    factors[boxes] = factor;
  }
  return factors;
}

// Member `key` of `object` (whose fields are named from `prefix`), a number that `problem` (one
// of value_limits.hpp's) accepts, or nothing where the object has no such member.
std::optional<double> checked_number(const json& object, const std::string& prefix, const char* key,
                                     std::string (*problem)(double)) {
  if (!object.contains(key)) return std::nullopt;
  const std::string field = prefix + key;
  const double value = detail::as_double(object[key], field);
  const std::string why = problem(value);
  if (!why.empty()) detail::fail(field, why);
  return value;
}

CostCoefficients scaled(const CostCoefficients& c, double f) {
  return CostCoefficients{c.fixed_us * f, c.us_per_block * f, c.us_per_masked_block * f};
}

// The per-block costs of `c` for blocks of `keys` keys instead of `table_keys` (the fixed cost per
// tile stays): a block's work grows with its keys. Unchanged when table_keys is 0 (the table does
// not say) or equal.
CostCoefficients per_block_scaled(const CostCoefficients& c, u32 keys, u32 table_keys) {
  if (table_keys == 0 || keys == table_keys) return c;
  const double f = double(keys) / double(table_keys);
  return CostCoefficients{c.fixed_us, c.us_per_block * f, c.us_per_masked_block * f};
}

constexpr u32 kCostFormatVersion = 8;

// A field of a cost file and the version that added it: a file holds only the fields of its
// version, and a field of a later version in an earlier file is an unknown field.
struct VersionedField {
  const char* name;
  u32 since;
};
// The top level's fields and a head_dims entry's, in the order errors list them.
constexpr VersionedField kTableFields[] = {
    {"format", 1}, {"version", 1},  {"device", 1},  {"units", 1},    {"note", 1},
    {"sms", 2},    {"l2_bytes", 2}, {"block_n", 5}, {"hbm_gbps", 8}, {"head_dims", 1}};
constexpr VersionedField kEntryFields[] = {
    {"fixed_us", 1},    {"us_per_block", 1},    {"us_per_masked_block", 1},
    {"ctas_per_sm", 2}, {"shared_rates", 2},    {"cta_launch_us", 3},
    {"block_m", 4},     {"tile_heights", 4},    {"schedulers", 6},
    {"paged", 7},       {"us_per_saved_row", 8}};

// The names of `fields` a file of `version` may hold.
template <std::size_t N>
std::vector<const char*> fields_of_version(const VersionedField (&fields)[N], u32 version) {
  std::vector<const char*> names;
  for (const VersionedField& f : fields)
    if (f.since <= version) names.push_back(f.name);
  return names;
}

constexpr u32 kMaxCtasPerSm = 64;  // far above any device's limit (32 on Hopper)

// The three tile-cost coefficients as an entry holds them (to_json; coefficients_from_json reads).
json coefficients_to_json(const CostCoefficients& c) {
  return json{{"fixed_us", c.fixed_us},
              {"us_per_block", c.us_per_block},
              {"us_per_masked_block", c.us_per_masked_block}};
}

// The three tile-cost coefficients of an entry, each in the range cost files allow, and not all
// zero: tiles of no time make every makespan 0, and the speed-ups and distances to the bound that
// `compare` and `recommend` divide by it NaN.
CostCoefficients coefficients_from_json(const json& entry, const std::string& prefix) {
  using namespace detail;
  const auto coefficient = [&](const char* name) {
    const std::string field = prefix + name;
    const double us = as_double(require(entry, name, prefix), field);
    const std::string problem = cost_coefficient_problem(us);
    if (!problem.empty()) fail(field, problem);
    return us;
  };
  CostCoefficients c;
  c.fixed_us = coefficient("fixed_us");
  c.us_per_block = coefficient("us_per_block");
  c.us_per_masked_block = coefficient("us_per_masked_block");
  if (c.fixed_us == 0 && c.us_per_block == 0 && c.us_per_masked_block == 0)
    fail(prefix.substr(0, prefix.size() - 1),  // the entry: "head_dims.128"
         "fixed_us, us_per_block and us_per_masked_block are all 0: every tile would take no "
         "time, and no schedule could be told from another");
  return c;
}

// The members of `members` (the object field `field` of an entry), each the three tile-cost
// coefficients: `key(member key, its field)` turns a member's key into its map key (failing by
// name), `store(map key, coefficients)` keeps them.
template <class Key, class Store>
void read_coefficient_map(const json& members, const std::string& field, Key&& key,
                          Store&& store) {
  using namespace detail;
  require_object(members, "field '" + field + "'");
  for (auto it = members.begin(); it != members.end(); ++it) {
    const std::string member = field + "." + it.key();
    const auto k = key(it.key(), member);
    require_object(it.value(), "field '" + member + "'");
    check_known_fields(it.value(), {"fixed_us", "us_per_block", "us_per_masked_block"},
                       member + ".");
    store(k, coefficients_from_json(it.value(), member + "."));
  }
}

// A head_dim entry's occupancy fields (version 2): ctas_per_sm, and shared_rates with one rate in
// (0, 1] for each k = 2 .. ctas_per_sm (may be left out when ctas_per_sm is 1).
SmSharing sharing_from_json(const json& entry, const std::string& prefix) {
  using namespace detail;
  SmSharing s;
  s.ctas_per_sm = as_u32(require(entry, "ctas_per_sm", prefix), prefix + "ctas_per_sm");
  if (s.ctas_per_sm == 0 || s.ctas_per_sm > kMaxCtasPerSm)
    fail(prefix + "ctas_per_sm", fmt::format("must be in 1..{}", kMaxCtasPerSm));
  if (!entry.contains("shared_rates")) {
    if (s.ctas_per_sm > 1)
      fail(prefix + "shared_rates",
           fmt::format("required with ctas_per_sm {}: the rate of each busy CTA when 2 .. {} "
                       "CTAs share the SM",
                       s.ctas_per_sm, s.ctas_per_sm));
    return s;
  }
  const json& rates = entry["shared_rates"];
  if (!rates.is_array()) fail(prefix + "shared_rates", "must be an array, got " + describe(rates));
  if (rates.size() != s.ctas_per_sm - 1)
    fail(prefix + "shared_rates",
         fmt::format("needs {} rate(s), one for each of 2 .. {} busy CTAs, got {}",
                     s.ctas_per_sm - 1, s.ctas_per_sm, rates.size()));
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const std::string field = fmt::format("{}shared_rates[{}]", prefix, i);
    const double r = as_double(rates[i], field);
    if (!(r > 0 && r <= 1)) fail(field, fmt::format("must be in (0, 1], got {}", r));
    s.shared_rates.push_back(r);
  }
  return s;
}

}  // namespace

double SmSharing::rate(u32 busy) const {
  if (busy <= 1) return 1.0;
  const auto table = [&](u32 k) { return k <= 1 ? 1.0 : shared_rates.at(k - 2); };
  const u32 last = std::max<u32>(1, std::min<u32>(ctas_per_sm, u32(shared_rates.size()) + 1));
  if (busy <= last) return table(busy);
  return double(last) * table(last) / double(busy);
}

SmSharing CostModel::sharing(u32 head_dim) const {
  if (sharing_by_head_dim.empty()) return SmSharing{};
  const auto at_or_above = sharing_by_head_dim.lower_bound(head_dim);
  if (at_or_above != sharing_by_head_dim.end()) return at_or_above->second;
  return sharing_by_head_dim.rbegin()->second;
}

double CostModel::saved_row_us(u32 head_dim) const {
  if (saved_row_us_by_head_dim.empty()) return 0;
  const auto hi = saved_row_us_by_head_dim.lower_bound(head_dim);
  if (hi != saved_row_us_by_head_dim.end() && hi->first == head_dim) return hi->second;
  if (hi == saved_row_us_by_head_dim.begin()) return hi->second * head_dim / hi->first;
  const auto lo = std::prev(hi);
  if (hi == saved_row_us_by_head_dim.end()) return lo->second * head_dim / lo->first;
  const double f = double(head_dim - lo->first) / double(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

double CostModel::cta_launch_us(u32 head_dim) const {
  if (cta_launch_us_by_head_dim.empty()) return 0;
  const auto hi = cta_launch_us_by_head_dim.lower_bound(head_dim);
  if (hi == cta_launch_us_by_head_dim.end()) return std::prev(hi)->second;
  if (hi->first == head_dim || hi == cta_launch_us_by_head_dim.begin()) return hi->second;
  const auto lo = std::prev(hi);
  const double f = double(head_dim - lo->first) / double(hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

CostCoefficients CostModel::coefficients(u32 head_dim, u32 block_m, SchedulerKind kind) const {
  const auto kinds = by_scheduler.find(head_dim);
  if (kinds != by_scheduler.end()) {
    const auto entry = kinds->second.find(kind);
    const auto own = block_m_by_head_dim.find(head_dim);
    if (entry != kinds->second.end() &&
        (own == block_m_by_head_dim.end() || own->second == block_m))
      return entry->second;
  }
  return coefficients(head_dim, block_m);
}

CostCoefficients CostModel::coefficients(u32 head_dim, u32 block_m) const {
  const auto heights = by_tile_height.find(head_dim);
  if (heights != by_tile_height.end()) {
    const auto entry = heights->second.find(block_m);
    if (entry != heights->second.end()) return entry->second;
  }
  return coefficients(head_dim);
}

bool CostModel::measured_at(u32 head_dim, u32 block_m) const {
  const auto own = block_m_by_head_dim.find(head_dim);
  if (own != block_m_by_head_dim.end() && own->second == block_m) return true;
  const auto heights = by_tile_height.find(head_dim);
  return heights != by_tile_height.end() && heights->second.count(block_m) != 0;
}

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

CostCoefficients CostModel::coefficients(const Workload& w) const {
  const CostCoefficients c =
      per_block_scaled(coefficients(w.head_dim, w.block_m, w.scheduler), w.block_n, block_n);
  const double paged = paged_factor(w);
  return CostCoefficients{c.fixed_us, c.us_per_block * paged, c.us_per_masked_block * paged};
}

double CostModel::paged_factor(const Workload& w) const {
  if (w.page_size == 0) return 1.0;
  return paged_factor(w.head_dim, kv_block_boxes(w.page_size, w.block_n));
}

double CostModel::paged_factor(u32 head_dim, u32 boxes) const {
  const auto dim = paged_by_head_dim.find(head_dim);
  if (dim == paged_by_head_dim.end() || dim->second.empty()) return 1.0;
  const std::map<u32, double>& factors = dim->second;
  const auto hi = factors.lower_bound(boxes);
  if (hi == factors.end()) return std::prev(hi)->second;
  if (hi->first == boxes || hi == factors.begin()) return hi->second;
  const auto lo = std::prev(hi);
  const double f = std::log2(double(boxes) / double(lo->first)) /
                   std::log2(double(hi->first) / double(lo->first));
  return lo->second + f * (hi->second - lo->second);
}

CostModel CostModel::with_block_n(u32 keys) const {
  CostModel m = *this;
  m.block_n = keys;
  for (auto& [d, k] : m.by_head_dim) k = per_block_scaled(k, keys, block_n);
  for (auto& [d, heights] : m.by_tile_height)
    for (auto& [bm, k] : heights) k = per_block_scaled(k, keys, block_n);
  for (auto& [d, kinds] : m.by_scheduler)
    for (auto& [kind, k] : kinds) k = per_block_scaled(k, keys, block_n);
  return m;
}

double CostModel::tile_time_us(const Workload& w, const TileCost& c) const {
  return coefficients(w).tile_time_us(c);
}

u32 traces_block_n(const std::vector<Trace>& traces, const std::vector<std::string>& names) {
  if (traces.empty()) throw std::invalid_argument("no traces to take a block size from");
  const auto name = [&](std::size_t i) {
    return i < names.size() ? names[i] : fmt::format("trace {}", i + 1);
  };
  const u32 bn = traces.front().workload.block_n;
  for (std::size_t i = 1; i < traces.size(); ++i)
    if (traces[i].workload.block_n != bn)
      throw std::invalid_argument(fmt::format(
          "the traces count KV blocks of different sizes: BN {} ({}) and BN {} ({}); a cost "
          "table's per-block costs are per block of one size, so fit them separately",
          bn, name(0), traces[i].workload.block_n, name(i)));
  return bn;
}

CostModel CostModel::from_json(const json& j) {
  using namespace detail;
  require_object(j, "a cost table");
  const std::string format = as_string(require(j, "format", ""), "format");
  if (format != "tilesched-cost")
    fail("format", "expected \"tilesched-cost\", got \"" + format + "\"");
  const u32 version = as_u32(require(j, "version", ""), "version");
  if (version < 1 || version > kCostFormatVersion)
    fail("version", fmt::format("unsupported cost table version {} (this build reads 1 .. {})",
                                version, kCostFormatVersion));
  check_known_fields(j, fields_of_version(kTableFields, version), "");
  CostModel m;
  m.device = as_string(require(j, "device", ""), "device");
  if (version >= 5 && j.contains("block_n")) {
    m.block_n = as_u32(j["block_n"], "block_n");
    if (m.block_n == 0 || m.block_n > kMaxBlockN)
      fail("block_n",
           fmt::format("must be in 1..{} (keys per KV block), got {}", kMaxBlockN, m.block_n));
  }
  if (version >= 8)
    if (const auto gbps = checked_number(j, "", "hbm_gbps", hbm_bandwidth_problem))
      m.hbm_bytes_per_us = *gbps * 1e3;  // GB/s = 1e3 bytes per us
  if (version >= 2) {
    m.multiprocessors = as_u32(require(j, "sms", ""), "sms");
    if (m.multiprocessors == 0 || m.multiprocessors > 100000) fail("sms", "must be in 1..100000");
    m.l2_bytes = as_u64(require(j, "l2_bytes", ""), "l2_bytes");
    if (m.l2_bytes == 0) fail("l2_bytes", "must be at least 1");
  }
  const json& dims = require(j, "head_dims", "");
  require_object(dims, "field 'head_dims'");
  if (dims.empty()) fail("head_dims", "needs at least one head_dim entry");
  for (auto it = dims.begin(); it != dims.end(); ++it) {
    const std::string prefix = "head_dims." + it.key() + ".";
    const u32 d = head_dim_key(it.key());
    require_object(it.value(), "field 'head_dims." + it.key() + "'");
    check_known_fields(it.value(), fields_of_version(kEntryFields, version), prefix);
    m.by_head_dim[d] = coefficients_from_json(it.value(), prefix);
    if (version >= 4 && it.value().contains("block_m")) {
      const std::string field = prefix + "block_m";
      const u32 bm = as_u32(it.value()["block_m"], field);
      if (bm == 0 || bm > kMaxTileHeight)
        fail(field, fmt::format("must be a tile height in 1..{}, got {}", kMaxTileHeight, bm));
      m.block_m_by_head_dim[d] = bm;
    }
    if (version >= 4 && it.value().contains("tile_heights"))
      read_coefficient_map(it.value()["tile_heights"], prefix + "tile_heights",
                           [&](const std::string& key, const std::string& field) {
                             const u32 bm = tile_height_key(key, field);
                             const auto own = m.block_m_by_head_dim.find(d);
                             if (own != m.block_m_by_head_dim.end() && own->second == bm)
                               fail(field, fmt::format("BM {} is the entry's own block_m: its "
                                                       "coefficients are the entry's, not a tile "
                                                       "height of their own",
                                                       bm));
                             return bm;
                           },
                           [&](u32 bm, const CostCoefficients& c) { m.by_tile_height[d][bm] = c; });
    if (version >= 6 && it.value().contains("schedulers"))
      read_coefficient_map(
          it.value()["schedulers"], prefix + "schedulers",
          [](const std::string& key, const std::string& field) {
            const std::optional<SchedulerKind> kind = parse_enum<SchedulerKind>(key);
            // One spelling per kind, as for the numeric keys: an alias would let two keys name
            // one.
            if (!kind || to_string(*kind) != key)
              fail(field,
                   fmt::format("key must be a scheduler kind ({})", enum_choices<SchedulerKind>()));
            return *kind;
          },
          [&](SchedulerKind kind, const CostCoefficients& c) { m.by_scheduler[d][kind] = c; });
    if (version >= 2) m.sharing_by_head_dim[d] = sharing_from_json(it.value(), prefix);
    if (version >= 7 && it.value().contains("paged")) {
      std::map<u32, double> factors = paged_from_json(it.value()["paged"], prefix + "paged");
      if (!factors.empty()) m.paged_by_head_dim[d] = std::move(factors);
    }
    if (version >= 8)
      if (const auto us = checked_number(it.value(), prefix, "us_per_saved_row", saved_row_problem))
        m.saved_row_us_by_head_dim[d] = *us;
    if (version >= 3)
      if (const auto us = checked_number(it.value(), prefix, "cta_launch_us", cta_launch_problem))
        m.cta_launch_us_by_head_dim[d] = *us;
  }
  return m;
}

json CostModel::to_json() const {
  json dims = json::object();
  for (const auto& [d, c] : by_head_dim) {
    const SmSharing s = sharing(d);
    json entry = coefficients_to_json(c);
    entry["ctas_per_sm"] = s.ctas_per_sm;
    entry["shared_rates"] = s.shared_rates;
    entry["cta_launch_us"] = cta_launch_us(d);
    const auto own = block_m_by_head_dim.find(d);
    if (own != block_m_by_head_dim.end()) entry["block_m"] = own->second;
    const auto heights = by_tile_height.find(d);
    if (heights != by_tile_height.end() && !heights->second.empty()) {
      json h = json::object();
      for (const auto& [bm, k] : heights->second)
        h[fmt::format("{}", bm)] = coefficients_to_json(k);
      entry["tile_heights"] = h;
    }
    const auto kinds = by_scheduler.find(d);
    if (kinds != by_scheduler.end() && !kinds->second.empty()) {
      json k = json::object();
      for (const auto& [kind, c] : kinds->second) k[to_string(kind)] = coefficients_to_json(c);
      entry["schedulers"] = k;
    }
    const auto saved = saved_row_us_by_head_dim.find(d);
    if (saved != saved_row_us_by_head_dim.end()) entry["us_per_saved_row"] = saved->second;
    const auto paged = paged_by_head_dim.find(d);
    if (paged != paged_by_head_dim.end() && !paged->second.empty()) {
      json p = json::object();
      for (const auto& [boxes, factor] : paged->second) p[fmt::format("{}", boxes)] = factor;
      entry["paged"] = p;
    }
    dims[fmt::format("{}", d)] = entry;
  }
  json out{
      {"format", "tilesched-cost"},
      {"version", kCostFormatVersion},
      {"device", device},
      {"units",
       "microseconds per tile on one SM; time = fixed_us + us_per_block * "
       "unmasked_kv_blocks + us_per_masked_block * masked_kv_blocks; with k CTAs busy on "
       "one SM each progresses at shared_rates[k - 2] of its solo speed; a CTA that starts in a "
       "freed slot holds it cta_launch_us before its first tile; block_m is the tile height the "
       "entry was measured at, tile_heights the coefficients of other heights, schedulers those "
       "of a scheduler kind's own kernel at the entry's height; a KV block is block_n keys where "
       "given (a workload of another BN: per-block costs scaled by BN / block_n); paged: the "
       "factor on the per-block costs of a paged cache whose K/V blocks load as that many TMA "
       "boxes; us_per_saved_row: what a piece of a split tile takes beyond a tile of its blocks, "
       "per query row it saves for the combine; hbm_gbps: the HBM bandwidth the decode tiles "
       "streaming at once share (absent: 4800)"},
      {"sms", multiprocessors},
      {"l2_bytes", l2_bytes},
      {"head_dims", dims}};
  if (block_n != 0) out["block_n"] = block_n;
  if (hbm_bytes_per_us != kDefaultHbmBytesPerUs) out["hbm_gbps"] = hbm_bytes_per_us / 1e3;
  return out;
}

namespace {

// Every built-in profile, parsed on first use by the reader of cost files (a built-in table is a
// shipped cost file compiled in) and kept: the replay asks for the workload's profile per call.
const std::vector<std::pair<std::string, CostModel>>& builtin_models() {
  static const std::vector<std::pair<std::string, CostModel>> models = [] {
    std::vector<std::pair<std::string, CostModel>> parsed;
    for (const auto& [name, text] : detail::builtin_cost_tables())
      parsed.emplace_back(name, CostModel::from_json(detail::parse_json_text(
                                    text, "built-in cost profile " + name)));
    return parsed;
  }();
  return models;
}

}  // namespace

std::vector<std::string> CostModel::builtin_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::builtin_cost_tables()) names.push_back(name);
  return names;
}

CostModel CostModel::builtin(const std::string& profile) {
  for (const auto& [name, model] : builtin_models())
    if (name == profile) return model;
  throw std::invalid_argument(
      fmt::format("unknown cost profile \"{}\" (built in: {}; or load a cost file)", profile,
                  fmt::join(builtin_names(), ", ")));
}

CostModel CostModel::load(const std::string& path) {
  return detail::read_json_file(path, from_json);
}

namespace {

// The combine's blocks that work for one split tile of `query_rows` rows per query head: one per
// consumer warpgroup (64 rows of the kernel's tile) whose first row the tile owns; the others
// exit at once (gpu/src/sm90/combine.cuh). A decode tile's rows are its group's query heads, T =
// decode_tile_tokens() rows each (SPEC §6): row r is query head r / T's token r % T.
u32 combine_blocks(const Workload& w, u32 query_rows) {
  constexpr u32 kWarpgroupRows = 64;
  const u32 tokens = w.decoding ? w.decode_tile_tokens() : w.block_m;
  u32 blocks = 0;
  for (u32 first = 0; first < w.block_m; first += kWarpgroupRows) {
    const bool owned = w.decoding ? first % tokens < query_rows && first / tokens < w.group_size()
                                  : first < query_rows;
    if (owned) ++blocks;
  }
  return blocks;
}

}  // namespace

u32 CostModel::combine_blocks_per_sm(u32 head_dim) const {
  if (combine_ctas_per_sm.empty()) return 1;
  const auto at = combine_ctas_per_sm.lower_bound(head_dim);
  return std::max<u32>(1, at != combine_ctas_per_sm.end() ? at->second
                                                          : combine_ctas_per_sm.rbegin()->second);
}

double CostModel::combine_time_us(const Workload& w, const std::vector<TraceEvent>& events) const {
  struct Split {
    u32 pieces = 0;
    u32 rows = 0;
    u32 query_rows = 0;
  };
  std::map<u32, Split> split;  // by tile
  for (const TraceEvent& e : events)
    if (processes_part(e, whole_tile_cost(w, e))) {
      Split& s = split[e.linear_idx];
      ++s.pieces;
      s.rows = tile_output_rows(w, e);
      s.query_rows = e.query_rows;
    }
  if (split.empty()) return 0;
  double bytes = 0, loop_us = 0, blocks = 0;
  for (const auto& [tile, s] : split) {
    bytes += double(s.rows) * s.pieces * (w.head_dim + 1) * 4.0;  // the pieces' partial O and LSE
    bytes += double(s.rows) * (w.head_dim * 2.0 + 4.0);           // the tile's O and LSE
    const bool one_token = w.decoding && s.query_rows == 1;
    const double per_piece = one_token ? combine_us_per_piece_one_token : combine_us_per_piece;
    loop_us = std::max(loop_us, combine_fixed_us + per_piece * s.pieces);
    blocks += combine_blocks(w, s.query_rows);
  }
  const double slots = double(multiprocessors) * combine_blocks_per_sm(w.head_dim);
  const double waves = std::ceil(blocks / slots);
  return cta_launch_us(w.head_dim) + std::max(bytes / hbm_bytes_per_us, waves * loop_us);
}

u32 tile_output_rows(const Workload& w, const TraceEvent& e) {
  return e.query_rows * w.tile_heads(e.head_idx).count;
}

double stream_bytes(const Workload& w, const TraceEvent& e) {
  if (!w.decoding || e.prompt_idx >= w.batch_size() || w.q_lens[e.prompt_idx] > kMaxDecodeTokens)
    return 0;
  const std::uint64_t kv = w.key_len(e.prompt_idx);
  const std::uint64_t first = std::uint64_t(e.kv_block_begin) * w.block_n;
  const std::uint64_t end =
      std::min<std::uint64_t>(first + std::uint64_t(e.kv_blocks) * w.block_n, kv);
  return end > first ? double(end - first) * w.head_dim * 2.0 * 2.0 : 0.0;  // K and V, bf16
}

double CostModel::decode_stream_us(const Workload& w, const std::vector<TraceEvent>& events) const {
  double bytes = 0;
  for (const TraceEvent& e : events) bytes += stream_bytes(w, e);
  return bytes / hbm_bytes_per_us;
}

TileCost event_tile_cost(const Workload& w, const TraceEvent& e) {
  const TileCost whole = whole_tile_cost(w, e);
  if (!processes_part(e, whole)) return whole;
  return piece_cost(whole, e.kv_block_begin, e.kv_block_begin + e.kv_blocks);
}

TileCost whole_tile_cost(const Workload& w, const TraceEvent& e) {
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
  return w.tile_cost(e.prompt_idx, e.prompt_offset);
}

namespace {

// Whether trace `t` ran tiles of `head_dim` and (when block_m > 0) of that height on a contiguous
// cache, prefill only: the coefficients are the contiguous cost, a paged cache's is
// fit_paged_factor's; a decoding workload's tiles stream their K and V, or run beside tiles that
// do, so their times are not what a tile takes alone (fit_streams fits them).
bool of_tiles(const Trace& t, u32 head_dim, u32 block_m) {
  return t.workload.page_size == 0 && !t.workload.decoding && t.workload.head_dim == head_dim &&
         (block_m == 0 || t.workload.block_m == block_m);
}

// How many contiguous traces of `head_dim` (and of tile height `block_m` when > 0) ran a decoding
// workload.
std::size_t decoding_traces_of(const std::vector<Trace>& traces, u32 head_dim, u32 block_m) {
  return std::size_t(std::count_if(traces.begin(), traces.end(), [&](const Trace& t) {
    return t.workload.page_size == 0 && t.workload.decoding && t.workload.head_dim == head_dim &&
           (block_m == 0 || t.workload.block_m == block_m);
  }));
}

// Whether event `e` of workload `w` is a piece of a split tile: its time holds the save of its
// rows' partial state beside its blocks (fit_streams fits it).
bool is_piece(const Workload& w, const TraceEvent& e) {
  return processes_part(e, whole_tile_cost(w, e));
}

// How many traces of `head_dim` (and of tile height `block_m` when > 0) ran on a paged cache.
std::size_t paged_traces_of(const std::vector<Trace>& traces, u32 head_dim, u32 block_m) {
  return std::size_t(std::count_if(traces.begin(), traces.end(), [&](const Trace& t) {
    return t.workload.page_size != 0 && t.workload.head_dim == head_dim &&
           (block_m == 0 || t.workload.block_m == block_m);
  }));
}

// The mean gap between a CTA's consecutive tiles (the next tile's start minus this one's end) in
// `traces`, and how many pairs it was measured on.
std::pair<double, std::size_t> mean_handoff(const std::vector<const Trace*>& traces) {
  double gaps = 0;
  std::size_t pairs = 0;
  for (const Trace* tp : traces) {
    std::vector<const TraceEvent*> by_cta;
    for (const TraceEvent& e : tp->events) by_cta.push_back(&e);
    std::stable_sort(by_cta.begin(), by_cta.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->cta != b->cta ? a->cta < b->cta : a->start_us < b->start_us;
    });
    for (std::size_t i = 1; i < by_cta.size(); ++i) {
      if (by_cta[i]->cta != by_cta[i - 1]->cta) continue;
      gaps += by_cta[i]->start_us - by_cta[i - 1]->end_us;
      ++pairs;
    }
  }
  return {pairs > 0 ? gaps / double(pairs) : 0.0, pairs};
}

// " at BM 192" when a fit is restricted to one tile height, for its messages.
std::string at_height(u32 block_m) {
  return block_m == 0 ? std::string() : fmt::format(" at BM {}", block_m);
}

// Which masks the traces of one head_dim were measured with: what to add depends on it.
struct MasksPresent {
  bool causal = false, none = false;
};

// Why the design matrix [1, unmasked, masked] has rank < 3, naming the coefficient the tiles
// leave open and the kind of tile the traces lack.
std::string undetermined_coefficient(const Eigen::MatrixXd& A, MasksPresent masks) {
  const auto constant = [&](Eigen::Index col) { return (A.col(col).array() == A(0, col)).all(); };
  if (constant(1))
    return fmt_count("us_per_block cannot be determined: every tile has", A(0, 1),
                     "unmasked KV block",
                     ", so their time cannot be told apart from fixed_us (add tiles with other "
                     "KV lengths)");
  if (constant(2)) {
    // Causal tiles whose diagonal always spans the same number of blocks (BM = BN, keys as long
    // as the queries) vary no more than non-causal ones: say which tiles would.
    const char* missing =
        masks.causal && !masks.none
            ? " (the traces are all causal, every diagonal spanning the same number of KV blocks: "
              "add a trace without a mask, or causal tiles whose diagonal spans another number, "
              "e.g. with BM different from BN)"
        : !masks.causal
            ? " (add a causal trace, or sequences whose key length is not a multiple of BN)"
            : " (add sequences whose key length is not a multiple of BN)";
    return fmt_count("us_per_masked_block cannot be determined: every tile has", A(0, 2),
                     "masked KV block", missing);
  }
  return "us_per_block and us_per_masked_block cannot be told apart: the unmasked and masked "
         "block counts of the tiles move together (add tiles with other KV lengths or masks)";
}

// Calls visit(event index, busy count, dt) for every stretch of time dt during which event i ran
// while `busy` CTAs (its own included) ran tiles on its SM. Events without an SM are alone; tiles
// of one CTA that overlap (a trace edited by hand) count as one busy CTA.
// How many different CTAs the events name (a handful: the CTAs resident on one SM).
u32 distinct_ctas(const Trace& t, const std::vector<std::size_t>& events) {
  u32 n = 0;
  for (std::size_t a = 0; a < events.size(); ++a) {
    bool seen = false;
    for (std::size_t b = 0; b < a && !seen; ++b)
      seen = t.events[events[b]].cta == t.events[events[a]].cta;
    n += seen ? 0 : 1;
  }
  return n;
}

template <class Visit>
void sweep_busy_ctas(const Trace& t, Visit visit) {
  std::map<std::int32_t, std::vector<std::size_t>> by_sm;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const TraceEvent& e = t.events[i];
    if (e.sm_id < 0)
      visit(i, 1u, e.end_us - e.start_us);
    else if (e.end_us > e.start_us)  // a tile of no duration shares nothing
      by_sm[e.sm_id].push_back(i);
  }
  struct Point {
    double time;
    int change;  // -1 an end, +1 a start: ends first, so back-to-back tiles do not overlap
    std::size_t event;
    bool operator<(const Point& o) const {
      return time != o.time       ? time < o.time
             : change != o.change ? change < o.change
                                  : event < o.event;
    }
  };
  std::vector<Point> points;
  std::vector<std::size_t> running;
  for (const auto& entry : by_sm) {
    const std::vector<std::size_t>& events = entry.second;
    points.clear();
    for (const std::size_t i : events) {
      points.push_back({t.events[i].start_us, +1, i});
      points.push_back({t.events[i].end_us, -1, i});
    }
    std::sort(points.begin(), points.end());
    running.clear();
    double since = 0;
    for (const Point& p : points) {
      const double dt = p.time - since;
      if (dt > 0) {
        const u32 busy = distinct_ctas(t, running);
        for (const std::size_t i : running) visit(i, busy, dt);
      }
      since = p.time;
      if (p.change > 0)
        running.push_back(p.event);
      else
        running.erase(std::find(running.begin(), running.end(), p.event));
    }
  }
}

// The traces of `head_dim` that ran one CTA per SM (their tile times are solo costs), and how
// many of that head_dim's traces were left out for sharing SMs.
std::vector<const Trace*> one_cta_per_sm_traces(const std::vector<Trace>& traces, u32 head_dim,
                                                u32 block_m, std::size_t& shared) {
  std::vector<const Trace*> solo;
  shared = 0;
  for (const Trace& t : traces) {
    if (!of_tiles(t, head_dim, block_m)) continue;
    if (max_busy_per_sm(t) <= 1)
      solo.push_back(&t);
    else
      ++shared;
  }
  return solo;
}

}  // namespace

std::vector<std::vector<double>> time_by_busy_ctas(const Trace& t) {
  std::vector<std::vector<double>> by_busy(t.events.size());
  sweep_busy_ctas(t, [&](std::size_t i, u32 busy, double dt) {
    if (by_busy[i].size() < busy) by_busy[i].resize(busy, 0.0);
    by_busy[i][busy - 1] += dt;
  });
  return by_busy;
}

u32 max_busy_per_sm(const Trace& t) {
  u32 most = t.events.empty() ? 0 : 1;
  sweep_busy_ctas(t, [&](std::size_t, u32 busy, double) { most = std::max(most, busy); });
  return most;
}

CostFit fit_cost(const std::vector<Trace>& traces, u32 head_dim, u32 block_m) {
  std::size_t shared = 0;
  const std::vector<const Trace*> solo = one_cta_per_sm_traces(traces, head_dim, block_m, shared);
  // Pieces of split tiles hold their rows' save beside their blocks: whole tiles only.
  std::size_t n = 0;
  for (const Trace* t : solo)
    for (const TraceEvent& e : t->events) n += is_piece(t->workload, e) ? 0 : 1;
  const std::size_t paged = paged_traces_of(traces, head_dim, block_m);
  const std::size_t decoding = decoding_traces_of(traces, head_dim, block_m);
  if (n < 3)
    throw std::invalid_argument(fmt::format(
        "cannot fit head_dim {}{}: {} measured tiles, need at least 3{}{}{}", head_dim,
        at_height(block_m), n,
        shared == 0 ? ""
                    : fmt::format(" ({} trace(s) of it left out: their CTAs shared SMs, so their "
                                  "tiles took longer than their cost; record one at C = SMs)",
                                  shared),
        paged == 0 ? ""
                   : fmt::format(" ({} paged trace(s) of it left out: the coefficients are fitted "
                                 "on contiguous caches; record it without --page-size too)",
                                 paged),
        decoding == 0
            ? ""
            : fmt::format(" ({} decoding trace(s) of it left out: their tiles stream from HBM or "
                          "run beside tiles that do; the tile costs are fitted on prefill traces)",
                          decoding)));
  // One row per tile: [1, unmasked blocks, masked blocks] * coefficients = measured time.
  Eigen::MatrixXd A(n, 3);
  Eigen::VectorXd y(n);
  std::size_t r = 0;
  MasksPresent masks;
  for (const Trace* tp : solo) {
    const Trace& t = *tp;
    (t.workload.mask == Mask::Causal ? masks.causal : masks.none) = true;
    for (const TraceEvent& e : t.events) {
      if (is_piece(t.workload, e)) continue;
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
        "cannot fit head_dim {}{}: the measured tiles do not determine all three coefficients: "
        "{}",
        head_dim, at_height(block_m), undetermined_coefficient(A, masks)));
  const Eigen::Vector3d x = qr.solve(y);
  CostFit fit;
  fit.rms_residual_us = std::sqrt((A * x - y).squaredNorm() / double(n));
  const double rms_measured = std::sqrt(y.squaredNorm() / double(n));
  fit.relative_rms_error = rms_measured > 0 ? fit.rms_residual_us / rms_measured : 0;
  fit.samples = n;
  // The hand-off: per CTA, each tile's end to its next tile's start.
  std::tie(fit.handoff_us, fit.handoff_samples) = mean_handoff(solo);
  fit.coefficients = CostCoefficients{x(0) + fit.handoff_us, x(1), x(2)};
  return fit;
}

std::vector<std::pair<u32, u32>> paged_groups(const std::vector<Trace>& traces) {
  std::set<std::pair<u32, u32>> groups;
  for (const Trace& t : traces)
    if (t.workload.page_size != 0)
      groups.insert(
          {t.workload.head_dim, kv_block_boxes(t.workload.page_size, t.workload.block_n)});
  return {groups.begin(), groups.end()};
}

PagedFit fit_paged_factor(const std::vector<Trace>& traces, u32 head_dim, u32 boxes,
                          const CostModel& contiguous) {
  std::vector<const Trace*> solo;
  std::size_t shared = 0;
  for (const Trace& t : traces) {
    const Workload& w = t.workload;
    if (w.page_size == 0 || w.head_dim != head_dim ||
        kv_block_boxes(w.page_size, w.block_n) != boxes)
      continue;
    if (max_busy_per_sm(t) <= 1)
      solo.push_back(&t);
    else
      ++shared;
  }
  PagedFit fit;
  fit.traces = solo.size();
  fit.handoff_us = mean_handoff(solo).first;
  // Per tile: x = its per-block cost without pages, y = its measured time as the replay counts it
  // (hand-off included) less the fixed cost, which pages do not change.
  std::vector<double> xs, ys, measured;
  for (const Trace* tp : solo) {
    Workload unpaged = tp->workload;
    unpaged.page_size = 0;
    const CostCoefficients k = contiguous.coefficients(unpaged);
    for (const TraceEvent& e : tp->events) {
      const TileCost c = event_tile_cost(tp->workload, e);
      const double time = e.end_us - e.start_us + fit.handoff_us;
      xs.push_back(k.us_per_block * double(c.kv_blocks - c.masked_blocks) +
                   k.us_per_masked_block * double(c.masked_blocks));
      ys.push_back(time - k.fixed_us);
      measured.push_back(time);
    }
  }
  double xx = 0, xy = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xx += xs[i] * xs[i];
    xy += xs[i] * ys[i];
  }
  if (xx <= 0)
    throw std::invalid_argument(fmt::format(
        "cannot fit the paged factor of head_dim {} at {} TMA box{} per K/V block: {}", head_dim,
        boxes, boxes == 1 ? "" : "es",
        xs.empty() && shared > 0
            ? fmt::format("its {} trace(s) ran CTAs that shared SMs (record them at C = SMs)",
                          shared)
        : xs.empty() ? std::string("no paged tile of it")
                     : std::string("none of its tiles has a KV block of nonzero cost")));
  fit.factor = xy / xx;
  double residuals = 0, times = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    residuals += (fit.factor * xs[i] - ys[i]) * (fit.factor * xs[i] - ys[i]);
    times += measured[i] * measured[i];
  }
  fit.samples = xs.size();
  fit.rms_residual_us = std::sqrt(residuals / double(fit.samples));
  const double rms_measured = std::sqrt(times / double(fit.samples));
  fit.relative_rms_error = rms_measured > 0 ? fit.rms_residual_us / rms_measured : 0;
  return fit;
}

namespace {

// One tile fit_streams looks at: what the trace measured and what the tile costs give.
struct StreamSample {
  u32 head_dim = 0;
  double start_us = 0, end_us = 0;
  double time_us = 0;     // measured, the trace's mean hand-off included
  double handoff_us = 0;  // that hand-off
  double fixed_us = 0;    // the tile costs' fixed part (a hand-off in it)
  double blocks_us = 0;   // its blocks' cost alone
  u32 blocks = 0;
  double demand = 0;  // bytes per µs its blocks ask alone (0: it reads through the L2)
  double rows = 0;    // rows a piece saves (0: a whole tile)
  bool first_piece = false;
  std::size_t trace = 0;
  double asked = 0;  // what the trace's streaming tiles asked, on average, while it streamed (ran)
};

// Each sample's `asked`: the mean, over its streaming part (a decode tile's measured span less its
// fixed part first; any other tile's whole span), of the demands of its trace's samples streaming
// then. `saved` gives each head dim's save per row, which lengthens a piece's fixed part.
void average_demands(std::vector<StreamSample>& samples, const std::map<u32, double>& saved) {
  std::map<std::size_t, std::vector<std::size_t>> by_trace;
  for (std::size_t i = 0; i < samples.size(); ++i) by_trace[samples[i].trace].push_back(i);
  // The measured span holds the fixed part less the hand-off, which falls between tiles.
  const auto stream_start = [&](const StreamSample& x) {
    if (x.demand == 0) return x.start_us;
    const auto s = saved.find(x.head_dim);
    const double fixed = x.fixed_us - x.handoff_us + (s == saved.end() ? 0.0 : s->second * x.rows);
    return std::min(x.end_us, x.start_us + std::max(0.0, fixed));
  };
  struct Step {
    double time;
    double change;
  };
  std::vector<Step> steps;
  std::vector<double> times, level, area;  // the demand's step function and its integral
  for (const auto& [trace, members] : by_trace) {
    steps.clear();
    for (const std::size_t i : members) {
      if (samples[i].demand == 0) continue;
      steps.push_back({stream_start(samples[i]), samples[i].demand});
      steps.push_back({samples[i].end_us, -samples[i].demand});
    }
    std::sort(steps.begin(), steps.end(),
              [](const Step& x, const Step& y) { return x.time < y.time; });
    times.clear();
    level.clear();
    area.clear();
    double total = 0;
    for (const Step& st : steps) {
      if (times.empty() || st.time > times.back()) {
        area.push_back(area.empty() ? 0.0 : area.back() + total * (st.time - times.back()));
        times.push_back(st.time);
        level.push_back(total);
      }
      total += st.change;
      level.back() = total;
    }
    // The integral of the demand from the first step to t.
    const auto integral = [&](double t) {
      const std::size_t k =
          std::size_t(std::upper_bound(times.begin(), times.end(), t) - times.begin());
      return k == 0 ? 0.0 : area[k - 1] + level[k - 1] * (t - times[k - 1]);
    };
    for (const std::size_t i : members) {
      StreamSample& x = samples[i];
      const double from = stream_start(x);
      x.asked = x.end_us > from ? (integral(x.end_us) - integral(from)) / (x.end_us - from) : 0.0;
    }
  }
}

}  // namespace

bool has_streams_or_pieces(const Trace& t) {
  if (max_busy_per_sm(t) > 1) return false;
  return std::any_of(t.events.begin(), t.events.end(), [&](const TraceEvent& e) {
    return stream_bytes(t.workload, e) > 0 || is_piece(t.workload, e);
  });
}

bool has_streams_or_pieces(const std::vector<Trace>& traces) {
  return std::any_of(traces.begin(), traces.end(),
                     [](const Trace& t) { return has_streams_or_pieces(t); });
}

StreamFit fit_streams(const std::vector<Trace>& traces, const CostModel& tiles,
                      double start_hbm_bytes_per_us) {
  StreamFit fit;
  // The decode tiles and pieces it weighs, and the prefill tiles of decoding workloads, which it
  // only reports (their times are the tile costs' whatever it fits).
  std::vector<StreamSample> samples;
  for (std::size_t ti = 0; ti < traces.size(); ++ti) {
    const Trace& t = traces[ti];
    if (max_busy_per_sm(t) > 1) continue;
    const Workload& w = t.workload;
    const CostCoefficients k = tiles.coefficients(w);
    const std::vector<const Trace*> one{&t};
    const double handoff = mean_handoff(one).first;
    bool streams = false;
    for (const TraceEvent& e : t.events) {
      const double bytes = stream_bytes(w, e);
      const bool piece = is_piece(w, e);
      if (bytes <= 0 && !piece && !w.decoding) continue;
      StreamSample x;
      x.head_dim = w.head_dim;
      x.start_us = e.start_us;
      x.end_us = e.end_us;
      x.time_us = e.end_us - e.start_us + handoff;
      x.handoff_us = handoff;
      x.fixed_us = k.fixed_us;
      const TileCost c = event_tile_cost(w, e);
      x.blocks = c.kv_blocks;
      x.blocks_us = k.tile_time_us(c) - k.fixed_us;
      x.demand = bytes > 0 && x.blocks_us > 0 ? bytes / x.blocks_us : 0.0;
      x.rows = piece ? double(tile_output_rows(w, e)) : 0.0;
      x.first_piece = piece && e.kv_block_begin == 0;
      x.trace = ti;
      if (piece) ++fit.pieces[w.head_dim];
      if (bytes > 0) {
        ++fit.decode_tiles;
        streams = true;
      }
      samples.push_back(x);
    }
    fit.decoding_traces += streams ? 1 : 0;
  }
  if (fit.decode_tiles == 0 && fit.pieces.empty())
    throw std::invalid_argument(
        "cannot fit the HBM bandwidth or a piece's save: no decode tile and no piece of a split "
        "tile in the traces that ran one CTA per SM");
  // Unknowns: 1 / bandwidth, then us_per_saved_row of each head dim with pieces.
  std::map<u32, Eigen::Index> column;
  for (const auto& [d, n] : fit.pieces) column[d] = Eigen::Index(1 + column.size());
  std::map<u32, double> saved;
  for (const auto& [d, col] : column) saved[d] = tiles.saved_row_us(d);
  double bandwidth = start_hbm_bytes_per_us;
  std::vector<char> bound(samples.size(), 0), was_bound;
  for (fit.iterations = 1; fit.iterations <= 50; ++fit.iterations) {
    average_demands(samples, saved);
    std::size_t rows = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      bound[i] = samples[i].demand > 0 && samples[i].asked > bandwidth;
      rows += bound[i] || samples[i].rows > 0 ? 1 : 0;
    }
    fit.bound_tiles = std::size_t(std::count(bound.begin(), bound.end(), 1));
    const Eigen::Index n = Eigen::Index(rows);
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, Eigen::Index(1 + column.size()));
    Eigen::VectorXd y(n), measured(n);
    Eigen::Index r = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const StreamSample& x = samples[i];
      if (!bound[i] && x.rows == 0) continue;
      if (bound[i]) {
        A(r, 0) = x.blocks_us * x.asked;
        y(r) = x.time_us - x.fixed_us;
      } else {
        y(r) = x.time_us - x.fixed_us - x.blocks_us;
      }
      if (x.rows > 0) A(r, column.at(x.head_dim)) = x.rows;
      measured(r) = x.time_us;
      ++r;
    }
    // A bandwidth no tile ran past is not a column: the traces cannot tell it.
    const Eigen::Index first = fit.bound_tiles > 0 ? 0 : 1;
    const Eigen::MatrixXd used = A.rightCols(A.cols() - first);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(A.cols());
    if (used.cols() > 0 && rows > 0)
      x.tail(used.cols()) = Eigen::ColPivHouseholderQR<Eigen::MatrixXd>(used).solve(y);
    fit.samples = rows;
    fit.rms_residual_us = rows > 0 ? std::sqrt((A * x - y).squaredNorm() / double(rows)) : 0.0;
    const double rms_measured = rows > 0 ? std::sqrt(measured.squaredNorm() / double(rows)) : 0.0;
    fit.relative_rms_error = rms_measured > 0 ? fit.rms_residual_us / rms_measured : 0.0;
    for (const auto& [d, col] : column) saved[d] = x(col);
    fit.hbm_bytes_per_us = fit.bound_tiles > 0 ? 1.0 / x(0) : 0.0;
    const bool settled = bound == was_bound;
    was_bound = bound;
    if (fit.bound_tiles > 0) bandwidth = fit.hbm_bytes_per_us;
    if (settled || !(bandwidth > 0)) break;
  }
  fit.iterations = std::min<std::size_t>(fit.iterations, 50);
  fit.saved_row_us = saved;

  // Measured against modelled, by kind of tile, with what was fitted.
  std::map<std::tuple<bool, int, bool>, StreamGroup> groups;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const StreamSample& x = samples[i];
    const bool decode = x.demand > 0;
    const int part = x.rows == 0 ? 0 : x.first_piece ? 1 : 2;
    // A decode tile: whether it ran past the bandwidth; any other: whether streams ran beside it.
    const bool pressed = decode ? bound[i] != 0 : x.asked > 0;
    StreamGroup& g = groups[{decode, part, pressed}];
    g.decode = decode;
    g.part = StreamGroup::Part(part);
    g.pressed = pressed;
    ++g.tiles;
    g.blocks += x.blocks;
    g.measured_us += x.time_us;
    const auto s = saved.find(x.head_dim);
    const double save = s == saved.end() ? 0.0 : s->second * x.rows;
    const double share = decode && bandwidth > 0 ? std::max(1.0, x.asked / bandwidth) : 1.0;
    g.modelled_us += x.fixed_us + save + x.blocks_us * share;
    g.asked += x.asked;
  }
  for (auto& [key, g] : groups) fit.groups.push_back(g);
  return fit;
}

SharingFit fit_sharing(const std::vector<Trace>& traces, u32 head_dim, const CostCoefficients& solo,
                       u32 block_m) {
  // Rows: per tile that shared its SM, [a_2 .. a_K] * [rate(2) .. rate(K)] = solo cost - a_1.
  std::vector<std::vector<double>> rows;
  std::vector<double> targets, solo_costs;
  std::size_t of_head_dim = 0;
  u32 most = 1;
  for (const Trace& t : traces) {
    if (!of_tiles(t, head_dim, block_m)) continue;
    ++of_head_dim;
    const std::vector<std::vector<double>> by_busy = time_by_busy_ctas(t);
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const std::vector<double>& a = by_busy[i];
      if (a.size() < 2 || is_piece(t.workload, t.events[i])) continue;
      most = std::max(most, u32(a.size()));
      const double cost = solo.tile_time_us(event_tile_cost(t.workload, t.events[i]));
      rows.push_back(a);
      targets.push_back(cost - a[0]);
      solo_costs.push_back(cost);
    }
  }
  if (rows.empty())
    throw std::invalid_argument(fmt::format(
        "cannot fit how CTAs share an SM at head_dim {}{}: no tile of its {} trace(s) ran while "
        "another CTA was busy on its SM (each SM ran one CTA at a time); record traces at C = 2 "
        "x SMs as well (e.g. --ctas 264 on 132 SMs)",
        head_dim, at_height(block_m), of_head_dim));
  const Eigen::Index k_count = Eigen::Index(most) - 1;  // unknowns rate(2) .. rate(most)
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(Eigen::Index(rows.size()), k_count);
  Eigen::VectorXd y(Eigen::Index(rows.size()));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t k = 1; k < rows[r].size(); ++k)
      A(Eigen::Index(r), Eigen::Index(k) - 1) = rows[r][k];
    y(Eigen::Index(r)) = targets[r];
  }
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(A);
  if (qr.rank() < k_count) {
    std::string open;
    for (Eigen::Index k = 0; k < k_count; ++k)
      if (A.col(k).cwiseAbs().maxCoeff() == 0) open += fmt::format(" rate({})", k + 2);
    throw std::invalid_argument(fmt::format(
        "cannot fit how CTAs share an SM at head_dim {}: the traces do not determine{}: {}",
        head_dim, open.empty() ? " every rate" : open,
        open.empty() ? "the times at different sharing levels move together (add runs with "
                       "other CTA counts)"
                     : "the most CTAs busy on one SM jumps past that count (add runs with "
                       "other CTA counts)"));
  }
  const Eigen::VectorXd x = qr.solve(y);
  SharingFit fit;
  fit.sharing.ctas_per_sm = most;
  for (Eigen::Index k = 0; k < k_count; ++k) fit.sharing.shared_rates.push_back(x(k));
  fit.samples = rows.size();
  fit.rms_residual_us = std::sqrt((A * x - y).squaredNorm() / double(rows.size()));
  double sum_sq = 0;
  for (const double c : solo_costs) sum_sq += c * c;
  const double rms_cost = std::sqrt(sum_sq / double(rows.size()));
  fit.relative_rms_error = rms_cost > 0 ? fit.rms_residual_us / rms_cost : 0;
  return fit;
}

namespace {

// One transient trace's launch evidence: the SMs' spans minus their tiles' costs, and the
// launches inside those spans. Empty when the trace cannot tell (no refill, no SM ids).
struct LaunchSample {
  double excess_us = 0;
  std::size_t refills = 0;
  std::size_t tileless = 0;
  std::size_t launches() const { return refills + tileless; }
};

LaunchSample launch_sample(const Trace& t, const CostCoefficients& solo) {
  LaunchSample s;
  struct Span {
    double first_start = 0, last_end = 0, cost = 0;
    std::size_t tiles = 0;
  };
  std::map<std::int32_t, Span> by_sm;
  std::vector<u32> ctas;
  for (const TraceEvent& e : t.events) {
    if (e.sm_id < 0) return LaunchSample{};
    Span& span = by_sm[e.sm_id];
    span.first_start = span.tiles == 0 ? e.start_us : std::min(span.first_start, e.start_us);
    span.last_end = span.tiles == 0 ? e.end_us : std::max(span.last_end, e.end_us);
    span.cost += solo.tile_time_us(event_tile_cost(t.workload, e));
    ++span.tiles;
    ctas.push_back(e.cta);
  }
  for (const auto& entry : by_sm) {
    s.excess_us += entry.second.last_end - entry.second.first_start - entry.second.cost;
    s.refills += entry.second.tiles - 1;
  }
  // CTAs without a tile leave no event: count the ids the events skip between the first wave
  // and the last CTA that had a tile. A trace that does not say how many CTAs were resident ran
  // at least one on each SM it names.
  std::sort(ctas.begin(), ctas.end());
  ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
  const u32 resident = t.workload.resident_ctas > 0 ? t.workload.resident_ctas : u32(by_sm.size());
  const u32 first_wave = std::min(resident, t.launched_ctas);
  if (!ctas.empty() && ctas.back() >= first_wave) {
    const std::size_t with_tile_past_first_wave =
        ctas.end() - std::lower_bound(ctas.begin(), ctas.end(), first_wave);
    s.tileless = std::size_t(ctas.back() - first_wave + 1) - with_tile_past_first_wave;
  }
  return s;
}

}  // namespace

LaunchFit fit_cta_launch(const std::vector<Trace>& traces, u32 head_dim,
                         const CostCoefficients& solo, u32 block_m) {
  std::vector<LaunchSample> samples;
  std::size_t transient = 0;
  for (const Trace& t : traces) {
    if (!of_tiles(t, head_dim, block_m) || t.workload.scheduler != SchedulerKind::Transient)
      continue;
    ++transient;
    if (max_busy_per_sm(t) > 1) continue;
    const LaunchSample s = launch_sample(t, solo);
    if (s.launches() > 0) samples.push_back(s);
  }
  if (samples.empty())
    throw std::invalid_argument(fmt::format(
        "cannot fit the CTA launch at head_dim {}{}: {}", head_dim, at_height(block_m),
        transient == 0
            ? "no transient trace of it (record one: its one-tile CTAs refill the SMs' slots)"
            : fmt::format("none of its {} transient trace(s) refilled a slot at one CTA per SM "
                          "(each needs SM ids and more CTAs than slots)",
                          transient)));
  LaunchFit fit;
  double excess = 0;
  for (const LaunchSample& s : samples) {
    excess += s.excess_us;
    fit.refills += s.refills;
    fit.tileless += s.tileless;
  }
  fit.traces = samples.size();
  fit.cta_launch_us = excess / double(fit.refills + fit.tileless);
  double sum_sq = 0;
  for (const LaunchSample& s : samples) {
    const double own = s.excess_us / double(s.launches());
    sum_sq += (own - fit.cta_launch_us) * (own - fit.cta_launch_us);
  }
  fit.rms_spread_us = std::sqrt(sum_sq / double(samples.size()));
  return fit;
}

CostModel CostModel::fit(const std::vector<Trace>& traces, const std::string& device) {
  CostModel m;
  m.device = device;
  // head_dim -> the tile heights its contiguous prefill traces ran
  std::map<u32, std::set<u32>> heights;
  for (const Trace& t : traces)
    if (t.workload.page_size == 0 && !t.workload.decoding)
      heights[t.workload.head_dim].insert(t.workload.block_m);
  if (traces.empty()) throw std::invalid_argument("cannot fit a cost model: no traces");
  m.block_n = traces_block_n(traces);
  const std::vector<std::pair<u32, u32>> paged = paged_groups(traces);
  for (const auto& [d, boxes] : paged)
    if (heights.count(d) == 0)
      throw std::invalid_argument(fmt::format(
          "cannot fit the paged factor of head_dim {}: its traces are all paged (page_size != 0), "
          "and the factor scales the contiguous per-block costs, which only traces without pages "
          "measure; add one of the same kernel without --page-size",
          d));
  for (const auto& [d, bms] : heights) {
    const u32 own = *bms.begin();
    const CostCoefficients c = fit_cost(traces, d, own).coefficients;
    m.by_head_dim[d] = c;
    m.block_m_by_head_dim[d] = own;
    for (auto bm = std::next(bms.begin()); bm != bms.end(); ++bm)
      m.by_tile_height[d][*bm] = fit_cost(traces, d, *bm).coefficients;
    bool shares = false;
    for (const Trace& t : traces) shares |= of_tiles(t, d, own) && max_busy_per_sm(t) > 1;
    if (shares) m.sharing_by_head_dim[d] = fit_sharing(traces, d, c, own).sharing;
    try {
      m.cta_launch_us_by_head_dim[d] = fit_cta_launch(traces, d, c, own).cta_launch_us;
    } catch (const std::invalid_argument&) {
      // No transient trace that refilled its slots: nothing says how long a launch takes.
    }
  }
  for (const auto& [d, boxes] : paged)
    m.paged_by_head_dim[d][boxes] = fit_paged_factor(traces, d, boxes, m).factor;
  if (has_streams_or_pieces(traces)) {
    const StreamFit streams = fit_streams(traces, m, m.hbm_bytes_per_us);
    if (streams.bound_tiles > 0) m.hbm_bytes_per_us = streams.hbm_bytes_per_us;
    m.saved_row_us_by_head_dim = streams.saved_row_us;
  }
  return m;
}

}  // namespace tilesched::sim
