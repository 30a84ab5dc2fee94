#include "cli/workload_flags.hpp"

#include <fmt/format.h>

#include "cli/errors.hpp"
#include "cli/parse_values.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::cli {

void add_workload_flags(CLI::App& command, WorkloadFlags& f, WorkloadFlagSet set) {
  f.command = &command;
  command
      .add_option("workload", f.workload_file,
                  "Workload JSON file (default: the built-in ragged causal prefill workload)")
      ->type_name("WORKLOAD.json");
  auto* q = command
                .add_option("--q-lens", f.q_lens,
                            "Query rows per sequence, comma-separated (a ragged batch)")
                ->type_name("LIST");
  command
      .add_option("--kv-lens", f.kv_lens, "Keys per sequence, comma-separated (default: q-lens)")
      ->type_name("LIST");
  auto* batch =
      command.add_option("--batch", f.batch, "Sequences of a padded batch (with --seq-len)")
          ->type_name("N");
  auto* seq =
      command.add_option("--seq-len", f.seq_len, "Rows of every sequence of a padded batch")
          ->type_name("N");
  batch->needs(seq);
  seq->needs(batch);
  q->excludes(batch)->excludes(seq);
  command.add_option("--heads", f.heads, "Query heads")->type_name("N");
  command.add_option("--kv-heads", f.kv_heads, "KV heads (query heads must be a multiple)")
      ->type_name("N");
  command.add_option("--head-dim", f.head_dim, "Head dimension d")->type_name("N");
  command.add_option("--mask", f.mask, "Attention mask: none | causal")->type_name("MASK");
  command.add_option("--bm", f.block_m, "BM: query rows per tile")->type_name("N");
  command.add_option("--bn", f.block_n, "BN: keys per KV block")->type_name("N");
  if (set.strategy) {
    command.add_option("--scheduler", f.scheduler, "Scheduler: tile | queued | transient")
        ->type_name("KIND");
    command.add_option("--schedule", f.schedule, "Index order: default | prompt_rotate")
        ->type_name("ORDER");
    command.add_flag("--flip", f.flip, "Transient scheduler: most expensive tiles first");
  }
  command
      .add_option("--ctas", f.ctas,
                  "C: persistent CTAs (tile, queued) or resident CTAs (transient)")
      ->type_name("N");
  command
      .add_option("--ragged", f.ragged,
                  "Ragged tiles past a sequence's end: safe (skip) | faithful (upstream)")
      ->type_name("MODE");
  auto* profile =
      command
          .add_option("--cost-profile", f.cost_profile, "Built-in cost coefficients: h200 | h100")
          ->type_name("NAME");
  if (set.cost_model) {
    command.add_option("--cost-model", f.cost_model_file, "Cost model JSON file")
        ->type_name("FILE")
        ->excludes(profile);
  }
}

namespace {

bool given(const WorkloadFlags& f, const char* name) {
  return f.command->count(name) > 0;
}

}  // namespace

Workload resolve_workload(const WorkloadFlags& f) {
  Workload w =
      f.workload_file.empty() ? sim::default_workload() : sim::read_workload(f.workload_file);
  if (given(f, "--q-lens")) {
    w.q_lens = parse_u32_list("--q-lens", f.q_lens);
    w.padded = false;
    w.kv_lens.clear();  // the old KV lengths belong to the old sequences
  }
  if (given(f, "--batch")) {
    const u32 batch = parse_u32("--batch", f.batch);
    if (batch == 0) throw UsageError("--batch: a batch needs at least 1 sequence");
    w.q_lens.assign(batch, parse_u32("--seq-len", f.seq_len));
    w.padded = true;
    w.kv_lens.clear();
  }
  if (given(f, "--kv-lens")) {
    w.kv_lens = parse_u32_list("--kv-lens", f.kv_lens);
    // A padded batch has one KV length; let it be given once.
    if (w.padded && w.kv_lens.size() == 1) w.kv_lens.assign(w.q_lens.size(), w.kv_lens[0]);
  }
  if (given(f, "--heads")) w.num_q_heads = parse_u32("--heads", f.heads);
  if (given(f, "--kv-heads")) w.num_kv_heads = parse_u32("--kv-heads", f.kv_heads);
  if (given(f, "--head-dim")) w.head_dim = parse_u32("--head-dim", f.head_dim);
  if (given(f, "--mask")) w.mask = *parse_mask(parse_choice("--mask", f.mask, {"none", "causal"}));
  if (given(f, "--bm")) w.block_m = parse_u32("--bm", f.block_m);
  if (given(f, "--bn")) w.block_n = parse_u32("--bn", f.block_n);
  if (f.command->get_option_no_throw("--scheduler")) {
    if (given(f, "--scheduler"))
      w.scheduler = *parse_scheduler_kind(
          parse_choice("--scheduler", f.scheduler, {"tile", "queued", "transient"}));
    if (given(f, "--schedule"))
      w.schedule = *parse_schedule(
          parse_choice("--schedule", f.schedule, {"default", "prompt_rotate", "rotate"}));
    if (given(f, "--flip")) {
      if (w.scheduler != SchedulerKind::Transient)
        throw UsageError(
            "--flip applies to the transient scheduler only (add --scheduler "
            "transient)");
      w.flip_prompt_idx = true;
    }
  }
  // One flag for both numbers: the persistent stride and the transient resident limit.
  if (given(f, "--ctas")) w.num_ctas = w.resident_ctas = parse_u32("--ctas", f.ctas);
  if (given(f, "--ragged"))
    w.ragged_mode = *parse_ragged_mode(parse_choice("--ragged", f.ragged, {"safe", "faithful"}));
  if (given(f, "--cost-profile"))
    w.cost_profile = parse_choice("--cost-profile", f.cost_profile, {"h200", "h100"});

  if (const std::string problem = w.validate(); !problem.empty()) {
    // The file was valid on its own (read_workload checks), so flags made it invalid.
    throw UsageError("invalid workload: " + problem);
  }
  return w;
}

sim::CostModel resolve_cost_model(const WorkloadFlags& f, const Workload& w) {
  if (!f.cost_model_file.empty()) return sim::CostModel::load(f.cost_model_file);
  try {
    return sim::CostModel::builtin(w.cost_profile);
  } catch (const std::invalid_argument& e) {
    // Only a workload file can name an unknown profile; the flag is checked above.
    throw std::runtime_error(fmt::format("cost profile '{}': {}", w.cost_profile, e.what()));
  }
}

}  // namespace tilesched::cli
