// Files and JSON: atomic writes, workload and trace round trips, and one message per bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;
using nlohmann::json;

namespace {

std::string workload_error(const json& j) {
  return invalid_argument_text([&] { sim::workload_from_json(j); });
}

json good_trace_json() {
  return replayed_trace_json({100, 30});
}

// Two valid sequences with one field set to `value`.
json with(const char* key, json value) {
  json j = {{"q_lens", {100, 50}}};
  j[key] = std::move(value);
  return j;
}

}  // namespace

TEST_CASE("write_file_atomically writes, replaces, leaves no temporary; read_file reads back") {
  TempDir dir;
  const std::string path = dir.path + "/out.json";
  sim::write_file_atomically(path, "first");
  CHECK(sim::read_file(path) == "first");
  sim::write_file_atomically(path, std::string("second\0bytes", 12));
  CHECK(sim::read_file(path) == std::string("second\0bytes", 12));
  CHECK(dir.files() == std::vector<std::string>{"out.json"});
}

TEST_CASE("file errors name the path") {
  const std::string missing = "/tmp/tilesched-no-such-dir-xyz/trace.json";
  const std::string w = runtime_error_text([&] { sim::write_file_atomically(missing, "x"); });
  CHECK(contains(w, missing));
  CHECK(contains(w, "cannot write"));
  const std::string r = runtime_error_text([&] { sim::read_file(missing); });
  CHECK(contains(r, missing));
  CHECK(contains(r, "cannot read"));
}

TEST_CASE("default workload is the documented ragged causal prefill") {
  const Workload w = sim::default_workload();
  CHECK(w.validate().empty());
  CHECK(w.q_lens == std::vector<u32>{8192, 512, 3072, 1024, 6144, 2048, 700, 4500});
  CHECK(w.num_q_heads == 32);
  CHECK(w.num_kv_heads == 8);
  CHECK(w.head_dim == 128);
  CHECK(w.mask == Mask::Causal);
  CHECK(w.num_ctas == 132);
  CHECK(w.scheduler == SchedulerKind::Tile);
  CHECK_FALSE(w.padded);
}

TEST_CASE("workload JSON round-trips") {
  std::vector<Workload> ws = {sim::default_workload()};
  Workload w = sim::default_workload();
  w.kv_lens = w.q_lens;
  for (u32& k : w.kv_lens) k += 77;
  w.scheduler = SchedulerKind::Queued;
  w.schedule = Schedule::PromptRotate;
  w.mask = Mask::None;
  w.cost_profile = "h100";
  ws.push_back(w);
  w = Workload{};
  w.q_lens = {256, 256};
  w.padded = true;
  w.scheduler = SchedulerKind::Transient;
  w.flip_prompt_idx = true;
  w.ragged_mode = RaggedMode::Faithful;
  w.block_m = 64;
  w.block_n = 32;
  w.head_dim = 64;
  w.num_ctas = 7;
  w.resident_ctas = 9;
  ws.push_back(w);
  for (const Workload& orig : ws) {
    const json j = sim::workload_to_json(orig);
    const Workload back = sim::workload_from_json(json::parse(j.dump()));
    CHECK(sim::workload_to_json(back) == j);
    CHECK(back.q_lens == orig.q_lens);
    CHECK(back.kv_lens == orig.kv_lens);
    CHECK(back.padded == orig.padded);
    CHECK(back.scheduler == orig.scheduler);
    CHECK(back.schedule == orig.schedule);
    CHECK(back.ragged_mode == orig.ragged_mode);
    CHECK(back.flip_prompt_idx == orig.flip_prompt_idx);
    CHECK(back.num_ctas == orig.num_ctas);
    CHECK(back.resident_ctas == orig.resident_ctas);
    CHECK(back.cost_profile == orig.cost_profile);
  }
  TempDir dir;
  sim::write_workload(dir.path + "/w.json", ws[1]);
  CHECK(sim::workload_to_json(sim::read_workload(dir.path + "/w.json")) ==
        sim::workload_to_json(ws[1]));
}

TEST_CASE("workload JSON: without resident_ctas the device's resident count applies") {
  const Workload device =
      sim::workload_from_json(json{{"q_lens", {300}}, {"scheduler", "transient"}, {"num_ctas", 5}});
  CHECK(device.num_ctas == 5);
  CHECK(device.resident_ctas == Workload::kResidentFromDevice);
  // The replay fills in the profile's SMs x CTAs per SM at d = 128 and records it.
  CHECK(sim::replay(device).workload.resident_ctas ==
        sim::CostModel::builtin(device.cost_profile).resident_ctas(128));
  CHECK(sim::replay(device, sim::CostModel::builtin("h200_mma_sync")).workload.resident_ctas ==
        132 * 2);
  const Workload split =
      sim::workload_from_json(json{{"q_lens", {300}}, {"num_ctas", 5}, {"resident_ctas", 11}});
  CHECK(split.num_ctas == 5);
  CHECK(split.resident_ctas == 11);
  CHECK(sim::replay(split).workload.resident_ctas == 11);
  CHECK(sim::workload_from_json(json{{"q_lens", {300}}, {"resident_ctas", 0}}).resident_ctas ==
        Workload::kResidentFromDevice);
  CHECK(contains(workload_error(json{{"q_lens", {300}}, {"resident_ctas", -1}}), "resident_ctas"));
}

TEST_CASE("workload file: whether it chose num_ctas (the tool fills in the device's otherwise)") {
  TempDir dir;
  const std::string with = dir.path + "/with.json", without = dir.path + "/without.json";
  sim::write_file_atomically(with, R"({"q_lens": [300], "num_ctas": 7})");
  sim::write_file_atomically(without, R"({"q_lens": [300]})");
  const sim::WorkloadFile a = sim::read_workload_file(with);
  CHECK(a.sets_num_ctas);
  CHECK(a.workload.num_ctas == 7);
  const sim::WorkloadFile b = sim::read_workload_file(without);
  CHECK_FALSE(b.sets_num_ctas);
  CHECK(b.workload.num_ctas == 132);  // the Workload default, until the tool replaces it
  // A written workload always carries num_ctas, so it reads back as chosen.
  sim::write_workload(without, b.workload);
  CHECK(sim::read_workload_file(without).sets_num_ctas);
}

TEST_CASE("workload JSON: the three ways to give lengths") {
  const Workload a = sim::workload_from_json(json{{"q_lens", {5, 0, 9}}});
  CHECK(a.q_lens == std::vector<u32>{5, 0, 9});
  const Workload b = sim::workload_from_json(json{{"q_row_offsets", {0, 5, 5, 14}}});
  CHECK(b.q_lens == std::vector<u32>{5, 0, 9});
  const Workload c = sim::workload_from_json(json{{"batch", 3}, {"seq_len", 100}});
  CHECK(c.padded);
  CHECK(c.q_lens == std::vector<u32>{100, 100, 100});
  const Workload d =
      sim::workload_from_json(json{{"batch", 2}, {"seq_len", 10}, {"kv_seq_len", 30}});
  CHECK(d.kv_lens == std::vector<u32>{30, 30});
}

TEST_CASE("workload JSON: each bad input has its own message naming the field") {
  std::string m;
  m = workload_error(with("num_heads", 8));
  CHECK(contains(m, "'num_heads'"));
  CHECK(contains(m, "unknown field"));
  m = workload_error(with("head_dim", "128"));
  CHECK(contains(m, "'head_dim'"));
  CHECK(contains(m, "expected a non-negative integer, got string \"128\""));
  m = workload_error(with("head_dim", 64.5));
  CHECK(contains(m, "'head_dim'"));
  CHECK(contains(m, "expected an integer"));
  m = workload_error(with("scheduler", "dynamic"));
  CHECK(contains(m, "'scheduler'"));
  CHECK(contains(m,
                 "unknown name \"dynamic\" (accepted: tile, queued, transient, lpt, "
                 "lpt_queued, planned, ragged_queued, split_tail, split_kv, stream_k)"));
  m = workload_error(with("mask", "sliding"));
  CHECK(contains(m, "'mask'"));
  CHECK(contains(m, "unknown name \"sliding\""));
  m = workload_error(with("num_ctas", -4));
  CHECK(contains(m, "'num_ctas'"));
  CHECK(contains(m, "must not be negative, got -4"));
  m = workload_error(json{{"q_lens", {100, -1}}});
  CHECK(contains(m, "'q_lens[1]'"));
  CHECK(contains(m, "must not be negative"));
  m = workload_error(json{{"q_lens", "100"}});
  CHECK(contains(m, "'q_lens'"));
  CHECK(contains(m, "expected an array"));
  m = workload_error(with("flip_prompt_idx", 1));
  CHECK(contains(m, "'flip_prompt_idx'"));
  CHECK(contains(m, "expected true or false"));
}

TEST_CASE("workload JSON: bad row offsets, lengths given twice or not at all, bad shapes") {
  std::string m;
  m = workload_error(json{{"q_row_offsets", {0, 10, 5}}});
  CHECK(contains(m, "'q_row_offsets'"));
  CHECK(contains(m, "not monotone"));
  m = workload_error(json{{"q_row_offsets", {3, 10}}});
  CHECK(contains(m, "must start at 0"));
  m = workload_error(json{{"num_q_heads", 8}});
  CHECK(contains(m, "sequence lengths are missing"));
  m = workload_error(json{{"q_lens", {1}}, {"batch", 2}, {"seq_len", 3}});
  CHECK(contains(m, "one way only"));
  m = workload_error(json{{"batch", 2}});
  CHECK(contains(m, "'seq_len'"));
  m = workload_error(with("num_q_heads", 6));
  CHECK(contains(m, "invalid workload"));
  CHECK(contains(m, "multiple of KV heads"));
  m = workload_error(json{{"q_lens", {100}}, {"kv_lens", {50}}});
  CHECK(contains(m, "fewer keys"));
  m = workload_error(json::array({1, 2}));
  CHECK(contains(m, "must be a JSON object"));
  m = workload_error(with("num_ctas", 5000000000ull));
  CHECK(contains(m, "does not fit in 32 bits"));
  m = workload_error(with("decoding", "yes"));
  CHECK(contains(m, "'decoding'"));
  CHECK(contains(m, "expected true or false"));
  m = workload_error(json{{"q_lens", {0, 5}}, {"kv_lens", {10, 10}}, {"decoding", true}});
  CHECK(contains(m, "at least 1 new token per sequence (1 to decode, up to 16 to verify "
                    "speculated tokens, more for a prefill sequence of a mixed batch), but "
                    "sequence 0 has none"));
  m = workload_error(with("l2_bytes", -1));
  CHECK(contains(m, "'l2_bytes'"));
  m = workload_error(with("l2_min_rounds", 0));
  CHECK(contains(m, "l2_min_rounds is 0: an L2 section holds at least one round"));
  m = workload_error(with("l2_min_rounds", "two"));
  CHECK(contains(m, "'l2_min_rounds'"));
}

TEST_CASE("workload JSON: a decode workload, and the L2 sections the planned schedulers use") {
  const Workload w = sim::workload_from_json(json{{"q_lens", {1, 16, 3}},
                                                  {"kv_lens", {4096, 100, 70000}},
                                                  {"decoding", true},
                                                  {"scheduler", "planned"},
                                                  {"l2_bytes", 1000000},
                                                  {"l2_min_rounds", 3},
                                                  {"split_kv_blocks", 5}});
  CHECK(w.decoding);
  CHECK(w.l2_bytes == 1000000);
  CHECK(w.l2_min_rounds == 3);
  CHECK(w.scheduler == SchedulerKind::Planned);
  CHECK(w.q_lens == std::vector<u32>{1, 16, 3});  // speculative verify: up to 16 new tokens
  CHECK(w.split_kv_blocks == 5);
  CHECK(w.tile_shape() == w.decode_tile_tokens());  // one tile holds every new token of a sequence
  CHECK(w.tile_shape() >= kMaxDecodeTokens);
  CHECK(w.scheduled_heads() == w.num_kv_heads);
  const json j = sim::workload_to_json(w);
  CHECK(j.at("split_kv_blocks") == 5);
  CHECK(j.at("decoding") == true);
  CHECK(j.at("l2_bytes") == 1000000);
  CHECK(j.at("l2_min_rounds") == 3);
  CHECK(sim::workload_to_json(sim::workload_from_json(j)) == j);
  // Without the fields: prefill, the default L2, and sections of one round at least (the rule
  // of the files written before the field: their traces followed it), where a workload built in
  // code has kDefaultL2MinRounds.
  const Workload prefill = sim::workload_from_json(json{{"q_lens", {100}}});
  CHECK_FALSE(prefill.decoding);
  CHECK(prefill.l2_bytes == kDefaultL2Bytes);
  CHECK(prefill.l2_min_rounds == 1);
  CHECK(Workload{}.l2_min_rounds == kDefaultL2MinRounds);
  Workload in_code;
  in_code.q_lens = {100};
  CHECK(sim::workload_from_json(sim::workload_to_json(in_code)).l2_min_rounds ==
        kDefaultL2MinRounds);
}

TEST_CASE("read_workload: missing file and bad JSON name the path") {
  TempDir dir;
  const std::string path = dir.path + "/bad.json";
  sim::write_file_atomically(path, "{\"q_lens\": [1, 2,");
  const std::string m = invalid_argument_text([&] { sim::read_workload(path); });
  CHECK(contains(m, path));
  CHECK(contains(m, "not valid JSON"));
  sim::write_file_atomically(path, "{\"q_lens\": [1, 2], \"bogus\": 1}");
  const std::string m2 = invalid_argument_text([&] { sim::read_workload(path); });
  CHECK(contains(m2, path));
  CHECK(contains(m2, "'bogus'"));
  CHECK(contains(runtime_error_text([&] { sim::read_workload(dir.path + "/none.json"); }),
                 "none.json"));
}

TEST_CASE("trace JSON round-trips exactly, in memory and through a file") {
  Workload w = sim::default_workload();
  w.scheduler = SchedulerKind::Queued;
  Trace t = sim::replay(w);
  t.created = "2026-11-29T16:30:00Z";
  t.events[3].sm_id = 17;
  t.events[5].start_us = 0.1 + 0.2;  // a value that needs all 17 digits
  t.events[5].end_us = 1.0 / 3.0;
  TempDir dir;
  const std::string path = dir.path + "/trace.json";
  sim::write_trace(path, t);
  for (const Trace& back : {sim::trace_from_json(sim::trace_to_json(t)), sim::read_trace(path)}) {
    CHECK(back.source == "sim");
    CHECK(back.device == sim::CostModel::builtin("h200").device);  // the replay's cost model
    CHECK(back.created == t.created);
    CHECK(back.launched_ctas == t.launched_ctas);
    CHECK(sim::workload_to_json(back.workload) == sim::workload_to_json(t.workload));
    REQUIRE(back.events.size() == t.events.size());
    for (std::size_t i = 0; i < t.events.size(); ++i)
      REQUIRE_MESSAGE(same_event(back.events[i], t.events[i]), show(t.events[i]));
  }
  CHECK(sim::trace_to_json(sim::read_trace(path)) == sim::trace_to_json(t));
}

TEST_CASE(
    "a split_tail trace round-trips its pieces, in memory and through a file; a piece past its "
    "sequence's blocks is refused") {
  Workload w;
  w.q_lens = {300, 300};
  w.padded = true;
  w.num_q_heads = w.num_kv_heads = 3;
  w.mask = Mask::None;
  w.num_ctas = 4;
  w.scheduler = SchedulerKind::SplitTail;
  REQUIRE_MESSAGE(w.validate().empty(), w.validate());
  const Trace t = sim::replay(w);
  const auto piece = std::find_if(t.events.begin(), t.events.end(),
                                  [](const TraceEvent& e) { return e.kv_block_begin > 0; });
  REQUIRE(piece != t.events.end());
  // The file is written by the streamed writer, not through trace_to_json: both must keep a
  // piece's first block (the streamed one dropped it, so a replayed or diffed split_tail trace
  // read its pieces as whole tiles).
  TempDir dir;
  const std::string path = dir.path + "/trace.json";
  sim::write_trace(path, t);
  for (const Trace& back : {sim::trace_from_json(sim::trace_to_json(t)), sim::read_trace(path)}) {
    REQUIRE(back.events.size() == t.events.size());
    for (std::size_t i = 0; i < t.events.size(); ++i)
      CHECK_MESSAGE(same_event(back.events[i], t.events[i]), show(t.events[i]));
  }
  // The file holds what trace_to_json holds, key for key.
  CHECK(json::parse(sim::read_file(path)) == sim::trace_to_json(t));
  json j = sim::trace_to_json(t);
  j["events"][std::size_t(piece - t.events.begin())]["kv_block_begin"] = 3;  // 3 blocks of 128
  try {
    sim::trace_from_json(j);
    FAIL("a piece past its sequence's 3 KV blocks was accepted");
  } catch (const std::exception& e) {
    CHECK_MESSAGE(contains(e.what(), "kv_block_begin"), e.what());
  }
}

TEST_CASE("trace JSON: each bad input has its own message") {
  const json good = good_trace_json();
  REQUIRE(good["events"].size() > 3);
  CHECK(trace_error(good) == "<no exception>");
  auto edit = [&](auto f) {
    json j = good;
    f(j);
    return trace_error(j);
  };
  std::string m;
  m = edit([](json& j) { j["format"] = "chrome-trace"; });
  CHECK(contains(m, "'format'"));
  CHECK(contains(m, "expected \"tilesched-trace\""));
  m = edit([](json& j) { j["version"] = 2; });
  CHECK(contains(m, "unsupported trace version 2"));
  m = edit([](json& j) { j.erase("events"); });
  CHECK(contains(m, "'events'"));
  CHECK(contains(m, "required field is missing"));
  m = edit([](json& j) { j.erase("workload"); });
  CHECK(contains(m, "'workload'"));
  m = edit([](json& j) { j["events"] = 5; });
  CHECK(contains(m, "expected an array of events"));
  m = edit([](json& j) { j["launched_ctas"] = "3"; });
  CHECK(contains(m, "'launched_ctas'"));
  CHECK(contains(m, "expected a non-negative integer"));
  m = edit([](json& j) { j["extra"] = true; });
  CHECK(contains(m, "'extra'"));
  CHECK(contains(m, "unknown field"));
  m = edit([](json& j) { j["workload"]["head_dim"] = -1; });
  CHECK(contains(m, "'workload.head_dim'"));
  m = edit([](json& j) { j["workload"]["num_kv_heads"] = 3; });
  CHECK(contains(m, "invalid workload"));
  m = edit([](json& j) { j["events"][1]["cta"] = 3; });
  CHECK(contains(m, "'events[1].cta'"));
  CHECK(contains(m, "not below launched_ctas (3)"));
  m = edit([](json& j) { std::swap(j["events"][0], j["events"][1]); });
  CHECK(contains(m, "ordered by (cta, step)"));
  m = edit([](json& j) { j["events"][2].erase("end_us"); });
  CHECK(contains(m, "'events[2].end_us'"));
  CHECK(contains(m, "required field is missing"));
  m = edit([](json& j) { j["events"][2]["start_us"] = "soon"; });
  CHECK(contains(m, "'events[2].start_us'"));
  CHECK(contains(m, "expected a number"));
  m = edit([](json& j) { j["events"][2]["start_us"] = 1e9; });
  CHECK(contains(m, "'events[2].end_us'"));
  CHECK(contains(m, "before it starts"));
  m = edit([](json& j) { j["events"][0]["prompt_idx"] = 2; });
  CHECK(contains(m, "'events[0].prompt_idx'"));
  m = edit([](json& j) { j["events"][0]["head_idx"] = 2; });
  CHECK(contains(m, "'events[0].head_idx'"));
  m = edit([](json& j) { j["events"][0]["colour"] = "red"; });
  CHECK(contains(m, "'events[0].colour'"));
  m = edit([](json& j) { j["events"][0] = json::array(); });
  CHECK(contains(m, "'events[0]' must be a JSON object"));
  m = trace_error(json::array());
  CHECK(contains(m, "a trace must be a JSON object"));
}

TEST_CASE("trace JSON: a file that is not JSON is named") {
  TempDir dir;
  const std::string path = dir.path + "/t.json";
  sim::write_file_atomically(path, "not json");
  const std::string f = invalid_argument_text([&] { sim::read_trace(path); });
  CHECK(contains(f, path));
  CHECK(contains(f, "not valid JSON"));
}
