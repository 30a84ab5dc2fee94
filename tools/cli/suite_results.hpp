// What `tilesched suite-run` leaves in its output directory and `tilesched report` (and `fit`)
// read back (format in docs/prediction-report.md):
//   summary.json        every run: workload, strategy, C, the makespan of each repeat, the figures
//                       the report needs, the checks, and where its trace is
//   traces-N.json       the traces of the median repeat of the runs, compact (columns of deltas,
//                       times in whole ns), packed into files of at most --pack-mib each
// A device lends back only a few files of limited size, so the packs have a byte budget and a
// count; runs past it keep their figures without a trace.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilesched/trace.hpp"

namespace tilesched::cli {

inline constexpr const char* kSuiteSummaryFile = "summary.json";

// One run of the suite as measured.
struct SuiteRunResult {
  std::string workload_name;
  std::string strategy;              // strategy_name(workload)
  std::string ctas_label;            // "sms", "sms*occ", "sms,sms*occ", a number, or "resident"
  Workload workload;                 // as run: num_ctas, and resident_ctas the device's
  std::vector<double> makespans_us;  // one per repeat
  double makespan_us = 0;            // their median
  double total_busy_us = 0;          // sum of tile times of the kept (median) repeat
  std::size_t tiles = 0;
  std::size_t concurrent_ctas = 0;      // min(launched, resident): slots the ideal bound divides by
  std::uint64_t unwritten_outputs = 0;  // outputs never written (coverage)
  std::vector<std::string> schedule_problems;  // the first few differences from the simulator
  std::string trace_file;       // pack holding the kept repeat's trace; "" when none was kept
  std::size_t trace_index = 0;  // its place in that pack

  // The measured ideal: every tile's measured time spread over the slots that run at once.
  double ideal_us() const {
    return concurrent_ctas > 0 ? total_busy_us / double(concurrent_ctas) : 0;
  }
};

struct SuiteResults {
  std::string source;   // "gpu", or "sim" for a dry run on the simulator
  std::string device;   // device name (GPU) or the cost profile that played it
  std::string created;  // ISO 8601 UTC
  u32 sms = 0;
  std::vector<std::string> notes;  // what the run wants its reader to know (budget reached, ...)
  std::vector<SuiteRunResult> runs;
};

nlohmann::json suite_results_to_json(const SuiteResults& r);
// Throws std::invalid_argument naming the field at fault.
SuiteResults suite_results_from_json(const nlohmann::json& j);
// Whether `dir` holds a summary.json, as a folder `suite-run` wrote does.
bool holds_suite_results(const std::string& dir);
// DIR/summary.json, parsed as every reader parses (sim::read_json_document: no key twice in an
// object); errors name the file, or say that DIR is not a folder or has no summary.json.
SuiteResults read_suite_results(const std::string& dir);

// A trace as columns: per CTA with tiles its id (as a delta), tile count and SM; per tile its
// linear index (delta within the CTA), the gap before it and its duration in whole ns. The tile's
// coordinates, rows and KV blocks are recomputed from the workload when they match what the
// scheduler's index map gives (a GPU trace in safe mode), else stored as columns too; an SM per
// tile is stored only when a CTA's tiles ran on different SMs. Times are rounded to the ns (the
// GPU's %globaltimer counts ns).
nlohmann::json trace_to_columns(const Trace& t);
Trace trace_from_columns(const nlohmann::json& j);

// Collects the runs and their traces into `dir` (created if missing): each kept trace goes into
// the current pack, a pack is written when the next trace would pass `max_pack_bytes`, and no
// more traces are kept after `max_packs` packs (or a trace larger than a pack); summary.json is
// rewritten by write_summary() and finish(). Every file is written atomically.
class SuiteResultsWriter {
 public:
  SuiteResultsWriter(std::string dir, SuiteResults header, std::size_t max_pack_bytes,
                     std::size_t max_packs);
  // Adds a run; `kept` is the trace of its median repeat (or null when there is none).
  void add(SuiteRunResult run, const Trace* kept);
  void write_summary() const;
  // Writes the last pack and the summary; returns the files written.
  std::vector<std::string> finish();

 private:
  void flush_pack();

  std::string dir_;
  SuiteResults results_;
  std::size_t max_pack_bytes_, max_packs_;
  std::vector<std::string> pack_;  // the current pack's traces, as JSON text
  std::size_t pack_bytes_ = 0;
  std::size_t packs_written_ = 0;
  bool budget_noted_ = false;
  std::vector<std::string> files_;
};

// Every kept trace of a results directory, with the run it belongs to.
struct SuiteTrace {
  const SuiteRunResult* run;
  Trace trace;
};
std::vector<SuiteTrace> read_suite_traces(const std::string& dir, const SuiteResults& results);

}  // namespace tilesched::cli
