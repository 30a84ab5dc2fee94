// The handful of problems whose GPU traces and outputs are kept in tests/data/golden, so CI (no
// GPU) can replay what an H200 did against the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/workload.hpp"

namespace tilesched::golden {

struct Problem {
  std::string name;
  Workload workload;
  std::uint64_t seed;
};

inline std::vector<Problem> problems() {
  Workload ragged;
  ragged.q_lens = {130, 1, 0, 257, 77};  // not multiples of 128, length 1, an empty sequence
  ragged.num_q_heads = 2;
  ragged.num_kv_heads = 1;
  ragged.head_dim = 64;
  ragged.mask = Mask::Causal;
  ragged.block_m = 128;
  ragged.block_n = 128;
  ragged.num_ctas = 7;

  std::vector<Problem> out;
  Workload w = ragged;
  out.push_back({"ragged_causal_tile_default", w, 11});
  w.schedule = Schedule::PromptRotate;
  w.num_ctas = 5;
  out.push_back({"ragged_causal_tile_prompt_rotate", w, 12});
  w = ragged;
  w.scheduler = SchedulerKind::Queued;
  out.push_back({"ragged_causal_queued", w, 13});
  w = ragged;
  w.scheduler = SchedulerKind::Transient;
  w.flip_prompt_idx = true;
  out.push_back({"ragged_causal_transient_flip", w, 14});

  Workload padded;
  padded.padded = true;
  padded.q_lens = {200, 200};
  padded.num_q_heads = 4;
  padded.num_kv_heads = 1;  // GQA group 4
  padded.head_dim = 128;
  padded.mask = Mask::None;
  padded.block_m = 128;
  padded.block_n = 128;
  padded.num_ctas = 132;
  out.push_back({"padded_gqa_noncausal_tile", padded, 15});
  return out;
}

}  // namespace tilesched::golden
