// Streamed output files: atomic replacement, nothing left behind when abandoned, gzip written and
// read back transparently, and the streamed trace identical to the JSON document.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim_test_util.hpp"
#include "tilesched/sim/output_file.hpp"

using namespace tilesched;
using namespace tilesched::simtest;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed with its files at the end of the test.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    char pattern[] = "/tmp/tilesched-output-test-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path))
      names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string file(const char* name) const { return (path / name).string(); }
};

std::string raw_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Several MiB of text that compresses well but not to nothing, so the writer flushes many times.
std::string big_text() {
  std::string text;
  for (int i = 0; i < 200000; ++i)
    text += fmt::format("{{\"line\":{},\"value\":{}}}\n", i, i * 7.25);
  return text;
}

void write_gzip(const std::string& path, const std::string& text) {
  sim::OutputFile file(path, sim::Compression::Gzip);
  file.append(text);
  file.commit();
}

}  // namespace

TEST_CASE("an OutputFile appears under its name only when committed") {
  ScratchDir dir;
  const std::string path = dir.file("out.txt");
  {
    sim::OutputFile file(path);
    file.append("hello ");
    sim::print_to(file, "{} {}", "streamed", 42);
    CHECK(file.bytes_appended() == 17);
    CHECK(dir.files().size() == 1);
    CHECK(dir.files()[0].rfind("out.txt.tmp.", 0) == 0);  // written under a temporary name
    CHECK_FALSE(fs::exists(path));
    file.commit();
  }
  CHECK(sim::read_file(path) == "hello streamed 42");
  CHECK(dir.files() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("an abandoned OutputFile leaves the old file and no temporary behind") {
  ScratchDir dir;
  const std::string path = dir.file("kept.txt");
  sim::write_file_atomically(path, "old content");
  try {
    sim::OutputFile file(path);
    file.append(big_text());  // flushed to the temporary file several times
    throw std::runtime_error("the writer failed half-way");
  } catch (const std::runtime_error&) {
  }
  CHECK(sim::read_file(path) == "old content");
  CHECK(dir.files() == std::vector<std::string>{"kept.txt"});
}

TEST_CASE("an OutputFile names the path it cannot write") {
  const std::string path = "/tmp/tilesched-no-such-dir-xyz/out.json";
  const std::string message = runtime_error_text([&] { sim::OutputFile file(path); });
  CHECK(contains(message, "cannot write '" + path + "'"));
  CHECK(contains(message, "cannot create a temporary file in '/tmp/tilesched-no-such-dir-xyz'"));
}

TEST_CASE("gzip output is gzip data, and read_file returns the text it holds") {
  ScratchDir dir;
  const std::string text = big_text();
  const std::string path = dir.file("big.txt.gz");
  write_gzip(path, text);
  const std::string bytes = raw_bytes(path);
  REQUIRE(bytes.size() > 2);
  CHECK(static_cast<unsigned char>(bytes[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(bytes[1]) == 0x8b);
  CHECK(bytes.size() < text.size() / 4);
  CHECK(sim::read_file(path) == text);
  CHECK(sim::compressed_path("a/trace.json", sim::Compression::Gzip) == "a/trace.json.gz");
  CHECK(sim::compressed_path("a/trace.json", sim::Compression::None) == "a/trace.json");
}

TEST_CASE("gzip input: concatenated members read as one, damage and truncation are named") {
  ScratchDir dir;
  write_gzip(dir.file("a.gz"), "first part, ");
  write_gzip(dir.file("b.gz"), "second part");
  const std::string joined = raw_bytes(dir.file("a.gz")) + raw_bytes(dir.file("b.gz"));
  sim::write_file_atomically(dir.file("ab.gz"), joined);
  CHECK(sim::read_file(dir.file("ab.gz")) == "first part, second part");

  write_gzip(dir.file("big.gz"), big_text());
  const std::string whole = raw_bytes(dir.file("big.gz"));
  sim::write_file_atomically(dir.file("cut.gz"), whole.substr(0, whole.size() / 2));
  CHECK(contains(runtime_error_text([&] { sim::read_file(dir.file("cut.gz")); }),
                 "cut.gz': the gzip data ends early (a truncated file?)"));
  std::string damaged = whole;
  for (std::size_t i = 20; i < 200; ++i) damaged[i] = char(0xff);
  sim::write_file_atomically(dir.file("damaged.gz"), damaged);
  CHECK(contains(runtime_error_text([&] { sim::read_file(dir.file("damaged.gz")); }),
                 "damaged.gz': damaged gzip data"));
}

TEST_CASE("the streamed trace is the JSON document, and a gzip trace reads back the same") {
  Workload w = sim::default_workload();
  w.scheduler = SchedulerKind::Transient;  // sm_id set on every event
  Trace t = sim::replay(w);
  t.device = "bad \xff utf-8 \"quoted\"";  // replaced, and escaped, never a broken file
  std::string text;
  sim::StringSink sink(text);
  std::uint64_t last_done = 0, calls = 0;
  sim::write_trace_json(sink, t, [&](std::uint64_t done, std::uint64_t total) {
    CHECK(total == t.events.size());
    CHECK(done >= last_done);
    last_done = done;
    ++calls;
  });
  CHECK(last_done == t.events.size());
  CHECK(calls >= 1);
  const nlohmann::json parsed = nlohmann::json::parse(text);
  nlohmann::json expected = sim::trace_to_json(t);
  expected["device"] = parsed["device"];  // the invalid byte became U+FFFD
  CHECK(parsed == expected);
  CHECK(contains(parsed["device"].get<std::string>(), "\"quoted\""));

  ScratchDir dir;
  t.device = "h200";
  sim::write_trace(dir.file("trace.json.gz"), t, {sim::Compression::Gzip, {}});
  const Trace back = sim::read_trace(dir.file("trace.json.gz"));
  REQUIRE(back.events.size() == t.events.size());
  for (std::size_t i = 0; i < t.events.size(); ++i)
    REQUIRE_MESSAGE(same_event(back.events[i], t.events[i]), show(t.events[i]));
}

TEST_CASE("a non-finite time is written as null, which the reader rejects by name") {
  Workload w;
  w.q_lens = {256};
  w.num_q_heads = 1;
  w.num_kv_heads = 1;
  Trace t = sim::replay(w);
  t.events[0].end_us = std::numeric_limits<double>::infinity();
  std::string text;
  sim::StringSink sink(text);
  sim::write_trace_json(sink, t);
  CHECK(contains(text, "\"end_us\":null"));
  CHECK(contains(invalid_argument_text([&] { sim::trace_from_json(nlohmann::json::parse(text)); }),
                 "events[0].end_us"));
}
