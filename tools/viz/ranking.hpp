// The ranking of strategies that `compare` prints, as rows of text: the terminal prints them as
// aligned columns and the comparison page as an HTML table, so both show the same figures.
#pragma once

#include <string>
#include <vector>

#include "viz/svg_html.hpp"

namespace tilesched::viz {

struct RankingTable {
  std::vector<std::string> header;             // mark, strategy, C, makespan us, ...
  std::vector<std::vector<std::string>> rows;  // one per strategy, in the order given
  std::string note;                            // what the columns mean
};

// One row per section, in the given (ranking) order: the recommended one marked '*', C, and each
// makespan against the seed's DEFAULT ("-" without one).
RankingTable ranking_table(const std::vector<ChartSection>& ranked, const RankingMarks& marks);

// Aligned columns, two spaces in, the note after a blank line; ends with a newline.
std::string format_ranking_table(const RankingTable& table);

}  // namespace tilesched::viz
