// Workloads as JSON (the format is described in docs/trace-format.md, section "workload").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tilesched/workload.hpp"

namespace tilesched::sim {

// The most sequences a padded batch (batch x seq_len) may have, in a file or on the command line:
// 16M one-row sequences already take 64 MB of lengths, and more is a typo, not a workload.
inline constexpr u32 kMaxPaddedBatch = 1u << 24;

// A realistic ragged causal prefill: 8 sequences of mixed lengths 512..8192 (not all multiples of
// 128), 32 query heads, 8 KV heads, d = 128, BM = BN = 128, 132 CTAs, static tile scheduler,
// default schedule, safe ragged mode, h200 cost profile.
Workload default_workload();

// Every field, with enums by name. Round-trips through workload_from_json.
nlohmann::json workload_to_json(const Workload& w);

// Reads a workload. Sequence lengths come from exactly one of
//   "q_lens": [..]                      ragged batch (or padded with "padded": true)
//   "q_row_offsets": [0, ..]            B+1 exclusive prefix sums (validate_row_offsets)
//   "batch": B, "seq_len": S            padded batch of B sequences of S rows
// KV lengths optionally from "kv_lens" or "kv_row_offsets" (or "kv_seq_len" with batch+seq_len).
// Every other field is optional and defaults as in Workload. Throws std::invalid_argument with a
// message naming the field and the problem: unknown field, wrong type, bad enum name, negative or
// too large number, conflicting length fields, and finally Workload::validate().
Workload workload_from_json(const nlohmann::json& j);

// read_file + parse + workload_from_json; parse errors and the path are in the message
// (std::invalid_argument; std::runtime_error when the file cannot be read).
Workload read_workload(const std::string& path);

// A workload file as read_workload reads it, and whether it chose num_ctas itself: a file that
// leaves it out leaves C to the device (SMs x CTAs per SM), which the tool fills in.
struct WorkloadFile {
  Workload workload;
  bool sets_num_ctas = false;
};
WorkloadFile read_workload_file(const std::string& path);

// workload_to_json, pretty-printed, written atomically.
void write_workload(const std::string& path, const Workload& w);

}  // namespace tilesched::sim
