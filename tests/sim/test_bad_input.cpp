// Files no reader may crash on, and values no trace or cost file may hold: each is rejected with
// a one-line message naming the file, the field and the problem. A document nested 100000 levels
// deep once crashed every command (stack overflow); it stays here as a regression test, beside
// test_memory_budget.cpp's for running out of memory.
#include <doctest/doctest.h>

#include <limits>

#include "sim_test_util.hpp"

using namespace tilesched;
using namespace tilesched::simtest;
using nlohmann::json;

namespace {

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path + "/" + name;
  sim::write_file_atomically(path, text);
  return path;
}

// Every reader's message for the file at `path` (invalid_argument or runtime_error), in the order
// workload, trace, cost table.
std::vector<std::string> every_reader_error(const std::string& path) {
  std::vector<std::string> messages;
  for (const std::function<void()>& read : std::vector<std::function<void()>>{
           [&] { sim::read_workload(path); }, [&] { sim::read_trace(path); },
           [&] { sim::CostModel::load(path); }}) {
    try {
      read();
      messages.push_back("<no exception>");
    } catch (const std::exception& e) {
      messages.push_back(e.what());
    }
  }
  return messages;
}

bool one_line(const std::string& message) {
  return message.find('\n') == std::string::npos && message.find('\r') == std::string::npos;
}

// Three tiles of 128 rows per head (T = 3), 12 work indices; sequence 1 has one KV block.
json small_trace_json() {
  return replayed_trace_json({300, 100});
}

json cost_table(double fixed_us, double us_per_block, double us_per_masked_block) {
  return json{{"format", "tilesched-cost"},
              {"version", 1},
              {"device", "test"},
              {"head_dims",
               {{"128",
                 {{"fixed_us", fixed_us},
                  {"us_per_block", us_per_block},
                  {"us_per_masked_block", us_per_masked_block}}}}}};
}

}  // namespace

TEST_CASE("a document nested 100000 levels deep is rejected by every reader, with its depth") {
  TempDir dir;
  const std::string path =
      write(dir, "deep.json", std::string(100000, '[') + std::string(100000, ']'));
  for (const std::string& m : every_reader_error(path)) {
    CHECK_MESSAGE(contains(m, "'" + path + "' nests arrays and objects 100000 levels deep"), m);
    CHECK(contains(m, "at most 64 are accepted"));
    CHECK(one_line(m));
  }
  // Inside strings, brackets do not count; the limit itself is accepted by the parser (the
  // workload reader then rejects the value's type).
  const std::string at_limit =
      "{\"q_lens\":" + std::string(63, '[') + "\"[[\"" + std::string(63, ']') + "}";
  const std::string m =
      invalid_argument_text([&] { sim::read_workload(write(dir, "limit.json", at_limit)); });
  CHECK_MESSAGE(contains(m, "field 'q_lens[0]': expected a non-negative integer, got an array"), m);
  const std::string over = "{\"q_lens\":" + std::string(64, '[') + std::string(64, ']') + "}";
  CHECK(contains(invalid_argument_text([&] { sim::read_workload(write(dir, "over.json", over)); }),
                 "nests arrays and objects 65 levels deep"));
}

TEST_CASE("a duplicate key is an error naming the field, at any depth") {
  TempDir dir;
  const auto error = [&](const std::string& text) {
    return invalid_argument_text([&] { sim::read_workload(write(dir, "w.json", text)); });
  };
  std::string m = error(R"({"q_lens": [1, 2], "num_ctas": 4, "num_ctas": 8})");
  CHECK_MESSAGE(contains(m, "w.json': field 'num_ctas': duplicate key"), m);

  json trace = small_trace_json();
  std::string text = trace.dump();
  const std::string cta_key = "{\"cta\":";
  text.insert(text.find(cta_key, text.find("\"events\"")) + 1, "\"cta\":0,");  // events[0]
  m = invalid_argument_text([&] { sim::read_trace(write(dir, "t.json", text)); });
  CHECK_MESSAGE(contains(m, "field 'events[0].cta': duplicate key"), m);
  text = trace.dump();
  text.insert(text.find("{", text.find("\"workload\"")) + 1, "\"head_dim\":64,");
  m = invalid_argument_text([&] { sim::read_trace(write(dir, "t.json", text)); });
  CHECK_MESSAGE(contains(m, "field 'workload.head_dim': duplicate key"), m);
}

TEST_CASE("a directory, a device, an empty file: each reader says which") {
  TempDir dir;
  for (const std::string& m : every_reader_error(dir.path))
    CHECK_MESSAGE(m == "cannot read '" + dir.path + "': it is a directory, not a file", m);
  for (const std::string& m : every_reader_error("/dev/zero"))
    CHECK_MESSAGE(m == "cannot read '/dev/zero': not a regular file", m);
  const std::string nul = write(dir, "nul.json", std::string("{\"q_lens\": [1]}\0junk", 20));
  for (const std::string& m : every_reader_error(nul))
    CHECK_MESSAGE(contains(m, "'" + nul + "' is not valid JSON: a NUL byte at offset 15"), m);
  const std::string empty = write(dir, "empty.json", "");
  for (const std::string& m : every_reader_error(empty))
    CHECK_MESSAGE(contains(m, "'" + empty + "' is not valid JSON (the file is empty)"), m);
}

TEST_CASE("messages stay on one line and short, whatever the keys and strings hold") {
  TempDir dir;
  const std::string newline_key = write(dir, "k.json", R"({"q_lens": [1], "a\nb\u001b[2J": 1})");
  std::string m = invalid_argument_text([&] { sim::read_workload(newline_key); });
  CHECK_MESSAGE(contains(m, "field 'a\\nb\\x1b[2J': unknown field"), m);
  CHECK(one_line(m));

  const std::string bad_utf8 =
      write(dir, "u8.json", "{\"q_lens\": [1], \"cost_profile\": \"\xff\"}");
  m = invalid_argument_text([&] { sim::read_workload(bad_utf8); });
  CHECK_MESSAGE(contains(m, "ill-formed UTF-8 byte; last read: '\"\\xff'"), m);
  CHECK(m.find('\xff') == std::string::npos);

  const std::string long_key =
      write(dir, "long.json", "{\"q_lens\": [1], \"" + std::string(1 << 20, 'x') + "\": 1}");
  m = invalid_argument_text([&] { sim::read_workload(long_key); });
  CHECK(contains(m, "field 'xxx"));
  CHECK(contains(m, "...': unknown field"));
  CHECK(m.size() < 1000);

  const std::string unterminated =
      write(dir, "u.json", "{\"q_lens\": \"" + std::string(1 << 20, 'y'));
  m = invalid_argument_text([&] { sim::read_workload(unterminated); });
  CHECK(contains(m, "is not valid JSON"));
  CHECK(m.size() < 1000);

  json trace = small_trace_json();
  trace["device"] = "H200\x1b[31m";
  CHECK(contains(trace_error(trace), "field 'device': must be printable text"));
  trace["device"] = std::string(300, 'd');
  CHECK(contains(trace_error(trace), "field 'device': is 300 bytes long; names are at most 256"));
}

TEST_CASE("trace values out of range are rejected with the field and the event") {
  const json good = small_trace_json();
  REQUIRE(trace_error(good) == "<no exception>");
  const auto edit = [&](auto f) {
    json j = good;
    f(j);
    return trace_error(j);
  };
  std::string m;
  m = edit([](json& j) { j["events"][1]["start_us"] = -1.5; });
  CHECK_MESSAGE(contains(m, "field 'events[1].start_us': must not be negative"), m);
  m = edit([](json& j) { j["events"][1]["end_us"] = 1e308; });
  CHECK_MESSAGE(contains(m, "field 'events[1].end_us': 1e+308 us is beyond the 1e+12 us"), m);
  m = edit([](json& j) { j["events"][1]["end_us"] = std::numeric_limits<double>::infinity(); });
  CHECK_MESSAGE(contains(m, "field 'events[1].end_us'"), m);
  m = edit([](json& j) { j["events"][2]["sm_id"] = -2; });
  CHECK_MESSAGE(contains(m, "field 'events[2].sm_id': -2 is neither -1"), m);
  m = edit([](json& j) { j["events"][2]["sm_id"] = 65536; });
  CHECK_MESSAGE(contains(m, "launched_ctas (3)"), m);
  CHECK(edit([](json& j) { j["events"][2]["sm_id"] = 65535; }) == "<no exception>");
  m = edit([](json& j) { j["events"][2]["sm_id"] = 2147483648ull; });
  CHECK_MESSAGE(contains(m, "field 'events[2].sm_id': does not fit in 32 bits"), m);
  m = edit([](json& j) { j["launched_ctas"] = 1u << 30; });
  CHECK_MESSAGE(contains(m,
                         "field 'launched_ctas': 1073741824 CTAs are more than the workload's 12 "
                         "work tiles"),
                m);
  m = edit([](json& j) { j["events"][0]["linear_idx"] = 12; });
  CHECK_MESSAGE(contains(m, "field 'events[0].linear_idx': work index 12 is not below"), m);
  m = edit([](json& j) { j["events"][0]["prompt_offset"] = 100; });
  CHECK_MESSAGE(contains(m, "field 'events[0].prompt_offset': 100 is not the start of a tile"), m);
  m = edit([](json& j) { j["events"][0]["prompt_offset"] = 384; });
  CHECK_MESSAGE(contains(m, "field 'events[0].prompt_offset'"), m);
  m = edit([](json& j) { j["events"][0]["query_rows"] = 129; });
  CHECK_MESSAGE(contains(m, "field 'events[0].query_rows': 129 rows are more than BM (128)"), m);
  m = edit([](json& j) {
    for (json& e : j["events"])
      if (e["prompt_idx"] == 1) e["kv_blocks"] = 2;
  });
  CHECK_MESSAGE(contains(m, "kv_blocks': 2 KV blocks are more than the 1 that sequence 1's keys"),
                m);
  m = edit([](json& j) { j["source"] = "cpu"; });
  CHECK_MESSAGE(contains(m, "field 'source': expected \"sim\" (predicted) or \"gpu\""), m);
}

TEST_CASE("a JSON number beyond double's range is rejected by the parser") {
  TempDir dir;
  std::string text = small_trace_json().dump();
  const std::string key = "\"end_us\":";
  const auto at = text.find(key) + key.size();
  text.replace(at, text.find(',', at) - at, "1e999");
  const std::string path = write(dir, "t.json", text);
  const std::string m = invalid_argument_text([&] { sim::read_trace(path); });
  CHECK_MESSAGE(contains(m, "'" + path + "' is not valid JSON: "), m);
  CHECK(contains(m, "number overflow parsing '1e999'"));
}

TEST_CASE("cost coefficients out of range or all zero are rejected; head dims have one spelling") {
  const auto error = [](const json& j) {
    return invalid_argument_text([&] { sim::CostModel::from_json(j); });
  };
  CHECK(error(cost_table(1, 2, 3)) == "<no exception>");
  CHECK(error(cost_table(sim::kMaxCostCoefficientUs, 0, 0)) == "<no exception>");
  std::string m = error(cost_table(1, 1e300, 3));
  CHECK_MESSAGE(contains(m, "field 'head_dims.128.us_per_block': 1e+300 us is more than"), m);
  m = error(cost_table(-1, 2, 3));
  CHECK_MESSAGE(contains(m, "field 'head_dims.128.fixed_us': must not be negative"), m);
  // All three 0: every makespan 0, and compare's speed-ups NaN. One of them 0 is a cost model.
  m = error(cost_table(0, 0, 0));
  CHECK_MESSAGE(m == "field 'head_dims.128': fixed_us, us_per_block and us_per_masked_block are "
                     "all 0: every tile would take no time, and no schedule could be told from "
                     "another",
                m);
  CHECK(error(cost_table(0, 1, 0)) == "<no exception>");
  json j = cost_table(1, 2, 3);
  j["head_dims"]["0128"] = j["head_dims"]["128"];
  CHECK(contains(error(j), "field 'head_dims.0128': key must be a head_dim in 1..1024"));
  for (const char* key : {"+64", " 64", "64 ", "1025", "0", "", "99999999999999999999"}) {
    json k = cost_table(1, 2, 3);
    k["head_dims"] = json{{key, k["head_dims"]["128"]}};
    CHECK_MESSAGE(contains(error(k), "key must be a head_dim in 1..1024"), key);
  }
}

TEST_CASE("the largest cost coefficients give a trace the reader accepts, or a clear refusal") {
  // Both sides use value_limits.hpp: whatever the simulator writes, viz can read.
  sim::CostModel slow = sim::CostModel::from_json(cost_table(
      sim::kMaxCostCoefficientUs, sim::kMaxCostCoefficientUs, sim::kMaxCostCoefficientUs));
  Workload w;
  w.q_lens = {1024, 512};
  w.num_q_heads = 2;
  w.num_kv_heads = 1;
  w.num_ctas = 2;
  const Trace t = sim::replay(w, slow);
  CHECK(sim::trace_from_json(sim::trace_to_json(t)).events.size() == t.events.size());
  // One CTA doing 2^20 rows with BN = 1: its times pass 1e12 us; replay says so instead of
  // writing a trace no reader accepts.
  w.q_lens = {1u << 20};
  w.num_q_heads = 1;
  w.block_n = 1;
  w.num_ctas = 1;
  w.mask = Mask::None;
  const std::string m = invalid_argument_text([&] { sim::replay(w, slow); });
  CHECK_MESSAGE(contains(m, "the predicted times run past 1e+12 us"), m);
}

TEST_CASE("faithful mode: a tile starting exactly at its sequence's end counts every KV block") {
  // q_lens {256, 128} with BM = 128: sequence 1's second tile starts at row 128, its end. One
  // CTA walks all four indices in faithful mode; that tile writes no rows, but the KV loop runs
  // over all of the sequence's keys (SPEC §7 counts blocks from the tile's start, not its rows).
  Workload w;
  w.q_lens = {256, 128};
  w.num_q_heads = 1;
  w.num_kv_heads = 1;
  w.num_ctas = 1;
  w.block_n = 64;
  w.ragged_mode = RaggedMode::Faithful;
  const Trace t = sim::replay(w);
  REQUIRE(t.events.size() == 4);
  const TraceEvent& at_end = t.events[3];
  CHECK(at_end.prompt_idx == 1);
  CHECK(at_end.prompt_offset == 128);
  CHECK(at_end.query_rows == 0);
  CHECK(at_end.kv_blocks == 2);  // ceil(128 keys / BN 64)
  const TileCost c = sim::event_tile_cost(w, at_end);
  CHECK(c.kv_blocks == 2);
  CHECK(c.masked_blocks == 0);  // every key lies before the tile's first row
  CHECK(at_end.end_us > at_end.start_us);
  // Key tail inside a block: the partial block needs the mask.
  w.q_lens = {256, 100};
  const Trace tail = sim::replay(w);
  REQUIRE(tail.events.size() == 4);
  CHECK(tail.events[3].query_rows == 128);  // past the end: upstream's wrapped row count
  CHECK(tail.events[3].kv_blocks == 2);
  CHECK(sim::event_tile_cost(w, tail.events[3]).masked_blocks == 1);
}
