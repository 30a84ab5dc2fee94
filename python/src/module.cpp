// tilesched._C: the compiled half of the Python package (nanobind). It takes tensors through
// DLPack and links no framework: the torch layer (python/tilesched/) is pure Python, so one build
// serves every torch version, and the checks run without torch or a GPU.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "step_plan.hpp"
#include "tensor_argument.hpp"
#include "tilesched/sim/sim.hpp"
#include "viz/schedule_outputs.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace tilesched::python {
namespace {

// A trace and what people ask of it.
struct PyTrace {
  Trace trace;
};

nb::dict metrics_of(const Trace& t) {
  const sim::Metrics m = sim::compute_metrics(t);
  nb::dict d;
  d["makespan_us"] = m.makespan_us;
  d["total_busy_us"] = m.total_busy_us;
  d["bound_us"] = m.bound_us;
  d["efficiency"] = m.efficiency;
  d["tiles"] = t.events.size();
  d["launched_ctas"] = t.launched_ctas;
  return d;
}

nb::dict events_of(const Trace& t) {
  const auto column = [&](auto get) {
    nb::list out;
    for (const TraceEvent& e : t.events) out.append(get(e));
    return out;
  };
  nb::dict d;
  d["cta"] = column([](const TraceEvent& e) { return e.cta; });
  d["step"] = column([](const TraceEvent& e) { return e.step; });
  d["linear_idx"] = column([](const TraceEvent& e) { return e.linear_idx; });
  d["prompt_idx"] = column([](const TraceEvent& e) { return e.prompt_idx; });
  d["prompt_offset"] = column([](const TraceEvent& e) { return e.prompt_offset; });
  d["head_idx"] = column([](const TraceEvent& e) { return e.head_idx; });
  d["query_rows"] = column([](const TraceEvent& e) { return e.query_rows; });
  d["kv_blocks"] = column([](const TraceEvent& e) { return e.kv_blocks; });
  d["kv_block_begin"] = column([](const TraceEvent& e) { return e.kv_block_begin; });
  d["start_us"] = column([](const TraceEvent& e) { return e.start_us; });
  d["end_us"] = column([](const TraceEvent& e) { return e.end_us; });
  d["sm_id"] = column([](const TraceEvent& e) { return e.sm_id; });
  return d;
}

std::unique_ptr<StepPlan> make_plan(std::vector<u32> q_lens, std::vector<u32> kv_lens,
                                    u32 num_q_heads, u32 num_kv_heads, u32 head_dim, bool causal,
                                    u32 page_size, u32 max_pages_per_seq, u32 num_pages,
                                    std::string scheduler, u32 num_ctas, u32 block_m,
                                    u32 kernel_block_n, std::string clusters, bool deterministic,
                                    std::string api, bool on_device, bool decoding) {
  StepRequest r;
  r.q_lens = std::move(q_lens);
  r.kv_lens = std::move(kv_lens);
  r.num_q_heads = num_q_heads;
  r.num_kv_heads = num_kv_heads;
  r.head_dim = head_dim;
  r.causal = causal;
  r.page_size = page_size;
  r.max_pages_per_seq = max_pages_per_seq;
  r.num_pages = num_pages;
  r.scheduler = std::move(scheduler);
  r.num_ctas = num_ctas;
  r.block_m = block_m;
  r.kernel_block_n = kernel_block_n;
  r.clusters = std::move(clusters);
  r.deterministic = deterministic;
  r.api = std::move(api);
  r.on_device = on_device;
  r.decoding = decoding;
  return std::make_unique<StepPlan>(r);
}

// The tensors of one call of a plan, read once (TensorArgument: DLPack, the argument's name in
// errors); the page table is optional.
struct StepTensors {
  TensorArgument q, k, v, out, lse;
  std::optional<TensorArgument> page_table;
  StepTensors(nb::handle q_, nb::handle k_, nb::handle v_, nb::handle out_, nb::handle lse_,
              nb::handle page_table_)
      : q(q_, "q"), k(k_, "k"), v(v_, "v"), out(out_, "out"), lse(lse_, "lse") {
    if (!page_table_.is_none()) page_table.emplace(page_table_, "page_table");
  }
  const TensorView* page_table_view() const { return page_table ? &page_table->view() : nullptr; }
};

}  // namespace
}  // namespace tilesched::python

NB_MODULE(_C, m) {
  using namespace tilesched;
  using namespace tilesched::python;
  m.doc() = "tilesched's compiled half: plans, launches (DLPack tensors), simulator and pictures";
  // Plans live in the package's plan cache and in callers' globals until the interpreter exits,
  // after nanobind's shutdown check has run: that check would report each as a leak.
  nb::set_leak_warnings(false);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const DtypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ArgumentError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const DeviceError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  m.def(
      "scheduler_names",
      [] {
        std::vector<std::string> names;
        for (const auto& row : kSchedulerKindNames)
          if (!row.alias) names.emplace_back(row.name);
        return names;
      },
      "The scheduler kinds' names, from the one table every tool reads (names.hpp).");
  m.def("gpu_built", &gpu_built, "Whether this build launches kernels (the GPU half is in it).");
  m.def("kernel_block_ns", &kernel_block_ns, "head_dim"_a,
        "The kernel's K/V blocks (keys) at a head dim: a paged cache's pages are loaded page by "
        "page when their size is a multiple of one.");

  // SPEC §6's new tokens per decode sequence, each query head's rows in a decode tile.
  m.attr("max_decode_tokens") = kMaxDecodeTokens;

  m.def("kernel_block_ms", &kernel_block_ms, "head_dim"_a,
        "The kernel's tile heights (query rows) at a head dim: a decode tile of 16 new tokens of "
        "each query head of a KV head's group fits one of them.");

  nb::class_<PyTrace>(m, "Trace", "A per-CTA trace: measured on the GPU or predicted.")
      .def_prop_ro("source", [](const PyTrace& t) { return t.trace.source; })
      .def_prop_ro("device", [](const PyTrace& t) { return t.trace.device; })
      .def_prop_ro("num_events", [](const PyTrace& t) { return t.trace.events.size(); })
      .def_prop_ro("launched_ctas", [](const PyTrace& t) { return t.trace.launched_ctas; })
      .def_prop_ro("makespan_us",
                   [](const PyTrace& t) { return sim::compute_metrics(t.trace).makespan_us; })
      .def("metrics", [](const PyTrace& t) { return metrics_of(t.trace); },
           "makespan, busy time, lower bound and efficiency (sim::compute_metrics)")
      .def("events", [](const PyTrace& t) { return events_of(t.trace); },
           "The events as columns: a dict of lists, one entry per processed tile.")
      .def("workload_json", [](const PyTrace& t) { return sim::workload_to_json(t.trace.workload).dump(); })
      .def("to_json", [](const PyTrace& t) { return sim::trace_to_json(t.trace).dump(); })
      .def("save", [](const PyTrace& t, const std::string& path) { sim::write_trace(path, t.trace); },
           "path"_a, "Writes the trace as JSON (.json.gz: gzip), atomically.")
      .def("__repr__", [](const PyTrace& t) {
        return fmt::format("<tilesched.Trace {} on {}: {} tiles, {} CTAs, makespan {:.1f} us>",
                           t.trace.source, t.trace.device, t.trace.events.size(),
                           t.trace.launched_ctas, sim::compute_metrics(t.trace).makespan_us);
      });

  m.def("read_trace", [](const std::string& path) { return PyTrace{sim::read_trace(path)}; },
        "path"_a, "Reads a trace written by tilesched (JSON, or gzip-compressed JSON).");

  m.def(
      "write_schedule_outputs",
      [](const PyTrace& t, const std::string& out_dir, const std::string& pictures) {
        viz::OutputOptions options;
        const auto p = parse_enum<viz::Pictures>(pictures);
        if (!p)
          throw ArgumentError(fmt::format("pictures must be one of {}, not '{}'",
                                          enum_choices<viz::Pictures>(), pictures));
        options.pictures = *p;
        options.chart.detail =
            *p == viz::Pictures::Full ? viz::ChartDetail::Full : viz::ChartDetail::Summary;
        const viz::ScheduleOutputs o =
            viz::write_schedule_outputs(t.trace, sim::compute_metrics(t.trace), out_dir, options);
        nb::dict d;
        d["trace"] = o.trace_path;
        if (!o.html_path.empty()) d["html"] = o.html_path;
        if (!o.perfetto_path.empty()) d["perfetto"] = o.perfetto_path;
        return d;
      },
      "trace"_a, "out_dir"_a, "pictures"_a = "summary",
      "Writes schedule.html, trace.json and perfetto.json into out_dir, as `tilesched viz` does.");

  nb::class_<StepPlan>(m, "Plan", "One attention step planned on the host: see tilesched.plan.")
      .def(nb::new_(&make_plan), "q_lens"_a, "kv_lens"_a, "num_q_heads"_a, "num_kv_heads"_a,
           "head_dim"_a, "causal"_a, "page_size"_a = 0, "max_pages_per_seq"_a = 0,
           "num_pages"_a = 0, "scheduler"_a = "auto", "num_ctas"_a = 0, "block_m"_a = 0,
           "kernel_block_n"_a = 0, "clusters"_a = "auto", "deterministic"_a = false,
           "api"_a = "varlen", "on_device"_a = true, "decoding"_a = false)
      .def_prop_ro("scheduler", [](const StepPlan& p) { return std::string(to_string(p.workload().scheduler)); })
      .def_prop_ro("block_m", [](const StepPlan& p) { return p.workload().block_m; })
      .def_prop_ro("kernel_block_n", &StepPlan::kernel_block_n)
      .def_prop_ro("num_ctas", [](const StepPlan& p) { return p.workload().num_ctas; })
      .def_prop_ro("batch_size", [](const StepPlan& p) { return p.workload().batch_size(); })
      .def_prop_ro("q_lens", [](const StepPlan& p) { return p.workload().q_lens; })
      .def_prop_ro("kv_lens", [](const StepPlan& p) { return p.workload().kv_lens; })
      .def_prop_ro("num_q_heads", [](const StepPlan& p) { return p.workload().num_q_heads; })
      .def_prop_ro("num_kv_heads", [](const StepPlan& p) { return p.workload().num_kv_heads; })
      .def_prop_ro("head_dim", [](const StepPlan& p) { return p.workload().head_dim; })
      .def_prop_ro("causal", [](const StepPlan& p) { return p.workload().mask == Mask::Causal; })
      .def_prop_ro("page_size", [](const StepPlan& p) { return p.workload().page_size; })
      .def_prop_ro("max_pages_per_seq", [](const StepPlan& p) { return p.request().max_pages_per_seq; })
      .def_prop_ro("num_pages", [](const StepPlan& p) { return p.request().num_pages; })
      .def_prop_ro("deterministic", [](const StepPlan& p) { return p.request().deterministic; })
      .def_prop_ro("api", [](const StepPlan& p) { return p.request().api; })
      .def_prop_ro("on_device", [](const StepPlan& p) { return p.request().on_device; })
      .def_prop_ro("device", &StepPlan::device)
      .def_prop_ro("total_q", &StepPlan::total_q)
      .def_prop_ro("total_k", &StepPlan::total_k)
      .def("workload_json", [](const StepPlan& p) { return sim::workload_to_json(p.workload()).dump(); })
      .def("describe", &StepPlan::describe)
      .def("simulate", [](const StepPlan& p) { return PyTrace{p.simulate()}; })
      .def(
          "check",
          [](const StepPlan& p, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
             nb::handle lse, nb::handle page_table) {
            const StepTensors t(q, k, v, out, lse, page_table);
            p.check_tensors(t.q.view(), t.k.view(), t.v.view(), t.out.view(), t.lse.view(),
                            t.page_table_view());
          },
          "q"_a, "k"_a, "v"_a, "out"_a, "lse"_a, "page_table"_a = nb::none(),
          "Raises the error run would raise for these tensors; nothing when they fit the plan.")
      .def(
          "run",
          [](StepPlan& p, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
             nb::handle lse, nb::handle page_table, float softmax_scale,
             std::optional<std::uintptr_t> stream, bool record) -> std::optional<PyTrace> {
            const StepTensors t(q, k, v, out, lse, page_table);
            if (!stream) stream = t.q.current_stream().value_or(0);
            PyTrace trace;
            p.run(t.q.view(), t.k.view(), t.v.view(), t.out.view(), t.lse.view(),
                  t.page_table_view(), softmax_scale, *stream, record, trace.trace);
            if (!record) return std::nullopt;
            return trace;
          },
          "q"_a, "k"_a, "v"_a, "out"_a, "lse"_a, "page_table"_a = nb::none(),
          "softmax_scale"_a, "stream"_a = nb::none(), "record"_a = false,
          "Launches the plan on these tensors on `stream` (a cudaStream_t as an int). Tensors: "
          "any object DLPack reads (torch tensors through the DLPack C exchange API where torch "
          "has it, else DLPack capsules). stream None: the framework's current stream on q's "
          "device where q came through the exchange API, else the legacy default stream (0). "
          "With record=True returns the launch's Trace.")
      .def("__repr__", [](const StepPlan& p) { return "<tilesched.Plan " + p.describe() + ">"; });
}
