#include "viz/ranking.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tilesched::viz {

RankingTable ranking_table(const std::vector<ChartSection>& ranked, const RankingMarks& marks) {
  const ChartSection* seed = marks.seed < ranked.size() ? &ranked[marks.seed] : nullptr;
  RankingTable t;
  t.header = {"",        "strategy",     "C",         "makespan us",
              "vs seed", "efficiency %", "imbalance", "max tiles"};
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const sim::Metrics& m = ranked[i].metrics;
    const std::string speedup =
        seed ? fmt::format("{:.2f}x", seed->metrics.makespan_us / m.makespan_us) : "-";
    t.rows.push_back({i == marks.recommended ? "*" : "", ranked[i].name,
                      fmt::format("{}", ranked[i].num_ctas), fmt::format("{:.1f}", m.makespan_us),
                      speedup, fmt::format("{:.1f}", 100.0 * m.efficiency),
                      fmt::format("{:.3f}", m.imbalance), fmt::format("{:g}", m.tiles_max)});
  }
  t.note = fmt::format(
      "* recommended (`tilesched recommend` says why). vs seed = makespan of the seed's DEFAULT "
      "({}) / makespan; efficiency = lower bound / makespan; imbalance = max busy / mean busy and "
      "max tiles are per CTA, per resident slot for transient (its CTAs run one tile each).",
      seed ? fmt::format("{}, C = {}", seed->name, seed->num_ctas) : "not run");
  return t;
}

std::string format_ranking_table(const RankingTable& t) {
  constexpr std::size_t kTextColumns = 2;  // the mark and the strategy, left-aligned; figures right
  // Widths wide enough for every strategy name and the usual figures, so runs line up.
  std::vector<std::size_t> width = {1, 24, 5, 12, 10, 12, 10, 10};
  width.resize(t.header.size(), 10);
  for (const auto& row : t.rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out = " ";
    for (std::size_t c = 0; c < cells.size(); ++c)
      out += c < kTextColumns ? fmt::format(" {:<{}}", cells[c], width[c])
                              : fmt::format(" {:>{}}", cells[c], width[c]);
    return out + "\n";
  };
  std::string out = line(t.header);
  for (const auto& row : t.rows) out += line(row);
  return out + "\n" + t.note + "\n";
}

}  // namespace tilesched::viz
