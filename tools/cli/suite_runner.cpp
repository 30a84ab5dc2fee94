#include "cli/suite_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <numeric>

#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

namespace tilesched::cli {

namespace {

constexpr std::size_t kProblemsKept = 5;  // schedule differences recorded per run

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// The run's figures from its repeats; `kept` is set to the repeat with the median makespan (the
// lower of the middle two for an even count).
SuiteRunResult summarise(const SuiteRun& run, const tools::MeasuredRun& measured,
                         std::size_t& kept) {
  SuiteRunResult r;
  r.workload_name = run.workload_name;
  r.strategy = run.strategy;
  r.ctas_label = run.ctas_label;
  std::vector<std::size_t> order(measured.repeats.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  for (const Trace& t : measured.repeats)
    r.makespans_us.push_back(sim::compute_metrics(t).makespan_us);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return r.makespans_us[a] < r.makespans_us[b];
  });
  kept = order[(order.size() - 1) / 2];
  const Trace& t = measured.repeats[kept];
  const sim::Metrics m = sim::compute_metrics(t);
  r.workload = t.workload;
  r.makespan_us = sim::median(r.makespans_us);
  r.total_busy_us = m.total_busy_us;
  r.tiles = m.tile_count;
  r.concurrent_ctas = m.concurrent_ctas;
  r.unwritten_outputs = measured.unwritten_outputs;
  const std::vector<std::string> problems = sim::schedule_differences(sim::replay(t.workload), t);
  r.schedule_problems.assign(
      problems.begin(),
      problems.begin() + std::ptrdiff_t(std::min(problems.size(), kProblemsKept)));
  return r;
}

class SimulatedDevice : public tools::SuiteDevice {
 public:
  explicit SimulatedDevice(sim::CostModel cost) : cost_(std::move(cost)) {}
  std::string name() const override { return cost_.device; }
  std::string source() const override { return "sim"; }
  u32 multiprocessors() const override { return cost_.multiprocessors; }
  u32 resident_ctas(const Workload& w) const override { return cost_.resident_ctas(w.head_dim); }
  tools::MeasuredRun measure(const Workload& w, int repeats) override {
    Workload run = w;
    run.resident_ctas = resident_ctas(w);
    tools::MeasuredRun out;
    const Trace t = sim::replay(run, cost_);
    out.repeats.assign(std::size_t(std::max(repeats, 1)), t);
    return out;
  }

 private:
  sim::CostModel cost_;
};

}  // namespace

std::unique_ptr<tools::SuiteDevice> simulated_suite_device(const sim::CostModel& cost) {
  return std::make_unique<SimulatedDevice>(cost);
}

SuiteResults run_suite(const std::vector<SuiteWorkload>& suite, tools::SuiteDevice& device,
                       const SuiteRunSettings& settings, std::FILE* progress,
                       std::vector<std::string>* files) {
  const u32 sms = device.multiprocessors();
  const DeviceShape shape{sms, [&](const Workload& w) {
                            return std::max<u32>(1,
                                                 device.resident_ctas(w) / std::max<u32>(sms, 1));
                          }};
  const std::vector<SuiteRun> plan = plan_suite(suite, settings.strategies, settings.ctas, shape);
  // Each run holds its repeats' traces and the simulator's replay that checks them.
  for (const SuiteRun& run : plan)
    check_run_size(run.workload, settings.max_tiles, std::size_t(std::max(settings.repeats, 1)) + 1,
                   nullptr,
                   fmt::format("suite workload '{}' ({} at C = {})", run.workload_name,
                               run.strategy, run.workload.num_ctas));
  SuiteResults header;
  header.source = device.source();
  header.device = device.name();
  header.created = now_utc();
  header.sms = sms;
  SuiteResultsWriter writer(settings.out_dir, header, settings.max_pack_bytes, settings.max_packs);
  if (progress)
    fmt::print(progress, "suite-run: {} workloads, {} runs of {} repeats on {} ({} SMs)\n",
               suite.size(), plan.size(), settings.repeats, device.name(), sms);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const SuiteRun& run = plan[i];
    const tools::MeasuredRun measured = device.measure(run.workload, settings.repeats);
    std::size_t kept = 0;
    SuiteRunResult result = summarise(run, measured, kept);
    if (progress) {
      fmt::print(progress, "[{}/{}] {} {} C = {}: {:.1f} us, {} tiles{}{}\n", i + 1, plan.size(),
                 run.workload_name, run.strategy, result.workload.num_ctas, result.makespan_us,
                 result.tiles,
                 result.unwritten_outputs
                     ? fmt::format(", {} outputs NOT WRITTEN", result.unwritten_outputs)
                     : "",
                 result.schedule_problems.empty() ? "" : ", schedule DIFFERS from the simulator");
      std::fflush(progress);
    }
    writer.add(std::move(result), &measured.repeats[kept]);
    if (i + 1 == plan.size() || plan[i + 1].workload_name != run.workload_name)
      writer.write_summary();
  }
  const std::vector<std::string> written = writer.finish();
  if (files) *files = written;
  return read_suite_results(settings.out_dir);
}

}  // namespace tilesched::cli
