#include "tilesched/sim/workload_io.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "json_read.hpp"
#include "tilesched/names.hpp"
#include "tilesched/sim/io.hpp"

namespace tilesched::sim {

using nlohmann::json;

Workload default_workload() {
  Workload w;
  // Mixed lengths, several not multiples of BM, so ragged tails and skipped tiles both occur.
  w.q_lens = {8192, 512, 3072, 1024, 6144, 2048, 700, 4500};
  w.num_q_heads = 32;
  w.num_kv_heads = 8;
  w.head_dim = 128;
  w.mask = Mask::Causal;
  w.block_m = 128;
  w.block_n = 128;
  w.scheduler = SchedulerKind::Tile;
  w.schedule = Schedule::Default;
  w.num_ctas = 132;
  w.resident_ctas = Workload::kResidentFromDevice;
  w.ragged_mode = RaggedMode::Safe;
  w.cost_profile = "h200";
  return w;
}

json workload_to_json(const Workload& w) {
  json j;
  j["q_lens"] = w.q_lens;
  if (!w.kv_lens.empty()) j["kv_lens"] = w.kv_lens;
  j["padded"] = w.padded;
  j["num_q_heads"] = w.num_q_heads;
  j["num_kv_heads"] = w.num_kv_heads;
  j["head_dim"] = w.head_dim;
  j["mask"] = to_string(w.mask);
  j["block_m"] = w.block_m;
  j["block_n"] = w.block_n;
  j["scheduler"] = to_string(w.scheduler);
  j["schedule"] = to_string(w.schedule);
  j["flip_prompt_idx"] = w.flip_prompt_idx;
  j["num_ctas"] = w.num_ctas;
  j["resident_ctas"] = w.resident_ctas;
  j["ragged_mode"] = to_string(w.ragged_mode);
  j["cost_profile"] = w.cost_profile;
  j["decoding"] = w.decoding;
  j["l2_bytes"] = w.l2_bytes;
  j["l2_min_rounds"] = w.l2_min_rounds;
  if (w.page_size != 0) j["page_size"] = w.page_size;
  j["split_kv_blocks"] = w.split_kv_blocks;
  return j;
}

namespace detail {

namespace {

template <class E>
E read_enum(const json& v, const std::string& field) {
  const std::string s = as_string(v, field);
  const std::optional<E> e = parse_enum<E>(s);
  if (!e) fail(field, "unknown name \"" + s + "\" (accepted: " + enum_choices<E>() + ")");
  return *e;
}

std::vector<u32> to_u32_lengths(const std::vector<std::uint64_t>& xs, const std::string& field) {
  std::vector<u32> out;
  out.reserve(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] > 0xFFFFFFFFull) fail(fmt::format("{}[{}]", field, i), "does not fit in 32 bits");
    out.push_back(static_cast<u32>(xs[i]));
  }
  return out;
}

std::vector<u32> lengths_from_row_offsets(const json& v, const std::string& field) {
  const auto offsets = as_u64_list(v, field);
  const std::string problem = validate_row_offsets(offsets, field.c_str());
  if (!problem.empty()) fail(field, problem);
  return lengths_from_offsets(offsets);
}

// The query lengths, given one of three ways. Returns whether they came as a padded batch x
// seq_len.
bool read_query_lengths(const json& j, const std::string& P, Workload& w) {
  const bool has_lens = j.contains("q_lens"), has_offsets = j.contains("q_row_offsets");
  const bool has_batch = j.contains("batch"), has_seq = j.contains("seq_len");
  const int ways = int(has_lens) + int(has_offsets) + int(has_batch || has_seq);
  if (ways == 0)
    fail(P + "q_lens",
         "the sequence lengths are missing: give q_lens, q_row_offsets, or batch and seq_len");
  if (ways > 1)
    fail(P + (has_lens ? "q_lens" : "q_row_offsets"),
         "give the sequence lengths one way only (q_lens, q_row_offsets, or batch and seq_len)");
  if (has_lens) {
    w.q_lens = to_u32_lengths(as_u64_list(j["q_lens"], P + "q_lens"), P + "q_lens");
  } else if (has_offsets) {
    w.q_lens = lengths_from_row_offsets(j["q_row_offsets"], P + "q_row_offsets");
  } else {
    if (!has_batch) fail(P + "batch", "required with seq_len (a padded batch of batch x seq_len)");
    if (!has_seq) fail(P + "seq_len", "required with batch (a padded batch of batch x seq_len)");
    const u32 batch = as_u32(j["batch"], P + "batch");
    const u32 seq = as_u32(j["seq_len"], P + "seq_len");
    if (batch > kMaxPaddedBatch) fail(P + "batch", fmt::format("is implausibly large: {}", batch));
    w.q_lens.assign(batch, seq);
    w.padded = true;
  }
  return has_batch || has_seq;
}

// The key lengths, when given (one way at most); kv_seq_len only with a padded batch x seq_len.
void read_key_lengths(const json& j, const std::string& P, bool padded_batch, Workload& w) {
  const bool has_kv_lens = j.contains("kv_lens"), has_kv_offsets = j.contains("kv_row_offsets");
  const bool has_kv_seq = j.contains("kv_seq_len");
  if (int(has_kv_lens) + int(has_kv_offsets) + int(has_kv_seq) > 1)
    fail(P + "kv_lens", "give the KV lengths one way only (kv_lens, kv_row_offsets or kv_seq_len)");
  if (has_kv_seq && !padded_batch)
    fail(P + "kv_seq_len", "only goes with batch and seq_len (use kv_lens otherwise)");
  if (has_kv_lens)
    w.kv_lens = to_u32_lengths(as_u64_list(j["kv_lens"], P + "kv_lens"), P + "kv_lens");
  if (has_kv_offsets)
    w.kv_lens = lengths_from_row_offsets(j["kv_row_offsets"], P + "kv_row_offsets");
  if (has_kv_seq) w.kv_lens.assign(w.q_lens.size(), as_u32(j["kv_seq_len"], P + "kv_seq_len"));
}

}  // namespace

Workload workload_from_json_at(const json& j, const std::string& prefix) {
  require_object(
      j, prefix.empty() ? "a workload" : "field '" + prefix.substr(0, prefix.size() - 1) + "'");
  check_known_fields(j, {"q_lens",          "q_row_offsets",  "batch",         "seq_len",
                         "kv_lens",         "kv_row_offsets", "kv_seq_len",    "padded",
                         "num_q_heads",     "num_kv_heads",   "head_dim",      "mask",
                         "block_m",         "block_n",        "scheduler",     "schedule",
                         "flip_prompt_idx", "num_ctas",       "resident_ctas", "ragged_mode",
                         "cost_profile",    "decoding",       "l2_bytes",      "l2_min_rounds",
                         "page_size",       "split_kv_blocks"},
                     prefix);
  Workload w;
  const std::string P = prefix;
  const bool padded_batch = read_query_lengths(j, P, w);
  read_key_lengths(j, P, padded_batch, w);

  if (j.contains("padded")) {
    const bool padded = as_bool(j["padded"], P + "padded");
    if (!padded && padded_batch)
      fail(P + "padded", "batch and seq_len describe a padded batch; padded cannot be false");
    w.padded = padded;
  }
  if (j.contains("num_q_heads")) w.num_q_heads = as_u32(j["num_q_heads"], P + "num_q_heads");
  if (j.contains("num_kv_heads")) w.num_kv_heads = as_u32(j["num_kv_heads"], P + "num_kv_heads");
  if (j.contains("head_dim")) w.head_dim = as_u32(j["head_dim"], P + "head_dim");
  if (j.contains("block_m")) w.block_m = as_u32(j["block_m"], P + "block_m");
  if (j.contains("block_n")) w.block_n = as_u32(j["block_n"], P + "block_n");
  if (j.contains("num_ctas")) w.num_ctas = as_u32(j["num_ctas"], P + "num_ctas");
  if (j.contains("resident_ctas"))
    w.resident_ctas = as_u32(j["resident_ctas"], P + "resident_ctas");
  if (j.contains("mask")) w.mask = read_enum<Mask>(j["mask"], P + "mask");
  if (j.contains("scheduler"))
    w.scheduler = read_enum<SchedulerKind>(j["scheduler"], P + "scheduler");
  if (j.contains("schedule")) w.schedule = read_enum<Schedule>(j["schedule"], P + "schedule");
  if (j.contains("ragged_mode"))
    w.ragged_mode = read_enum<RaggedMode>(j["ragged_mode"], P + "ragged_mode");
  if (j.contains("flip_prompt_idx"))
    w.flip_prompt_idx = as_bool(j["flip_prompt_idx"], P + "flip_prompt_idx");
  if (j.contains("decoding")) w.decoding = as_bool(j["decoding"], P + "decoding");
  if (j.contains("l2_bytes")) w.l2_bytes = as_u64(j["l2_bytes"], P + "l2_bytes");
  // Absent: the sections of files written before the field, one round at least.
  w.l2_min_rounds =
      j.contains("l2_min_rounds") ? as_u32(j["l2_min_rounds"], P + "l2_min_rounds") : 1;
  if (j.contains("page_size")) w.page_size = as_u32(j["page_size"], P + "page_size");
  if (j.contains("split_kv_blocks"))
    w.split_kv_blocks = as_u32(j["split_kv_blocks"], P + "split_kv_blocks");
  if (j.contains("cost_profile")) {
    w.cost_profile = as_string(j["cost_profile"], P + "cost_profile");
    if (w.cost_profile.empty()) fail(P + "cost_profile", "must not be empty");
  }

  const std::string problem = w.validate();
  if (!problem.empty())
    throw std::invalid_argument((prefix.empty()
                                     ? "invalid workload: "
                                     : "invalid " + prefix.substr(0, prefix.size() - 1) + ": ") +
                                problem);
  return w;
}

}  // namespace detail

Workload workload_from_json(const json& j) {
  return detail::workload_from_json_at(j, "");
}

Workload read_workload(const std::string& path) {
  return detail::read_json_file(path, workload_from_json);
}

WorkloadFile read_workload_file(const std::string& path) {
  return detail::read_json_file(path, [](const json& j) {
    return WorkloadFile{workload_from_json(j), j.is_object() && j.contains("num_ctas")};
  });
}

void write_workload(const std::string& path, const Workload& w) {
  const detail::JsonDocument doc(workload_to_json(w));  // freed without allocating
  write_file_atomically(path, doc.root().dump(2) + "\n");
}

}  // namespace tilesched::sim
