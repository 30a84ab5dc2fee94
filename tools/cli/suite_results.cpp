#include "cli/suite_results.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::cli {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kSummaryFormat = "tilesched-suite-results";
constexpr const char* kColumnsFormat = "tilesched-trace-columns";
constexpr const char* kPackFormat = "tilesched-trace-pack";
constexpr int kVersion = 1;

// The field `key` of `j`, or std::invalid_argument naming it.
const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{}: expected an object", where));
  const auto it = j.find(key);
  if (it == j.end())
    throw std::invalid_argument(fmt::format("{}: required field '{}' is missing", where, key));
  return *it;
}

template <class T>
T get(const json& j, const char* key, const std::string& where) {
  try {
    return field(j, key, where).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(fmt::format("{}: field '{}' has the wrong type", where, key));
  }
}

void check_format(const json& j, const char* format, const std::string& where) {
  if (get<std::string>(j, "format", where) != format)
    throw std::invalid_argument(fmt::format("{}: not a {} file", where, format));
  if (get<int>(j, "version", where) != kVersion)
    throw std::invalid_argument(
        fmt::format("{}: unsupported {} version (this build reads {})", where, format, kVersion));
}

std::int64_t to_ns(double us) {
  return std::llround(us * 1000.0);
}

// The tile at `idx` as the workload's scheduler maps it, with its rows and KV blocks: what a GPU
// trace in safe mode records. A transient grid indexes tiles in the default order.
TraceEvent derived_event(const Workload& w, const TileSummary& summary, u32 idx) {
  const Schedule order = w.scheduler == SchedulerKind::Transient ? Schedule::Default : w.schedule;
  const MappingParams map(TileMapping{w.block_m, w.num_q_heads, order});
  const SeqInfo s = summary.unsafe_seq_info(map, idx);
  TraceEvent e;
  e.linear_idx = idx;
  e.prompt_offset = s.prompt_offset;
  e.head_idx = s.head_idx;
  e.prompt_idx = s.prompt_idx;
  const bool faithful = w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful;
  e.query_rows = faithful ? faithful_query_rows(s, w.block_m)
                          : tile_rows(summary.query_layout(), s, w.block_m).query_rows;
  e.kv_blocks = sim::whole_tile_cost(w, e).kv_blocks;
  return e;
}

bool same_tile(const TraceEvent& a, const TraceEvent& b) {
  return a.prompt_offset == b.prompt_offset && a.head_idx == b.head_idx &&
         a.prompt_idx == b.prompt_idx && a.query_rows == b.query_rows &&
         a.kv_blocks == b.kv_blocks && a.kv_block_begin == b.kv_block_begin;
}

// Whether every event's tile is what the index map gives (then its columns can be left out).
bool tiles_derivable(const Trace& t) {
  const std::vector<u32> offsets = t.workload.q_row_offsets();
  const TileSummary summary = t.workload.summary(offsets.data());
  const u32 n = summary.max_idx(t.workload.num_q_heads);
  for (const TraceEvent& e : t.events)
    if (e.linear_idx >= n || !same_tile(e, derived_event(t.workload, summary, e.linear_idx)))
      return false;
  return true;
}

}  // namespace

json trace_to_columns(const Trace& t) {
  json cta_delta = json::array(), cta_tiles = json::array(), cta_sm = json::array();
  json idx = json::array(), gap = json::array(), duration = json::array(), sm = json::array();
  bool sm_per_cta = true;
  std::int64_t previous_cta = 0;
  for (std::size_t i = 0; i < t.events.size();) {
    const u32 cta = t.events[i].cta;
    std::size_t end = i;
    while (end < t.events.size() && t.events[end].cta == cta) ++end;
    cta_delta.push_back(std::int64_t(cta) - previous_cta);
    previous_cta = cta;
    cta_tiles.push_back(end - i);
    cta_sm.push_back(t.events[i].sm_id);
    std::int64_t previous_idx = cta, previous_end = 0;
    for (std::size_t k = i; k < end; ++k) {
      const TraceEvent& e = t.events[k];
      sm_per_cta &= e.sm_id == t.events[i].sm_id;
      sm.push_back(e.sm_id);
      idx.push_back(std::int64_t(e.linear_idx) - previous_idx);
      previous_idx = e.linear_idx;
      const std::int64_t start = to_ns(e.start_us), stop = to_ns(e.end_us);
      gap.push_back(start - previous_end);
      duration.push_back(stop - start);
      previous_end = stop;
    }
    i = end;
  }
  json j = {{"format", kColumnsFormat},
            {"version", kVersion},
            {"source", t.source},
            {"device", t.device},
            {"created", t.created},
            {"workload", sim::workload_to_json(t.workload)},
            {"launched_ctas", t.launched_ctas},
            {"cta_delta", std::move(cta_delta)},
            {"cta_tiles", std::move(cta_tiles)},
            {"linear_idx_delta", std::move(idx)},
            {"gap_ns", std::move(gap)},
            {"duration_ns", std::move(duration)}};
  if (sm_per_cta)
    j["cta_sm"] = std::move(cta_sm);
  else
    j["sm_id"] = std::move(sm);
  if (!tiles_derivable(t)) {
    json tiles = json::object();
    for (const char* name : {"prompt_offset", "head_idx", "prompt_idx", "query_rows", "kv_blocks"})
      tiles[name] = json::array();
    bool pieces = false;  // split_tail's: their first blocks too
    for (const TraceEvent& e : t.events) {
      tiles["prompt_offset"].push_back(e.prompt_offset);
      tiles["head_idx"].push_back(e.head_idx);
      tiles["prompt_idx"].push_back(e.prompt_idx);
      tiles["query_rows"].push_back(e.query_rows);
      tiles["kv_blocks"].push_back(e.kv_blocks);
      pieces = pieces || e.kv_block_begin != 0;
    }
    if (pieces) {
      tiles["kv_block_begin"] = json::array();
      for (const TraceEvent& e : t.events) tiles["kv_block_begin"].push_back(e.kv_block_begin);
    }
    j["tiles"] = std::move(tiles);
  }
  return j;
}

namespace {

Trace decode_columns(const json& j) {
  const std::string where = "compact trace";
  check_format(j, kColumnsFormat, where);
  Trace t;
  t.source = get<std::string>(j, "source", where);
  t.device = get<std::string>(j, "device", where);
  t.created = get<std::string>(j, "created", where);
  t.workload = sim::workload_from_json(field(j, "workload", where));
  t.launched_ctas = get<u32>(j, "launched_ctas", where);
  const auto ctas = get<std::vector<std::int64_t>>(j, "cta_delta", where);
  const auto counts = get<std::vector<std::size_t>>(j, "cta_tiles", where);
  const auto idx = get<std::vector<std::int64_t>>(j, "linear_idx_delta", where);
  const auto gap = get<std::vector<std::int64_t>>(j, "gap_ns", where);
  const auto duration = get<std::vector<std::int64_t>>(j, "duration_ns", where);
  const bool sm_per_cta = j.contains("cta_sm");
  const auto sm = get<std::vector<std::int32_t>>(j, sm_per_cta ? "cta_sm" : "sm_id", where);
  std::size_t total = 0;
  for (const std::size_t c : counts) total += c;
  if (counts.size() != ctas.size() || idx.size() != total || gap.size() != total ||
      duration.size() != total || sm.size() != (sm_per_cta ? ctas.size() : total))
    throw std::invalid_argument(where + ": its columns have different lengths");
  const json* tiles = j.contains("tiles") ? &j["tiles"] : nullptr;
  const std::vector<u32> offsets = t.workload.q_row_offsets();
  const TileSummary summary = t.workload.summary(offsets.data());
  std::int64_t cta = 0;
  std::size_t k = 0;
  for (std::size_t c = 0; c < ctas.size(); ++c) {
    cta += ctas[c];
    std::int64_t linear = cta, end_ns = 0;
    for (std::size_t step = 0; step < counts[c]; ++step, ++k) {
      linear += idx[k];
      if (cta < 0 || cta > 0xFFFFFFFFll || linear < 0 || linear > 0xFFFFFFFFll)
        throw std::invalid_argument(
            fmt::format("{}: tile {} has a CTA or index out of range", where, k));
      TraceEvent e;
      if (tiles) {
        e.linear_idx = u32(linear);
        e.prompt_offset = (*tiles).at("prompt_offset").at(k).get<u32>();
        e.head_idx = (*tiles).at("head_idx").at(k).get<u32>();
        e.prompt_idx = (*tiles).at("prompt_idx").at(k).get<u32>();
        e.query_rows = (*tiles).at("query_rows").at(k).get<u32>();
        e.kv_blocks = (*tiles).at("kv_blocks").at(k).get<u32>();
        if (tiles->contains("kv_block_begin"))
          e.kv_block_begin = (*tiles).at("kv_block_begin").at(k).get<u32>();
      } else {
        if (linear >= summary.max_idx(t.workload.num_q_heads))
          throw std::invalid_argument(
              fmt::format("{}: tile {} has index {} past the workload", where, k, linear));
        e = derived_event(t.workload, summary, u32(linear));
      }
      e.cta = u32(cta);
      e.step = u32(step);
      const std::int64_t start_ns = end_ns + gap[k];
      end_ns = start_ns + duration[k];
      // The same conversion as the GPU's trace recorder: a measured trace reads back bit for bit.
      e.start_us = static_cast<double>(start_ns) * 1e-3;
      e.end_us = static_cast<double>(end_ns) * 1e-3;
      e.sm_id = sm[sm_per_cta ? c : k];
      t.events.push_back(e);
    }
  }
  // The full trace reader's checks (CTAs, order, coordinates, times) hold for a compact one too.
  return sim::trace_from_json(sim::trace_to_json(t));
}

}  // namespace

Trace trace_from_columns(const json& j) {
  try {
    return decode_columns(j);
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("compact trace: {}", e.what()));
  }
}

json suite_results_to_json(const SuiteResults& r) {
  json runs = json::array();
  for (const SuiteRunResult& run : r.runs) {
    json checks = {{"unwritten_outputs", run.unwritten_outputs},
                   {"schedule_problems", run.schedule_problems}};
    json j = {
        {"workload_name", run.workload_name},     {"strategy", run.strategy},
        {"ctas_label", run.ctas_label},           {"workload", sim::workload_to_json(run.workload)},
        {"makespans_us", run.makespans_us},       {"makespan_us", run.makespan_us},
        {"total_busy_us", run.total_busy_us},     {"tiles", run.tiles},
        {"concurrent_ctas", run.concurrent_ctas}, {"checks", checks}};
    j["trace"] = run.trace_file.empty()
                     ? json(nullptr)
                     : json{{"file", run.trace_file}, {"index", run.trace_index}};
    runs.push_back(std::move(j));
  }
  return json{{"format", kSummaryFormat}, {"version", kVersion},    {"source", r.source},
              {"device", r.device},       {"created", r.created},   {"sms", r.sms},
              {"notes", r.notes},         {"runs", std::move(runs)}};
}

SuiteResults suite_results_from_json(const json& j) {
  const std::string where = "suite results";
  check_format(j, kSummaryFormat, where);
  SuiteResults r;
  r.source = get<std::string>(j, "source", where);
  r.device = get<std::string>(j, "device", where);
  r.created = get<std::string>(j, "created", where);
  r.sms = get<u32>(j, "sms", where);
  r.notes = get<std::vector<std::string>>(j, "notes", where);
  const json& runs = field(j, "runs", where);
  if (!runs.is_array()) throw std::invalid_argument(where + ": field 'runs' must be an array");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const json& x = runs[i];
    const std::string at = fmt::format("{}: runs[{}]", where, i);
    SuiteRunResult run;
    run.workload_name = get<std::string>(x, "workload_name", at);
    run.strategy = get<std::string>(x, "strategy", at);
    run.ctas_label = get<std::string>(x, "ctas_label", at);
    run.workload = sim::workload_from_json(field(x, "workload", at));
    run.makespans_us = get<std::vector<double>>(x, "makespans_us", at);
    run.makespan_us = get<double>(x, "makespan_us", at);
    run.total_busy_us = get<double>(x, "total_busy_us", at);
    run.tiles = get<std::size_t>(x, "tiles", at);
    run.concurrent_ctas = get<std::size_t>(x, "concurrent_ctas", at);
    const json& checks = field(x, "checks", at);
    run.unwritten_outputs = get<std::uint64_t>(checks, "unwritten_outputs", at + ".checks");
    run.schedule_problems =
        get<std::vector<std::string>>(checks, "schedule_problems", at + ".checks");
    const json& trace = field(x, "trace", at);
    if (!trace.is_null()) {
      run.trace_file = get<std::string>(trace, "file", at + ".trace");
      run.trace_index = get<std::size_t>(trace, "index", at + ".trace");
    }
    if (!(run.makespan_us > 0)) throw std::invalid_argument(at + ": makespan_us must be positive");
    r.runs.push_back(std::move(run));
  }
  return r;
}

bool holds_suite_results(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / kSuiteSummaryFile, ec);
}

SuiteResults read_suite_results(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw std::runtime_error(fmt::format(
        "cannot read '{}': no such folder (expected one that `tilesched suite-run` wrote)", dir));
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(
        fmt::format("'{}' is not a folder: expected one that `tilesched suite-run` wrote", dir));
  if (!holds_suite_results(dir))
    throw std::runtime_error(
        fmt::format("'{}' is a folder without {}, so not one that `tilesched suite-run` wrote", dir,
                    kSuiteSummaryFile));
  const std::string path = (fs::path(dir) / kSuiteSummaryFile).string();
  const json j = sim::read_json_document(path);  // its errors name the file
  try {
    return suite_results_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("'{}': {}", path, e.what()));
  }
}

SuiteResultsWriter::SuiteResultsWriter(std::string dir, SuiteResults header,
                                       std::size_t max_pack_bytes, std::size_t max_packs)
    : dir_(std::move(dir)),
      results_(std::move(header)),
      max_pack_bytes_(max_pack_bytes),
      max_packs_(max_packs) {
  fs::create_directories(dir_);
}

void SuiteResultsWriter::add(SuiteRunResult run, const Trace* kept) {
  if (kept && packs_written_ < max_packs_) {
    std::string text = trace_to_columns(*kept).dump();
    if (pack_bytes_ + text.size() + 64 > max_pack_bytes_) flush_pack();
    if (packs_written_ < max_packs_ && text.size() + 64 <= max_pack_bytes_) {
      run.trace_file = fmt::format("traces-{}.json", packs_written_ + 1);
      run.trace_index = pack_.size();
      pack_bytes_ += text.size() + 1;
      pack_.push_back(std::move(text));
    }
  }
  if (kept && run.trace_file.empty() && !budget_noted_) {
    budget_noted_ = true;
    results_.notes.push_back(fmt::format(
        "trace budget reached at run {} ({} packs of at most {} bytes): later runs keep their "
        "figures but no trace",
        results_.runs.size() + 1, max_packs_, max_pack_bytes_));
  }
  results_.runs.push_back(std::move(run));
}

void SuiteResultsWriter::flush_pack() {
  if (pack_.empty()) return;
  std::string text =
      fmt::format("{{\"format\":\"{}\",\"version\":{},\"traces\":[\n", kPackFormat, kVersion);
  for (std::size_t i = 0; i < pack_.size(); ++i)
    text += pack_[i] + (i + 1 < pack_.size() ? ",\n" : "\n");
  text += "]}\n";
  ++packs_written_;
  const std::string path =
      (fs::path(dir_) / fmt::format("traces-{}.json", packs_written_)).string();
  sim::write_file_atomically(path, text);
  files_.push_back(path);
  pack_.clear();
  pack_bytes_ = 0;
}

void SuiteResultsWriter::write_summary() const {
  sim::write_file_atomically((fs::path(dir_) / kSuiteSummaryFile).string(),
                             suite_results_to_json(results_).dump(1) + "\n");
}

std::vector<std::string> SuiteResultsWriter::finish() {
  flush_pack();
  write_summary();
  std::vector<std::string> files = files_;
  files.insert(files.begin(), (fs::path(dir_) / kSuiteSummaryFile).string());
  return files;
}

std::vector<SuiteTrace> read_suite_traces(const std::string& dir, const SuiteResults& results) {
  std::map<std::string, json> packs;
  std::vector<SuiteTrace> out;
  for (const SuiteRunResult& run : results.runs) {
    if (run.trace_file.empty()) continue;
    auto it = packs.find(run.trace_file);
    if (it == packs.end()) {
      const std::string path = (fs::path(dir) / run.trace_file).string();
      json pack = sim::read_json_document(path);  // its errors name the file
      try {
        check_format(pack, kPackFormat, "trace pack");
        if (!field(pack, "traces", "trace pack").is_array())
          throw std::invalid_argument("trace pack: field 'traces' must be an array");
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("'{}': {}", path, e.what()));
      }
      it = packs.emplace(run.trace_file, std::move(pack)).first;
    }
    const json& traces = it->second["traces"];
    if (run.trace_index >= traces.size())
      throw std::invalid_argument(fmt::format("'{}' has no trace {} (run {} {} C = {})",
                                              run.trace_file, run.trace_index, run.workload_name,
                                              run.strategy, run.workload.num_ctas));
    try {
      out.push_back(SuiteTrace{&run, trace_from_columns(traces[run.trace_index])});
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(
          fmt::format("'{}', trace {}: {}", run.trace_file, run.trace_index, e.what()));
    }
  }
  return out;
}

}  // namespace tilesched::cli
