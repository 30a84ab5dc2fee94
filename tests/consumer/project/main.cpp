// Walks SPEC §4.1's reference problem with the installed headers and prints CTA 4's tiles.
#include <cstdio>
#include <tilesched/names.hpp>
#include <tilesched/tilesched.hpp>

int main() {
  using namespace tilesched;
  const TileScheduler<32, 3, 8, Schedule::PromptRotate> sched;
  const TileSummary summary = TileSummary::make(1, 100, 32);
  u32 sidx[2] = {0, 0};
  TileState st = sched.initial_state(sidx, summary, BlockIndex{4, 0, 0});
  for (auto s = sched.first_work(summary, st); s; s = sched.advance(summary, st))
    std::printf("consumer: CTA 4 visits %s\n",
                to_string(sched.get_current_work_info(summary, st)).c_str());
  return 0;
}
