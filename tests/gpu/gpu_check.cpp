#include "gpu_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilesched/sim/attention.hpp"
#include "tilesched/sim/replay.hpp"
#include "tilesched/sim/schedule_check.hpp"

namespace tilesched::gpu_test {
namespace {

constexpr std::size_t kShown = 8;  // failures listed per check; the rest are counted

// The first kShown of `found`, each prefixed with the workload, then how many more there were.
void add_failures(const Workload& w, u32 kernel_block_n, const std::vector<std::string>& found,
                  std::vector<std::string>& failures) {
  for (std::size_t i = 0; i < found.size() && i < kShown; ++i)
    failures.push_back(fmt::format("{}: {}", describe(w, kernel_block_n), found[i]));
  if (found.size() > kShown)
    failures.push_back(
        fmt::format("{}: ... and {} more", describe(w, kernel_block_n), found.size() - kShown));
}

}  // namespace

std::string describe(const Workload& w, u32 kernel_block_n) {
  std::string s =
      fmt::format("{} q_lens [{}]", w.padded ? "padded" : "ragged", fmt::join(w.q_lens, ","));
  if (!w.kv_lens.empty()) s += fmt::format(" kv_lens [{}]", fmt::join(w.kv_lens, ","));
  return s +
         fmt::format(" Hq {} Hkv {} d {} mask {} BM {} BN {} (kernel's {}) {} C {}", w.num_q_heads,
                     w.num_kv_heads, w.head_dim, to_string(w.mask), w.block_m, w.block_n,
                     kernel_block_n != 0 ? kernel_block_n : gpu::recommended_block_n(w),
                     strategy_name(w), w.num_ctas) +
         (w.scheduler == SchedulerKind::SplitKv
              ? fmt::format(" chunks of {} KV blocks", w.split_kv_blocks)
              : "") +
         (w.page_size != 0 ? fmt::format(" pages of {} keys", w.page_size) : "");
}

CheckOutcome check_workload(const Workload& w, std::uint64_t seed, bool warm_up,
                            u32 kernel_block_n, gpu::ClusterPolicy clusters) {
  return check_workload(w, sim::make_inputs(w, seed), warm_up, kernel_block_n, clusters);
}

CheckOutcome check_workload(const Workload& w, const sim::AttentionInputs& in, bool warm_up,
                            u32 kernel_block_n, gpu::ClusterPolicy clusters) {
  CheckOutcome r;
  const gpu::DeviceInputs bits{sim::to_bf16_bits(in.q), sim::to_bf16_bits(in.k),
                               sim::to_bf16_bits(in.v)};
  // The planned schedulers follow the plan the simulator replays (its built-in cost model).
  const sim::CostModel cost = sim::CostModel::builtin(w.cost_profile);
  if (gpu::Status st =
          gpu::run_recorded(w, bits, warm_up, r.run, sim::plan_schedule(w, cost), kernel_block_n,
                            clusters);
      !st) {
    add_failures(w, kernel_block_n, {st.message}, r.failures);
    return r;
  }
  if (r.run.o_unwritten || r.run.lse_unwritten)
    add_failures(w, kernel_block_n,
                 {fmt::format("{} elements of O and {} of LSE were never written (poison left)",
                              r.run.o_unwritten, r.run.lse_unwritten)},
                 r.failures);
  add_failures(w, kernel_block_n, sim::schedule_differences(sim::replay(w, cost), r.run.trace),
               r.failures);
  // Tile by tile against the simulator's blockwise softmax in the GPU's own tile order.
  const sim::OutputCheck out =
      sim::check_outputs(r.run.trace, in, sim::from_bf16_bits(r.run.o_bits), r.run.lse);
  add_failures(w, kernel_block_n, out.failures, r.failures);
  r.worst_tile_error = out.worst_error;
  r.tiles = out.tiles;
  return r;
}

}  // namespace tilesched::gpu_test
