#include "cli/trace_diff.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "tilesched/sim/cost_model.hpp"
#include "tilesched/sim/describe.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/workload_io.hpp"
#include "viz/descriptions.hpp"

namespace tilesched::cli {
namespace {

// A tile is identified by where it is in the problem; the linear index depends on the schedule. A
// piece of a tile (split_tail: fewer KV blocks than its trace's workload gives the whole tile) also
// by its blocks, so that two traces that split a tile's blocks differently differ; a whole tile's
// block count is the problem's, not the schedule's, and stays out of the key.
using TileKey = std::tuple<u32, u32, u32, u32, u32>;  // prompt, head, offset; a piece's blocks
TileKey key_of(const TraceEvent& e, const Workload& w) {
  // (A trace read from a file names only its workload's sequences; one built in memory may not.)
  const bool piece = e.prompt_idx < w.batch_size()
                         ? sim::processes_part(e, sim::whole_tile_cost(w, e))
                         : e.kv_block_begin != 0;
  return {e.prompt_idx, e.head_idx, e.prompt_offset, piece ? e.kv_block_begin : 0u,
          piece ? e.kv_blocks : 0u};
}

// Every tile of `t` by its key, with the events that processed it: a multiset of tiles.
std::map<TileKey, std::vector<const TraceEvent*>> tiles_of(const Trace& t) {
  std::map<TileKey, std::vector<const TraceEvent*>> tiles;
  for (const TraceEvent& e : t.events) tiles[key_of(e, t.workload)].push_back(&e);
  return tiles;
}

std::string where(const TraceEvent& e) {
  return fmt::format("CTA {} step {}", e.cta, e.step);
}

// "... and 3 more <what>" when `count` passed what was listed.
void add_more(std::vector<std::string>& out, std::size_t count, std::size_t listed,
              const char* what) {
  if (count > listed) out.push_back(fmt::format("... and {} more {}", count - listed, what));
}

std::vector<std::string> workload_differences(const Workload& a, const Workload& b) {
  const nlohmann::json ja = sim::workload_to_json(a), jb = sim::workload_to_json(b);
  std::vector<std::string> names;
  for (const auto& [name, value] : ja.items())
    if (!jb.contains(name) || jb[name] != value) names.push_back(name);
  for (const auto& [name, value] : jb.items())
    if (!ja.contains(name)) names.push_back(name);
  return names;
}

// Workload fields (as workload_to_json names them) that define the problem; the others (scheduler,
// schedule, flip, CTA counts, ragged mode, cost profile) are strategies of solving it, which is
// what diff compares.
bool defines_the_problem(const std::string& field) {
  static const char* const kProblemFields[] = {"q_lens",      "kv_lens",      "padded",
                                               "num_q_heads", "num_kv_heads", "head_dim",
                                               "mask",        "block_m",      "block_n"};
  return std::any_of(std::begin(kProblemFields), std::end(kProblemFields),
                     [&](const char* name) { return field == name; });
}

std::vector<const TraceEvent*> in_schedule_order(const Trace& t) {
  std::vector<const TraceEvent*> events;
  for (const TraceEvent& e : t.events) events.push_back(&e);
  std::stable_sort(events.begin(), events.end(), [](const TraceEvent* x, const TraceEvent* y) {
    return std::tie(x->cta, x->step) < std::tie(y->cta, y->step);
  });
  return events;
}

std::optional<FirstScheduleDifference> first_difference(const Trace& a, const Trace& b) {
  const auto ea = in_schedule_order(a), eb = in_schedule_order(b);
  std::size_t i = 0, j = 0;
  while (i < ea.size() || j < eb.size()) {
    const TraceEvent* x = i < ea.size() ? ea[i] : nullptr;
    const TraceEvent* y = j < eb.size() ? eb[j] : nullptr;
    const auto pos = [](const TraceEvent* e) { return std::make_pair(e->cta, e->step); };
    if (x && y && pos(x) == pos(y)) {
      if (key_of(*x, a.workload) != key_of(*y, b.workload) || x->linear_idx != y->linear_idx)
        return FirstScheduleDifference{x->cta, x->step, *x, *y};
      ++i, ++j;
    } else if (x && (!y || pos(x) < pos(y))) {
      return FirstScheduleDifference{x->cta, x->step, *x, std::nullopt};
    } else {
      return FirstScheduleDifference{y->cta, y->step, std::nullopt, *y};
    }
  }
  return std::nullopt;
}

}  // namespace

TraceDiff diff_traces(const Trace& a, const Trace& b, std::size_t max_listed) {
  TraceDiff d;
  d.workload_differences = workload_differences(a.workload, b.workload);
  for (const std::string& field : d.workload_differences)
    if (defines_the_problem(field)) d.problem_differences.push_back(field);
  d.launched_ctas_differ = a.launched_ctas != b.launched_ctas;
  d.first_difference = first_difference(a, b);

  // Tile sets as multisets: a tile processed twice in A and once in B counts once "only in A".
  const auto in_a = tiles_of(a), in_b = tiles_of(b);
  auto surplus = [&](const auto& mine, const auto& theirs, std::size_t& count,
                     std::vector<TraceEvent>& listed) {
    for (const auto& [key, events] : mine) {
      const auto it = theirs.find(key);
      const std::size_t other = it == theirs.end() ? 0 : it->second.size();
      for (std::size_t k = other; k < events.size(); ++k) {
        ++count;
        if (listed.size() < max_listed) listed.push_back(*events[k]);
      }
    }
  };
  surplus(in_a, in_b, d.only_in_a_count, d.only_in_a);
  surplus(in_b, in_a, d.only_in_b_count, d.only_in_b);

  const auto loads_a = sim::cta_loads(a), loads_b = sim::cta_loads(b);
  std::vector<CtaRatio> ratios;
  for (const auto& [cta, a_load] : loads_a) {
    if (a_load.busy_us <= 0) continue;
    const auto it = loads_b.find(cta);
    ratios.push_back(CtaRatio{cta, a_load.busy_us, it == loads_b.end() ? 0.0 : it->second.busy_us});
  }
  d.ratio_ctas = ratios.size();
  if (!ratios.empty()) {
    std::vector<double> values;
    for (const CtaRatio& r : ratios) values.push_back(r.ratio());
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    d.ratio_min = *lo;
    d.ratio_max = *hi;
    d.ratio_median = sim::median(values);
    // "Worst" is furthest from 1 either way: a CTA twice as fast is as suspicious as one twice
    // as slow. A CTA idle in B (ratio 0) sorts first.
    const auto distance = [](const CtaRatio& r) {
      return r.b_busy_us > 0 ? std::fabs(std::log(r.ratio())) : INFINITY;
    };
    std::stable_sort(ratios.begin(), ratios.end(), [&](const CtaRatio& x, const CtaRatio& y) {
      return distance(x) > distance(y);
    });
    ratios.resize(std::min<std::size_t>(ratios.size(), 3));
    d.worst_ratios = ratios;
  }
  return d;
}

std::vector<std::string> trace_warnings(const Trace& t, std::size_t max_listed) {
  const Workload& w = t.workload;
  std::vector<std::string> out;
  std::size_t repeated = 0;
  for (const auto& [key, events] : tiles_of(t)) {
    if (events.size() < 2) continue;
    if (++repeated > max_listed) continue;
    std::vector<std::string> places;
    for (const TraceEvent* e : events) places.push_back(where(*e));
    out.push_back(fmt::format("{} was processed {} times ({})", sim::describe_tile(*events[0]),
                              events.size(), fmt::join(places, ", ")));
  }
  add_more(out, repeated, max_listed, "tiles processed more than once");

  // Faithful mode replays upstream, which runs the tiles past a sequence's end.
  if (!(w.scheduler == SchedulerKind::Tile && w.ragged_mode == RaggedMode::Faithful)) {
    std::size_t past = 0;
    for (const TraceEvent& e : t.events) {
      const u32 rows = e.prompt_idx < w.batch_size() ? w.q_lens[e.prompt_idx] : 0;
      if (e.prompt_offset < rows || ++past > max_listed) continue;
      out.push_back(fmt::format("{} on {} starts at row {}, past the end of sequence {} ({} rows)",
                                sim::describe_tile(e), where(e), e.prompt_offset, e.prompt_idx,
                                rows));
    }
    add_more(out, past, max_listed, "tiles past their sequence's end");
  }

  // A transient grid launches a CTA per tile; every other scheduler at most C.
  if (w.scheduler != SchedulerKind::Transient && t.launched_ctas > w.num_ctas)
    out.push_back(fmt::format(
        "launched_ctas is {}, more than the workload's C ({}): a persistent grid launches at "
        "most C CTAs",
        t.launched_ctas, w.num_ctas));
  return out;
}

std::string format_trace_diff(const TraceDiff& d, const Trace& a, const Trace& b) {
  std::string out;
  out += fmt::format("A: {} tiles; {}\n", a.events.size(), viz::describe_trace(a));
  out += fmt::format("B: {} tiles; {}\n", b.events.size(), viz::describe_trace(b));
  for (const auto& [name, trace] : {std::pair{"A", &a}, std::pair{"B", &b}})
    for (const std::string& warning : trace_warnings(*trace))
      out += fmt::format("{}: warning: {}\n", name, warning);
  out += d.same_workload()
             ? std::string("workload: same\n")
             : fmt::format("workload: differs in {}\n", fmt::join(d.workload_differences, ", "));
  if (!d.same_problem())
    out += fmt::format(
        "  ({}: a different attention problem, not another schedule of the same one, so tiles and "
        "times do not compare)\n",
        fmt::join(d.problem_differences, ", "));
  if (d.launched_ctas_differ)
    out += fmt::format("launched CTAs: A {} vs B {}\n", a.launched_ctas, b.launched_ctas);
  if (!d.first_difference) {
    out += d.launched_ctas_differ
               ? "schedule: every CTA that ran processed the same tiles in the same order\n"
               : "schedule: identical (every CTA processes the same tiles in the same order)\n";
  } else {
    const FirstScheduleDifference& f = *d.first_difference;
    auto side = [](const std::optional<TraceEvent>& e) {
      return e ? viz::describe_tile(*e) : std::string("no tile");
    };
    out += fmt::format("schedule: differs; first at CTA {} step {}\n  A: {}\n  B: {}\n", f.cta,
                       f.step, side(f.a), side(f.b));
  }
  // SPEC 4.2: only the tile set of a counter schedule is deterministic, so say so rather than
  // let a fetch-order difference look like a bug.
  if (d.first_difference && d.same_tile_set() && takes_from_counter(a.workload.scheduler) &&
      a.workload.scheduler == b.workload.scheduler)
    out += fmt::format("  ({} scheduler: the fetch order depends on timing; the tile sets match)\n",
                       to_string(a.workload.scheduler));
  if (d.same_tile_set()) {
    out += fmt::format("tile set: same ({} tiles)\n", a.events.size());
  } else {
    out +=
        fmt::format("tile set: {} only in A, {} only in B\n", d.only_in_a_count, d.only_in_b_count);
    for (const TraceEvent& e : d.only_in_a)
      out += fmt::format("  only in A: {} on CTA {}\n", viz::describe_tile(e), e.cta);
    if (d.only_in_a_count > d.only_in_a.size())
      out += fmt::format("  ... {} more only in A\n", d.only_in_a_count - d.only_in_a.size());
    for (const TraceEvent& e : d.only_in_b)
      out += fmt::format("  only in B: {} on CTA {}\n", viz::describe_tile(e), e.cta);
    if (d.only_in_b_count > d.only_in_b.size())
      out += fmt::format("  ... {} more only in B\n", d.only_in_b_count - d.only_in_b.size());
  }
  if (d.ratio_ctas == 0) {
    out += "timing: no CTA is busy in A, no ratio to show\n";
  } else {
    out += fmt::format(
        "timing (B busy / A busy per CTA, {} CTAs): min {:.3f}  median {:.3f}  max {:.3f}\n",
        d.ratio_ctas, d.ratio_min, d.ratio_median, d.ratio_max);
    for (const CtaRatio& r : d.worst_ratios)
      out += fmt::format("  CTA {}: {:.3f} (A {} us, B {} us)\n", r.cta, r.ratio(),
                         viz::format_us(r.a_busy_us), viz::format_us(r.b_busy_us));
  }
  return out;
}

}  // namespace tilesched::cli
