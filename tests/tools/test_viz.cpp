// The pictures: the SVG/HTML chart is well-formed with one box per tile, the Perfetto file has one
// complete event per tile, the terminal view has one line per CTA up to its cap.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "viz/perfetto.hpp"
#include "viz/ranking.hpp"
#include "viz/schedule_outputs.hpp"
#include "viz/svg_html.hpp"
#include "viz/terminal.hpp"
#include "viz/xml_escape.hpp"
#include "xml_check.hpp"

using namespace tilesched;
using test::count_elements;
using test::xml_problem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  std::size_t n = 0;
  for (const std::string& line : lines_of(text))
    if (line.rfind(prefix, 0) == 0) ++n;
  return n;
}

std::size_t count_text(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string svg_part(const std::string& html, std::size_t which = 0) {
  std::size_t begin = 0;
  for (std::size_t k = 0; k <= which; ++k) {
    begin = html.find("<svg", k == 0 ? 0 : begin + 1);
    REQUIRE(begin != std::string::npos);
  }
  const std::size_t end = html.find("</svg>", begin);
  REQUIRE(end != std::string::npos);
  return html.substr(begin, end + 6 - begin);
}

}  // namespace

TEST_CASE("xml_escape makes any text safe inside elements and attributes") {
  CHECK(viz::xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(viz::xml_escape(std::string("x\x01y\tz", 5)) == "xy\tz");
  CHECK(xml_problem("<t a=\"" + viz::xml_escape("\"'<&>") + "\">" + viz::xml_escape("</t><evil>") +
                    "</t>") == "");
}

TEST_CASE("the Gantt SVG is well-formed with exactly one tile box per trace event") {
  for (const SchedulerKind kind :
       {SchedulerKind::Tile, SchedulerKind::Queued, SchedulerKind::Transient}) {
    CAPTURE(to_string(kind));
    const Trace trace = test::small_trace(kind);
    REQUIRE(!trace.events.empty());
    const std::string svg = viz::render_gantt_svg(trace, {});
    CHECK(xml_problem(svg) == "");
    CHECK(count_elements(svg, "rect", "tile") == trace.events.size());
    // Every box carries a tooltip naming the tile.
    CHECK(count_elements(svg, "rect", "tile", "title") == trace.events.size());
  }
}

TEST_CASE("the chart escapes text that comes from files") {
  Trace trace = test::small_trace();
  trace.device = "<script>alert(\"x\")</script> & 'co'";
  trace.source = "gpu<>";
  const std::string html = viz::render_schedule_html(trace, sim::compute_metrics(trace), {});
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(xml_problem(svg_part(html)) == "");
  CHECK(xml_problem(html) == "");  // the whole page is XHTML-clean too
}

TEST_CASE("the tooltip of a tile names its index, prompt, head, offset, KV blocks and times") {
  Trace trace = test::small_trace();
  trace.events.resize(1);
  TraceEvent& e = trace.events[0];
  e.linear_idx = 1234;
  e.prompt_idx = 2;
  e.head_idx = 3;
  e.prompt_offset = 256;
  e.kv_blocks = 17;
  e.start_us = 1.5;
  e.end_us = 9.25;
  const std::string svg = viz::render_gantt_svg(trace, {});
  const std::size_t at = svg.find("<rect class=\"tile\"");
  REQUIRE(at != std::string::npos);
  const std::string box = svg.substr(at, svg.find("</rect>", at) - at);
  CHECK(box.find("idx 1234") != std::string::npos);
  CHECK(box.find("prompt 2") != std::string::npos);
  CHECK(box.find("head 3") != std::string::npos);
  CHECK(box.find("prompt offset 256") != std::string::npos);
  CHECK(box.find("17 KV blocks") != std::string::npos);
  CHECK(box.find("start 1.50 us, end 9.25 us") != std::string::npos);
}

TEST_CASE("colour by head or by batch changes the tile colours") {
  const Trace trace = test::small_trace();
  viz::ChartOptions by_batch;
  by_batch.color_by = viz::ColorBy::Batch;
  const std::string a = viz::render_gantt_svg(trace, {});
  const std::string b = viz::render_gantt_svg(trace, by_batch);
  CHECK(a != b);
  CHECK(b.find(">prompt 0<") != std::string::npos);  // the legend names what colours mean
  CHECK(a.find(">head 0<") != std::string::npos);
  // Colours of consecutive categories differ.
  CHECK(viz::to_hex(viz::category_color(0)) != viz::to_hex(viz::category_color(1)));
}

TEST_CASE("schedule.html: metrics, the Gantt chart, busy CTAs over time, the last wave zoomed") {
  const Trace trace = test::small_trace();
  const sim::Metrics m = sim::compute_metrics(trace);
  const std::string html = viz::render_schedule_html(trace, m, {});
  CHECK(xml_problem(html) == "");
  const std::size_t metrics_at = html.find("makespan");
  const std::size_t gantt_at =
      html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"gantt\"");
  const std::size_t busy_at = html.find("class=\"busy\"");
  const std::size_t wave_at = html.find("class=\"last-wave\"");
  CHECK(metrics_at != std::string::npos);
  CHECK(metrics_at < gantt_at);
  CHECK(gantt_at < busy_at);
  REQUIRE(wave_at != std::string::npos);
  CHECK(busy_at < wave_at);
  CHECK(count_text(html, "<svg") == 3);
  CHECK(count_elements(svg_part(html, 0), "rect", "tile") == trace.events.size());
  CHECK(count_elements(svg_part(html, 1), "rect", "bin", "title") == viz::kBusyBins);
  // The zoom draws the tiles that run in the last wave, no others.
  const viz::LastWave wave = viz::last_wave(trace, m.unit);
  CHECK(wave.begin_us < wave.end_us);
  std::size_t in_wave = 0;
  for (const TraceEvent& e : trace.events) in_wave += e.end_us > wave.begin_us ? 1 : 0;
  CHECK(wave.tiles == in_wave);
  CHECK(count_elements(svg_part(html, 2), "rect", "tile") == in_wave);
  CHECK(in_wave < trace.events.size());
}

TEST_CASE("schedule.html draws a splitting schedule's combine after the kernel's last tile") {
  Workload w = test::small_workload();
  w.decoding = true;
  w.kv_lens.assign(w.q_lens.size(), 20000);
  w.q_lens.assign(w.kv_lens.size(), 1);
  w.scheduler = SchedulerKind::SplitKv;
  const Trace split = sim::replay(w);
  REQUIRE(split.combine_us > 0);
  const std::string html = viz::render_schedule_html(split, sim::compute_metrics(split), {});
  CHECK(xml_problem(html) == "");
  CHECK(count_elements(svg_part(html, 0), "rect", "combine", "title") == 1);
  CHECK(html.find("partial results are combined") != std::string::npos);
  // Its box starts at the last tile's end; the axis reaches past it to the combine's end.
  double last_end = 0;
  for (const TraceEvent& e : split.events) last_end = std::max(last_end, e.end_us);
  CHECK(html.find(fmt::format("after the kernel's last tile at {:.2f} us", last_end)) !=
        std::string::npos);
  // Perfetto: one combine event, on a track of its own, where the kernel's last tile ends.
  const nlohmann::json perfetto = nlohmann::json::parse(viz::render_perfetto(split));
  std::size_t combines = 0;
  for (const auto& e : perfetto["traceEvents"])
    if (e.value("cat", "") == "combine") {
      ++combines;
      CHECK(e["tid"] == -1);
      CHECK(e["ts"].get<double>() == doctest::Approx(last_end));
      CHECK(e["dur"].get<double>() == doctest::Approx(split.combine_us));
    }
  CHECK(combines == 1);
  // A schedule of whole tiles has none.
  w.scheduler = SchedulerKind::Queued;
  const Trace whole = sim::replay(w);
  CHECK(whole.combine_us == 0);
  const std::string plain = viz::render_schedule_html(whole, sim::compute_metrics(whole), {});
  CHECK(count_elements(svg_part(plain, 0), "rect", "combine") == 0);
  CHECK(plain.find("partial results are combined") == std::string::npos);
  CHECK(viz::render_perfetto(whole).find("\"cat\":\"combine\"") == std::string::npos);
}

TEST_CASE("the last wave: from the first unit idle for good to the makespan") {
  Trace t;
  t.launched_ctas = 3;
  auto tile = [&](u32 cta, double start, double end) {
    TraceEvent e;
    e.cta = cta;
    e.start_us = start;
    e.end_us = end;
    t.events.push_back(e);
  };
  tile(0, 0, 10);
  tile(0, 10, 30);
  tile(1, 0, 25);
  tile(2, 0, 12);
  tile(2, 12, 40);
  const viz::LastWave wave = viz::last_wave(t, sim::ExecutionUnit::Cta);
  CHECK(wave.begin_us == 25);
  CHECK(wave.end_us == 40);
  CHECK(wave.first_idle_unit == 1);
  CHECK(wave.units == 3);
  CHECK(wave.tiles == 2);                                // CTA 0's second tile and CTA 2's
  CHECK(wave.busy_units == doctest::Approx(20.0 / 15));  // 5 + 15 us of busy time over 15 us
  // Busy CTAs per bin: the mean over each 10 us bin of [0, 40].
  const std::vector<double> busy = viz::busy_units_per_bin(t, 4);
  REQUIRE(busy.size() == 4);
  CHECK(busy[0] == doctest::Approx(3.0));
  CHECK(busy[1] == doctest::Approx(3.0));
  CHECK(busy[2] == doctest::Approx(2.5));  // CTA 1 stops at 25
  CHECK(busy[3] == doctest::Approx(1.0));
  // All ending together: no last wave; and an empty trace has none either.
  Trace even;
  even.events = {t.events[0], t.events[2]};
  even.events[1].end_us = 10;
  CHECK(viz::last_wave(even, sim::ExecutionUnit::Cta).begin_us == 10);
  CHECK(viz::last_wave(even, sim::ExecutionUnit::Cta).end_us == 10);
  const std::string page = viz::render_schedule_html(even, sim::compute_metrics(even), {});
  CHECK(page.find("no last wave") != std::string::npos);
  CHECK(page.find("class=\"last-wave\"") == std::string::npos);
  CHECK(viz::last_wave(Trace{}, sim::ExecutionUnit::Cta).tiles == 0);
}

TEST_CASE("the comparison page has one well-formed chart per strategy") {
  const Trace a = test::small_trace(SchedulerKind::Tile);
  const Trace b = test::small_trace(SchedulerKind::Queued);
  const std::vector<viz::ChartSection> sections = {{"tile/default", &a, sim::compute_metrics(a)},
                                                   {"queued/default", &b, sim::compute_metrics(b)}};
  const std::string html = viz::render_comparison_html(sections, {}, viz::ColorBy::Head);
  CHECK(xml_problem(html) == "");
  CHECK(xml_problem(svg_part(html, 0)) == "");
  CHECK(count_elements(svg_part(html, 0), "rect", "tile") == a.events.size());
  CHECK(count_elements(svg_part(html, 1), "rect", "tile") == b.events.size());
}

TEST_CASE("perfetto JSON has one complete event per tile on its CTA's track") {
  const Trace trace = test::small_trace(SchedulerKind::Queued);
  const nlohmann::json j = nlohmann::json::parse(viz::render_perfetto(trace));
  REQUIRE(j.contains("traceEvents"));
  std::size_t complete = 0;
  std::set<std::pair<std::uint64_t, double>> seen;  // (tid, ts)
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ++complete;
    seen.insert({ev["tid"].get<std::uint64_t>(), ev["ts"].get<double>()});
    CHECK(ev["dur"].get<double>() >= 0);
    CHECK(ev["args"].contains("prompt_offset"));
    CHECK(ev["args"].contains("kv_blocks"));
  }
  CHECK(complete == trace.events.size());
  for (const TraceEvent& e : trace.events) CHECK(seen.count({e.cta, e.start_us}) == 1);
}

TEST_CASE("the terminal view has one line per CTA up to its cap") {
  const Trace trace = test::small_trace();  // 5 CTAs
  viz::TerminalOptions options;
  options.width = 50;
  const std::string all = viz::render_terminal(trace, options);
  CHECK(count_lines_starting(all, "CTA ") == 5);
  CHECK(all.find("more CTAs") == std::string::npos);
  CHECK(all.find('\x1b') == std::string::npos);  // plain unless asked

  options.max_rows = 3;
  const std::string capped = viz::render_terminal(trace, options);
  CHECK(count_lines_starting(capped, "CTA ") == 3);
  CHECK(capped.find("... 2 more CTAs") != std::string::npos);

  // Each CTA line draws exactly `width` cells between its bars.
  for (const std::string& line : lines_of(all)) {
    if (line.rfind("CTA ", 0) != 0) continue;
    const std::size_t open = line.find('|'), close = line.find('|', open + 1);
    CHECK(close - open - 1 == options.width);
  }

  options.color = true;
  CHECK(viz::render_terminal(trace, options).find("\x1b[48;5;") != std::string::npos);
}

TEST_CASE("the terminal view counts every tile of a CTA, even ones narrower than a cell") {
  const Trace trace = test::small_trace();
  viz::TerminalOptions options;
  options.width = 10;  // far fewer cells than tiles
  const std::string view = viz::render_terminal(trace, options);
  std::map<u32, std::size_t> per_cta;
  for (const TraceEvent& e : trace.events) ++per_cta[e.cta];
  for (const auto& [cta, tiles] : per_cta) {
    const std::string prefix = fmt::format("CTA {:>4} |", cta);
    bool found = false;
    for (const std::string& line : lines_of(view))
      if (line.rfind(prefix, 0) == 0) {
        found = true;
        CHECK(line.find(fmt::format(" {} tiles", tiles)) != std::string::npos);
      }
    CHECK(found);
  }
}

TEST_CASE("write_schedule_outputs writes the three files, creating the directory") {
  test::ScratchDir dir("outputs");
  const Trace trace = test::small_trace();
  const std::string out = (dir.path() / "nested" / "out").string();
  const viz::ScheduleOutputs paths = viz::write_schedule_outputs(trace, out);
  CHECK(std::filesystem::exists(paths.html_path));
  CHECK(std::filesystem::exists(paths.perfetto_path));
  const Trace back = sim::read_trace(paths.trace_path);
  CHECK(back.events.size() == trace.events.size());
  CHECK(count_elements(svg_part(test::read_text(paths.html_path), 0), "rect", "tile") ==
        trace.events.size());
  // No temporary files left behind by the atomic writes.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(out)) ++files;
  CHECK(files == 3);
}

TEST_CASE("write_schedule_outputs names the path it cannot use") {
  test::ScratchDir dir("blocked");
  const auto file = dir.path() / "a_file";
  { std::ofstream(file) << "x"; }
  try {
    viz::write_schedule_outputs(test::small_trace(), file.string());
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("a_file") != std::string::npos);
  }
}

TEST_CASE("pictures survive odd traces: huge CTA counts, negative times, no events") {
  Trace trace = test::small_trace();
  trace.launched_ctas = 4000000000u;  // a hand-edited or corrupted GPU trace
  trace.events[0].start_us = -5;
  const std::string svg = viz::render_gantt_svg(trace, {});
  CHECK(xml_problem(svg) == "");
  // Four billion rows are drawn as 1200 bands of CTAs; the tiles of the first band are shaded,
  // in a page of bounded size.
  CHECK(count_elements(svg, "g", "shade") == 1);
  CHECK(svg.find(fmt::format("CTAs 0-3333333: {} tiles shaded", trace.events.size())) !=
        std::string::npos);
  CHECK(svg.size() < 200000);
  viz::TerminalOptions options;
  options.max_rows = 3;
  const std::string view = viz::render_terminal(trace, options);
  CHECK(count_lines_starting(view, "CTA ") == 3);
  CHECK(view.find("... 3999999997 more CTAs") != std::string::npos);

  Trace empty = test::small_trace();
  empty.events.clear();
  CHECK(xml_problem(viz::render_gantt_svg(empty, {})) == "");
  CHECK(count_lines_starting(viz::render_terminal(empty, options), "CTA ") == 3);
  const nlohmann::json j = nlohmann::json::parse(viz::render_perfetto(empty));
  for (const auto& ev : j["traceEvents"]) CHECK(ev["ph"] != "X");
}

namespace {

// A padded causal batch of `tiles` work tiles (128 heads, sequences of 64 tiles) on 132 CTAs.
Trace many_tiles_trace(std::uint32_t tiles, SchedulerKind scheduler = SchedulerKind::Tile) {
  Workload w;
  w.q_lens.assign(tiles / (128 * 64), 64 * 128);
  w.padded = true;
  w.num_q_heads = 128;
  w.num_kv_heads = 8;
  w.scheduler = scheduler;
  return sim::replay(w);
}

// The small workload's transient grid run 5 CTAs at a time: every slot busy, rows far apart.
Trace transient_on_5_slots() {
  Workload w = test::small_workload(SchedulerKind::Transient);
  w.resident_ctas = 5;
  return sim::replay(w);
}

}  // namespace

TEST_CASE("a chart of 262144 tiles stays small: narrow tiles are shaded per row, boxes are few") {
  const Trace trace = many_tiles_trace(262144);
  REQUIRE(trace.events.size() == 262144);
  const sim::Metrics m = sim::compute_metrics(trace);
  const std::string html = viz::render_schedule_html(trace, m, {});
  CHECK(xml_problem(html) == "");
  // 256 bytes a box would be 67 MB; the Gantt chart, the busy chart and the zoom stay small.
  const std::string gantt = svg_part(html, 0), busy = svg_part(html, 1), wave = svg_part(html, 2);
  CHECK(gantt.size() < 1000000);
  CHECK(busy.size() < 150000);
  CHECK(wave.size() < 1700000);
  CHECK(html.size() < 3000000);
  CHECK(count_elements(gantt, "rect", "tile") <= viz::kMaxBoxes);
  CHECK(count_elements(wave, "rect", "tile") <= viz::kMaxZoomBoxes);
  // One shaded group per CTA row, each saying how many tiles it holds; together all of them.
  CHECK(count_elements(gantt, "g", "shade", "title") == 132);
  std::size_t shaded = 0;
  for (std::size_t at = gantt.find("tiles shaded"); at != std::string::npos;
       at = gantt.find("tiles shaded", at + 1)) {
    const std::size_t colon = gantt.rfind(": ", at);
    shaded += std::stoull(gantt.substr(colon + 2, at - colon - 3));
  }
  CHECK(shaded + count_elements(gantt, "rect", "tile") == trace.events.size());
  CHECK(gantt.find("narrow tiles") != std::string::npos);  // the legend says what shading means

  // Full detail draws every tile as a box, however thin.
  viz::ChartOptions full;
  full.detail = viz::ChartDetail::Full;
  const Trace part = many_tiles_trace(32768);
  CHECK(count_elements(viz::render_gantt_svg(part, full), "rect", "tile") == part.events.size());
  CHECK(count_elements(viz::render_gantt_svg(part, {}), "rect", "tile") < part.events.size());
}

TEST_CASE("a transient chart has one row per resident slot, as the metrics count") {
  const Trace trace = transient_on_5_slots();
  REQUIRE(trace.launched_ctas > 20);  // one CTA per tile
  const sim::Metrics m = sim::compute_metrics(trace);
  REQUIRE(m.unit == sim::ExecutionUnit::Slot);
  const std::string svg = viz::render_gantt_svg(trace, {});
  const std::string label = "dominant-baseline=\"middle\">";
  CHECK(count_text(svg, label + "slot ") == m.unit_count);
  CHECK(count_text(svg, label + "CTA ") == 0);
  CHECK(count_elements(svg, "rect", "tile") == trace.events.size());
  // A measured trace names SMs; asking for CTA rows gives one per launched CTA.
  Trace measured = trace;
  measured.source = "gpu";
  CHECK(count_text(viz::render_gantt_svg(measured, {}), label + "SM ") == m.unit_count);
  viz::ChartOptions per_cta;
  per_cta.unit = sim::ExecutionUnit::Cta;
  CHECK(count_text(viz::render_gantt_svg(trace, per_cta), label + "CTA ") > m.unit_count);
}

TEST_CASE("the time axis counts in us, ms or s by the chart's length") {
  Trace trace = test::small_trace();
  trace.events.resize(1);
  const auto axis_caption = [&](double end_us) {
    trace.events[0].end_us = end_us;
    const std::string svg = viz::render_gantt_svg(trace, {});
    const std::size_t at = svg.find(">time (");
    REQUIRE(at != std::string::npos);
    return svg.substr(at + 1, svg.find('<', at) - at - 1);
  };
  CHECK(axis_caption(500) == "time (µs)");
  CHECK(axis_caption(5000) == "time (ms)");
  CHECK(axis_caption(2.5e6) == "time (s)");
  const std::string svg = viz::render_gantt_svg(trace, {});  // 2.5 s: ticks 0, 0.2, ... 2.4
  CHECK(svg.find(">0.2</text>") != std::string::npos);
  CHECK(svg.find(">2.4</text>") != std::string::npos);
}

TEST_CASE("the comparison page carries the ranking table the terminal prints") {
  const Trace a = test::small_trace(SchedulerKind::Tile);
  const Trace b = test::small_trace(SchedulerKind::Queued);
  const std::vector<viz::ChartSection> sections = {
      {"queued/default", &b, sim::compute_metrics(b), 4},
      {"tile/default", &a, sim::compute_metrics(a), 4}};
  viz::RankingMarks marks;
  marks.recommended = 0;
  marks.seed = 1;
  const viz::RankingTable table = viz::ranking_table(sections, marks);
  const std::string text = viz::format_ranking_table(table);
  const std::string html = viz::render_comparison_html(sections, marks, viz::ColorBy::Head);
  CHECK(count_elements(html, "table", "ranking") == 1);
  REQUIRE(table.rows.size() == 2);
  CHECK(table.rows[0][0] == "*");  // the recommended one, and only it
  CHECK(table.rows[1][0] == "");
  CHECK(table.rows[0][2] == "4");
  CHECK(table.rows[1][4] == "1.00x");  // the seed against itself
  CHECK(text.find("  * queued/default") != std::string::npos);
  CHECK(text.find("tile/default, C = 4") != std::string::npos);  // the note names the seed
  for (const auto& row : table.rows) {
    std::string cells;
    for (const std::string& cell : row) cells += fmt::format("<td>{}</td>", cell);
    CHECK(html.find(cells) != std::string::npos);  // the same figures, in the same order
    CHECK(text.find(row[1]) != std::string::npos);
    CHECK(text.find(row[3]) != std::string::npos);
    CHECK(text.find(row[4]) != std::string::npos);
  }
  CHECK(html.find("queued/default</td>") < html.find("tile/default</td>"));
  CHECK(html.find("<h2>queued/default, C = 4</h2>") != std::string::npos);
}

TEST_CASE("perfetto times are numbers whatever the trace holds") {
  Trace trace = test::small_trace();
  trace.events[0].start_us = -5;
  trace.events[1].start_us = -1e308;
  trace.events[1].end_us = 1e308;
  trace.events[2].end_us = std::numeric_limits<double>::infinity();
  trace.events[3].start_us = std::numeric_limits<double>::quiet_NaN();
  const nlohmann::json j = nlohmann::json::parse(viz::render_perfetto(trace));
  std::size_t complete = 0;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ++complete;
    REQUIRE(ev["ts"].is_number());
    REQUIRE(ev["dur"].is_number());
    CHECK(ev["dur"].get<double>() >= 0);
    // Perfetto multiplies by 1000 into int64 nanoseconds.
    CHECK(std::fabs(ev["ts"].get<double>()) * 1000 < 9.3e18);
    CHECK(ev["dur"].get<double>() * 1000 < 9.3e18);
  }
  CHECK(complete == trace.events.size());
}

TEST_CASE("perfetto draws a transient trace per slot, the CTA among the args") {
  const Trace trace = transient_on_5_slots();
  const nlohmann::json j = nlohmann::json::parse(viz::render_perfetto(trace));
  std::set<std::int64_t> tracks;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["name"] == "thread_name")
      CHECK(ev["args"]["name"].get<std::string>().rfind("slot ", 0) == 0);
    if (ev["ph"] != "X") continue;
    tracks.insert(ev["tid"].get<std::int64_t>());
    CHECK(ev["tid"] == ev["args"]["sm_id"]);
    CHECK(ev["args"].contains("cta"));
  }
  CHECK(tracks.size() == sim::compute_metrics(trace).unit_count);
}

TEST_CASE("write_schedule_outputs: --pictures none writes the trace only; gzip files read back") {
  test::ScratchDir dir("pictures");
  const Trace trace = test::small_trace();
  const sim::Metrics m = sim::compute_metrics(trace);
  viz::OutputOptions none;
  none.pictures = viz::Pictures::None;
  const viz::ScheduleOutputs only =
      viz::write_schedule_outputs(trace, m, dir.str() + "/none", none);
  CHECK(only.html_path.empty());
  CHECK(only.perfetto_path.empty());
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path() / "none"), {}) == 1);

  viz::OutputOptions gzip;
  gzip.compression = sim::Compression::Gzip;
  std::set<std::string> reported;
  std::mutex reported_mutex;  // trace.json is written on a thread of its own
  gzip.progress = [&](const std::string& path, std::uint64_t, std::uint64_t) {
    const std::lock_guard<std::mutex> lock(reported_mutex);
    reported.insert(path);
  };
  const viz::ScheduleOutputs packed =
      viz::write_schedule_outputs(trace, m, dir.str() + "/gz", gzip);
  CHECK(packed.trace_path == dir.str() + "/gz/trace.json.gz");
  CHECK(packed.perfetto_path == dir.str() + "/gz/perfetto.json.gz");
  CHECK(packed.html_path == dir.str() + "/gz/schedule.html");
  CHECK(reported ==
        std::set<std::string>{packed.trace_path, packed.perfetto_path, packed.html_path});
  CHECK(sim::read_trace(packed.trace_path).events.size() == trace.events.size());
  const nlohmann::json perfetto = nlohmann::json::parse(sim::read_file(packed.perfetto_path));
  CHECK(perfetto.contains("traceEvents"));
}

TEST_CASE("the pieces of a split tile are outlined, named and joined in the chart") {
  // 4 x 8192 rows, 16 heads: 4096 tiles, 31 full waves of 132 and 4 tiles split over every CTA.
  Workload w;
  w.q_lens.assign(4, 8192);
  w.padded = true;
  w.num_q_heads = w.num_kv_heads = 16;
  w.mask = Mask::None;
  w.scheduler = SchedulerKind::SplitTail;
  const Trace trace = sim::replay(w);
  std::map<u32, std::size_t> pieces_of;  // tile idx -> pieces
  for (const TraceEvent& e : trace.events)
    if (e.kv_block_begin != 0 || e.kv_blocks < 64) ++pieces_of[e.linear_idx];
  REQUIRE(!pieces_of.empty());
  const std::string svg = viz::render_gantt_svg(trace, {});
  CHECK(xml_problem(svg) == "");
  CHECK(count_elements(svg, "polyline", "piece-link", "title") == pieces_of.size());
  std::size_t pieces = 0;
  for (const auto& [idx, n] : pieces_of) {
    pieces += n;
    CHECK_MESSAGE(svg.find(fmt::format("piece 1 of {} of tile idx {}: KV blocks 0-", n, idx)) !=
                      std::string::npos,
                  idx);
  }
  CHECK(count_text(svg, "stroke-dasharray:3 2") == pieces);
  // A whole tile is not a piece.
  const std::string whole = viz::render_gantt_svg(test::small_trace(), {});
  CHECK(count_text(whole, "piece 1 of") == 0);
  CHECK(count_elements(whole, "polyline", "piece-link") == 0);
}
