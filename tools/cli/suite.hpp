// The prediction suite (`tilesched suite-run`, `tilesched report`): named workloads read from
// files, and the runs they expand to: every workload under every chosen strategy at every chosen
// CTA count of the device.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tilesched/workload.hpp"

namespace tilesched::cli {

struct SuiteWorkload {
  std::string name;  // the file's name without .json
  Workload workload;
};

// The workloads of `paths`: each a workload JSON file, or a directory whose *.json files are
// taken in name order. Throws std::runtime_error / std::invalid_argument naming the file at
// fault, and UsageError for no workloads or two with one name.
std::vector<SuiteWorkload> read_suite(const std::vector<std::string>& paths);

// A CTA count as the user asks for it: "sms" (one CTA per SM), "sms*occ" (every resident slot),
// or a number.
struct CtaChoice {
  enum class Kind { Sms, Resident, Fixed } kind = Kind::Sms;
  u32 fixed = 0;
  std::string label() const;  // "sms", "sms*occ", or the number
};

// "sms,sms*occ,132" -> choices; throws std::invalid_argument naming the bad entry.
std::vector<CtaChoice> parse_cta_choices(const std::string& text);

// What the device (or the profile standing for it) holds: its SMs and, per head_dim, how many
// CTAs one SM holds.
struct DeviceShape {
  u32 sms = 0;
  std::function<u32(const Workload&)> ctas_per_sm;
};

// One run of the suite: a workload under one strategy at one CTA count.
struct SuiteRun {
  std::string workload_name;
  std::string strategy;    // strategy_name(workload)
  std::string ctas_label;  // the choices that gave this C, e.g. "sms" or "sms,sms*occ"
  Workload workload;       // strategy and num_ctas set
};

// Every workload x strategy (all_strategies, filtered by `strategies`: "all", "seed", or a comma
// list of names) x CTA count. Counts that coincide for a workload (sms = sms*occ at one CTA per
// SM) run once, labelled with both choices. A transient grid launches one CTA per tile whatever
// C is, so it runs once, at the device's resident count. Throws UsageError for a strategy name
// that does not exist (listing them).
std::vector<SuiteRun> plan_suite(const std::vector<SuiteWorkload>& suite,
                                 const std::string& strategies, const std::vector<CtaChoice>& ctas,
                                 const DeviceShape& device);

}  // namespace tilesched::cli
