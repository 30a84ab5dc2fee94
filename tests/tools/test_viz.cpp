// The pictures: the SVG/HTML chart is well-formed with one box per tile, the Perfetto file has one
// complete event per tile, the terminal view has one line per CTA up to its cap.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "test_support.hpp"
#include "tilesched/sim/metrics.hpp"
#include "tilesched/sim/trace_io.hpp"
#include "viz/perfetto.hpp"
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

TEST_CASE("schedule.html has the metrics at the top and one chart") {
  const Trace trace = test::small_trace();
  const sim::Metrics m = sim::compute_metrics(trace);
  const std::string html = viz::render_schedule_html(trace, m, {});
  const std::size_t metrics_at = html.find("makespan");
  const std::size_t svg_at = html.find("<svg");
  CHECK(metrics_at != std::string::npos);
  CHECK(metrics_at < svg_at);
  CHECK(html.find("<svg", svg_at + 1) == std::string::npos);
  CHECK(count_elements(html, "rect", "tile") == trace.events.size());
}

TEST_CASE("the comparison page has one well-formed chart per strategy") {
  const Trace a = test::small_trace(SchedulerKind::Tile);
  const Trace b = test::small_trace(SchedulerKind::Queued);
  const std::vector<viz::ChartSection> sections = {{"tile/default", &a, sim::compute_metrics(a)},
                                                   {"queued/default", &b, sim::compute_metrics(b)}};
  const std::string html = viz::render_comparison_html(sections, viz::ColorBy::Head);
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
  CHECK(count_elements(test::read_text(paths.html_path), "rect", "tile") == trace.events.size());
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
  CHECK(count_elements(svg, "rect", "tile") == trace.events.size());
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
