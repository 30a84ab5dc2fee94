// SPEC §4.1's reference table (the upstream unit test), exactly: BM=32, H=3, C=8, B=1, S_max=100.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tilesched/names.hpp"
#include "tilesched/scheduler.hpp"

using namespace tilesched;

namespace {

template <class Scheduler>
std::vector<std::string> walk(const Scheduler& sched, const TileSummary& summary) {
  std::vector<std::string> rows;
  const GridDim grid = sched.grid_dim(summary);
  for (u32 cta = 0; cta < grid.x; ++cta) {
    u32 sidx[2] = {0, 0};
    TileState st = sched.initial_state(sidx, summary, BlockIndex{cta, 0, 0});
    std::string row;
    for (auto s = sched.first_work(summary, st); s; s = sched.advance(summary, st)) {
      if (!row.empty()) row += " ";
      row += to_string(sched.get_current_work_info(summary, st));
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("reference table: DEFAULT") {
  const TileScheduler<32, 3, 8, Schedule::Default> sched;
  const TileSummary summary = TileSummary::make(1, 100, 32);
  CHECK(summary.max_num_prompt_tiles == 4);
  CHECK(summary.max_idx(3) == 12);
  CHECK(sched.grid_dim(summary).x == 8);
  const std::vector<std::string> expected = {"(0,0,0,T) (0,2,0,T)",
                                             "(32,0,0,T) (32,2,0,T)",
                                             "(64,0,0,T) (64,2,0,T)",
                                             "(96,0,0,T) (96,2,0,T)",
                                             "(0,1,0,T)",
                                             "(32,1,0,T)",
                                             "(64,1,0,T)",
                                             "(96,1,0,T)"};
  CHECK(walk(sched, summary) == expected);
}

TEST_CASE("reference table: PROMPT_ROTATE") {
  const TileScheduler<32, 3, 8, Schedule::PromptRotate> sched;
  const TileSummary summary = TileSummary::make(1, 100, 32);
  const std::vector<std::string> expected = {"(0,0,0,T) (0,2,0,T)",
                                             "(32,0,0,T) (32,2,0,T)",
                                             "(64,0,0,T) (64,2,0,T)",
                                             "(96,0,0,T) (96,2,0,T)",
                                             "(96,1,0,T)",
                                             "(64,1,0,T)",
                                             "(32,1,0,T)",
                                             "(0,1,0,T)"};
  CHECK(walk(sched, summary) == expected);
}

TEST_CASE("fetch_next_work steps by C and reports the end of the index range") {
  const TileScheduler<32, 3, 8> sched;
  const TileSummary summary = TileSummary::make(1, 100, 32);
  TileState st = sched.initial_state(nullptr, summary, BlockIndex{5, 0, 0});
  CHECK(to_string(sched.get_current_work_info(summary, st)) == "(32,1,0,T)");
  const WorkInfo next = sched.fetch_next_work(summary, st);
  CHECK(st.idx == 13);
  CHECK_FALSE(next.is_valid());
}
