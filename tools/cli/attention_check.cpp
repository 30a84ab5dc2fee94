#include "cli/attention_check.hpp"

#include <fmt/format.h>

#include <cmath>

#include "cli/console.hpp"
#include "tilesched/sim/attention.hpp"

namespace tilesched::cli {

AttentionReport check_attention(const Trace& trace, std::uint64_t seed) {
  const Workload& w = trace.workload;
  Progress progress("attention", 3);
  progress.step("making inputs");
  const sim::AttentionInputs inputs = sim::make_inputs(w, seed);
  progress.step(fmt::format("tiled attention over {} tiles", trace.events.size()));
  const auto report_progress = [&progress](std::size_t done, std::size_t total) {
    progress.update(done, total);
  };
  const sim::AttentionResult tiled =
      sim::tiled_attention(w, inputs, trace, 0.f, 0, report_progress);
  progress.step("naive reference (double precision)");
  const sim::AttentionResult reference = sim::reference_attention(w, inputs, 0.f, report_progress);

  AttentionReport r;
  r.rows_total = tiled.row_writes.size();
  for (const std::uint32_t writes : tiled.row_writes) {
    if (writes == 0)
      ++r.gaps;
    else if (writes == 1)
      ++r.written_once;
    else
      ++r.double_writes;
  }
  r.problem_count = tiled.problems.size();
  for (std::size_t i = 0; i < tiled.problems.size() && i < 5; ++i)
    r.problems.push_back(tiled.problems[i].message());
  r.o_error = sim::relative_error(tiled.o, reference.o);
  r.lse_error = sim::relative_error(tiled.lse, reference.lse);
  return r;
}

std::string format_attention_report(const AttentionReport& r) {
  std::string out = fmt::format(
      "attention (tiled as scheduled vs naive reference):\n"
      "  coverage          {} of {} (row, head) outputs written once, {} never written, {} "
      "written more than once: {}\n"
      "  relative error    O {:.3e}, LSE {:.3e} (tolerance {:.0e})\n",
      r.written_once, r.rows_total, r.gaps, r.double_writes, r.coverage_ok() ? "ok" : "FAILED",
      r.o_error, r.lse_error, kAttentionTolerance);
  for (const std::string& p : r.problems) out += fmt::format("  problem: {}\n", p);
  if (r.problem_count > r.problems.size())
    out += fmt::format("  ... and {} more problems\n", r.problem_count - r.problems.size());
  return out;
}

}  // namespace tilesched::cli
