// docs/trace-format.md against a trace freshly simulated the way `tilesched sim` makes one: every
// field written is documented, every documented field is written, and the documented meaning of
// sm_id and of a workload file that leaves the CTA counts out is what the tool does.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "cli/workload_flags.hpp"
#include "test_support.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "tilesched/sim/workload_io.hpp"

using namespace tilesched;
using nlohmann::json;

namespace {

// The field names in the first column of the tables between the heading `from` and the next
// heading of the same level: every `name` in backticks.
struct DocTables {
  std::set<std::string> top, events;  // the trace's two tables
  std::set<std::string> workload;
};

std::set<std::string> first_column_names(const std::string& table) {
  std::set<std::string> names;
  const std::regex row(R"(^\| ([^|]*) \|)");
  const std::regex name("`([a-z0-9_]+)`");
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    std::smatch cell;
    if (!std::regex_search(line, cell, row)) continue;
    const std::string first = cell[1];
    for (auto it = std::sregex_iterator(first.begin(), first.end(), name);
         it != std::sregex_iterator(); ++it)
      names.insert((*it)[1]);
  }
  return names;
}

// The part of `doc` from `start` up to `end` (or its end).
std::string between(const std::string& doc, const std::string& start, const std::string& end) {
  const std::size_t from = doc.find(start);
  REQUIRE_MESSAGE(from != std::string::npos, start);
  const std::size_t to = end.empty() ? std::string::npos : doc.find(end, from);
  return doc.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

DocTables read_doc() {
  const std::string doc = test::read_text(TILESCHED_DOCS_DIR "/trace-format.md");
  DocTables t;
  t.top = first_column_names(between(doc, "## Trace, version 1", "Event fields"));
  t.events = first_column_names(between(doc, "Event fields", "Numbers are written"));
  t.workload = first_column_names(between(doc, "## Workload", ""));
  return t;
}

// `tilesched sim WORKLOAD.json --cost-profile PROFILE` up to the trace file it writes, read back
// as JSON. The workload file sets neither num_ctas nor resident_ctas.
json simulated_trace(const test::ScratchDir& dir, const std::string& profile,
                     SchedulerKind scheduler) {
  const std::string workload_file = dir.str() + "/workload.json";
  sim::write_file_atomically(workload_file,
                             R"({"q_lens": [300, 1000, 129], "num_q_heads": 4, "num_kv_heads": 2,
                                 "head_dim": 128, "block_n": 64})");
  cli::WorkloadFlags flags;
  flags.workload_file = workload_file;
  flags.cost_profile = profile;
  flags.scheduler = scheduler;
  const cli::Simulation s = cli::resolve_simulation(flags);
  const std::string trace_file = dir.str() + "/trace.json";
  sim::write_trace(trace_file, sim::replay(s.workload, s.cost));
  return json::parse(test::read_text(trace_file));
}

}  // namespace

TEST_CASE("trace-format.md documents every field a simulated trace has, and only those") {
  const DocTables doc = read_doc();
  test::ScratchDir dir("trace_format_fields");
  const json trace = simulated_trace(dir, "h200", SchedulerKind::Tile);
  for (const auto& [key, value] : trace.items()) CHECK_MESSAGE(doc.top.count(key), key);
  for (const std::string& key : doc.top)  // combine_us: only where tiles are split
    if (key != "combine_us") CHECK_MESSAGE(trace.contains(key), key);
  REQUIRE(!trace["events"].empty());
  for (const auto& [key, value] : trace["events"][0].items())
    CHECK_MESSAGE(doc.events.count(key), key);
  for (const std::string& key : doc.events)  // kv_block_begin: split_tail's pieces only
    if (key != "kv_block_begin") CHECK_MESSAGE(trace["events"][0].contains(key), key);
  for (const auto& [key, value] : trace["workload"].items())
    CHECK_MESSAGE(doc.workload.count(key), key);
}

TEST_CASE("trace-format.md: sm_id and the CTA counts of a workload file that leaves them out") {
  test::ScratchDir dir("trace_format_meaning");
  // h200: one CTA per SM at d = 128; h200_mma_sync: two, so slot s lands on SM s % SMs.
  for (const char* profile : {"h200", "h200_mma_sync"})
    for (const SchedulerKind scheduler :
         {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::Transient}) {
      CAPTURE(profile);
      CAPTURE(to_string(scheduler));
      const sim::CostModel cost = sim::CostModel::builtin(profile);
      const u32 sms = cost.multiprocessors, device_ctas = cost.resident_ctas(128);
      const json trace = simulated_trace(dir, profile, scheduler);
      // "0 or absent: the device's own, SMs x CTAs per SM"; the trace records what ran.
      CHECK(trace["workload"]["resident_ctas"] == device_ctas);
      if (scheduler != SchedulerKind::Transient)
        CHECK(trace["workload"]["num_ctas"] == device_ctas);
      // "the SM the replay placed it on, for every scheduler: slot s lives on SM s % SMs". A
      // persistent grid of at most the resident slots starts every CTA at once, CTA c in slot c.
      for (const json& e : trace["events"]) {
        const std::int64_t sm = e["sm_id"], cta = e["cta"];
        CHECK(sm >= 0);
        CHECK(sm < std::int64_t(sms));
        if (scheduler != SchedulerKind::Transient) CHECK(sm == cta % sms);
      }
    }
}
