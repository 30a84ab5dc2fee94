#include "cli/suite.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "cli/errors.hpp"
#include "cli/strategies.hpp"
#include "cli/typed_flags.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::cli {

namespace fs = std::filesystem;

std::vector<SuiteWorkload> read_suite(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& entry : fs::directory_iterator(p))
        if (entry.path().extension() == ".json") in_dir.push_back(entry.path());
      std::sort(in_dir.begin(), in_dir.end());
      if (in_dir.empty()) throw UsageError(fmt::format("'{}' holds no workload .json files", p));
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.emplace_back(p);
    }
  }
  if (files.empty()) throw UsageError("no suite given: name workload files or a directory");
  std::vector<SuiteWorkload> suite;
  std::set<std::string> names;
  for (const fs::path& f : files) {
    const std::string name = f.stem().string();
    if (!names.insert(name).second)
      throw UsageError(fmt::format("two suite workloads are named '{}'", name));
    suite.push_back(SuiteWorkload{name, sim::read_workload(f.string())});
  }
  return suite;
}

std::string CtaChoice::label() const {
  switch (kind) {
    case Kind::Sms: return "sms";
    case Kind::Resident: return "sms*occ";
    case Kind::Fixed: break;
  }
  return fmt::format("{}", fixed);
}

std::vector<CtaChoice> parse_cta_choices(const std::string& text) {
  std::vector<CtaChoice> choices;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    CtaChoice c;
    if (item == "sms") {
      c.kind = CtaChoice::Kind::Sms;
    } else if (item == "sms*occ") {
      c.kind = CtaChoice::Kind::Resident;
    } else {
      try {
        c.kind = CtaChoice::Kind::Fixed;
        c.fixed = static_cast<u32>(parse_decimal(item, 1, 0xFFFFFFFFu));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(
            fmt::format("'{}' is not sms, sms*occ or a CTA count ({})", item, e.what()));
      }
    }
    choices.push_back(c);
    if (end == text.size()) break;
    begin = end + 1;
  }
  return choices;
}

namespace {

// The strategies `filter` keeps: "all" (all_strategies), "seed" or a comma list of names, which
// may also name the split schedules (split_kv, stream_k: "all" leaves them out, since their
// pieces multiply a prefill suite's runs; plan_suite names a workload they cannot run).
std::vector<Workload> chosen_strategies(const Workload& base, const std::string& filter) {
  std::vector<Workload> all = all_strategies(base);
  if (filter == "all") return all;
  std::vector<Workload> chosen;
  if (filter == "seed") {
    for (const Workload& w : all)
      if (is_seed_strategy(strategy_name(w))) chosen.push_back(w);
    return chosen;
  }
  for (Workload& w : split_strategies(base)) all.push_back(std::move(w));
  std::vector<std::string> names;
  for (const Workload& w : all) names.push_back(strategy_name(w));
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = std::min(filter.find(',', begin), filter.size());
    const std::string name = filter.substr(begin, end - begin);
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw UsageError(fmt::format("--strategies: unknown strategy '{}' (known: all, seed, {})",
                                   name, fmt::join(names, ", ")));
    chosen.push_back(all[std::size_t(it - names.begin())]);
    if (end == filter.size()) break;
    begin = end + 1;
  }
  return chosen;
}

}  // namespace

std::vector<SuiteRun> plan_suite(const std::vector<SuiteWorkload>& suite,
                                 const std::string& strategies, const std::vector<CtaChoice>& ctas,
                                 const DeviceShape& device) {
  std::vector<SuiteRun> runs;
  for (const SuiteWorkload& s : suite) {
    const u32 resident = device.sms * device.ctas_per_sm(s.workload);
    // C -> the labels of the choices that give it, in the order first asked for.
    std::vector<std::pair<u32, std::string>> counts;
    for (const CtaChoice& c : ctas) {
      const u32 n = c.kind == CtaChoice::Kind::Sms        ? device.sms
                    : c.kind == CtaChoice::Kind::Resident ? resident
                                                          : c.fixed;
      const auto same =
          std::find_if(counts.begin(), counts.end(), [&](const auto& e) { return e.first == n; });
      if (same == counts.end())
        counts.push_back({n, c.label()});
      else if (same->second.find(c.label()) == std::string::npos)
        same->second += "," + c.label();
    }
    for (const Workload& strategy : chosen_strategies(s.workload, strategies)) {
      if (strategy.scheduler == SchedulerKind::Transient) {
        Workload w = strategy;
        w.num_ctas = resident;
        runs.push_back(SuiteRun{s.name, strategy_name(w), "resident", w});
        continue;
      }
      for (const auto& [n, label] : counts) {
        Workload w = strategy;
        w.num_ctas = n;
        if (const std::string problem = w.validate(); !problem.empty())
          throw std::invalid_argument(
              fmt::format("suite workload '{}' at C = {}: {}", s.name, n, problem));
        runs.push_back(SuiteRun{s.name, strategy_name(w), label, w});
      }
    }
  }
  return runs;
}

}  // namespace tilesched::cli
