#include "cli/workload_flags.hpp"

#include <fmt/format.h>

#include "cli/errors.hpp"
#include "cli/typed_flags.hpp"
#include "tilesched/sim/workload_io.hpp"

namespace tilesched::cli {

namespace {

void add_sequence_flags(CLI::App& command, WorkloadFlags& f) {
  CLI::Option* q = add_u32_list_flag(command, "--q-lens", f.q_lens,
                                     "Query rows per sequence, comma-separated (a ragged batch)");
  add_u32_list_flag(command, "--kv-lens", f.kv_lens,
                    "Keys per sequence, comma-separated (default: q-lens)");
  CLI::Option* batch =
      add_number_flag(command, "--batch", f.batch, "Sequences of a padded batch (with --seq-len)",
                      /*min=*/1, sim::kMaxPaddedBatch);
  CLI::Option* seq =
      add_number_flag(command, "--seq-len", f.seq_len, "Rows of every sequence of a padded batch");
  batch->needs(seq);
  seq->needs(batch);
  q->excludes(batch)->excludes(seq);
}

void add_strategy_flags(CLI::App& command, WorkloadFlags& f) {
  add_choice_flag(command, "--scheduler", f.scheduler, "Scheduler")->type_name("KIND");
  add_choice_flag(command, "--schedule", f.schedule, "Index order")->type_name("ORDER");
  command.add_flag("--flip", f.flip, "Transient scheduler: most expensive tiles first");
}

}  // namespace

void add_workload_flags(CLI::App& command, WorkloadFlags& f, WorkloadFlagSet set) {
  command
      .add_option("workload", f.workload_file,
                  "Workload JSON file (default: the built-in ragged causal prefill workload)")
      ->type_name("WORKLOAD.json");
  add_sequence_flags(command, f);
  add_number_flag(command, "--heads", f.heads, "Query heads");
  add_number_flag(command, "--kv-heads", f.kv_heads, "KV heads (query heads must be a multiple)");
  add_number_flag(command, "--head-dim", f.head_dim, "Head dimension d");
  add_choice_flag(command, "--mask", f.mask, "Attention mask")->type_name("MASK");
  add_number_flag(command, "--bm", f.block_m, "BM: query rows per tile");
  add_number_flag(command, "--bn", f.block_n, "BN: keys per KV block");
  CLI::Option* decode =
      command.add_flag("--decode", f.decode,
                       "Decoding: new tokens per sequence (--new-tokens, default 1); the sequence "
                       "lengths given become the KV lengths unless --kv-lens (or the file's "
                       "kv_lens) gives them");
  add_u32_list_flag(command, "--new-tokens", f.new_tokens,
                    fmt::format("With --decode: new tokens per sequence, one value for every "
                                "sequence or one per sequence (1 decodes; up to {} verify "
                                "speculated tokens; more make that sequence a prefill chunk of a "
                                "mixed batch)",
                                kMaxDecodeTokens))
      ->needs(decode);
  if (set.strategy) add_strategy_flags(command, f);
  add_number_flag(command, "--ctas", f.ctas,
                  "C: persistent CTAs (tile, queued; default: SMs x CTAs per SM of the device), "
                  "or resident CTAs (transient)");
  add_choice_flag(command, "--ragged", f.ragged,
                  "Tiles past a sequence's end, skipped (safe) or run as upstream does (faithful)")
      ->type_name("MODE");
  add_number_flag(command, "--l2-bytes", f.l2_bytes,
                  "L2 size the planned schedulers (lpt, lpt_queued, planned) group heads by; 0: "
                  "no grouping");
  add_number_flag(command, "--l2-min-rounds", f.l2_min_rounds,
                  "Fewest rounds of C tiles in one L2 section of the planned schedulers (default "
                  "2; a workload file without the field: 1)",
                  /*min=*/1);
  add_number_flag(command, "--page-size", f.page_size,
                  "Keys per page of a paged KV cache (0: no paging; the GPU kernel takes any "
                  "size)",
                  /*min=*/0, Workload::kMaxPageSize);
  add_number_flag(command, "--split-kv-blocks", f.split_kv_blocks,
                  fmt::format("split_kv: KV blocks per chunk (default {})", kDefaultSplitKvBlocks),
                  /*min=*/1);
  CLI::Option* profile = add_cost_profile_flag(command, "--cost-profile", f.cost_profile,
                                               "Built-in cost coefficients");
  if (set.cost_model) {
    command.add_option("--cost-model", f.cost_model_file, "Cost model JSON file")
        ->type_name("FILE")
        ->excludes(profile);
  }
}

namespace {

template <class T>
void override_with(const std::optional<T>& flag, T& field) {
  if (flag) field = *flag;
}

// SPEC §6: new tokens per sequence against the cache (`new_tokens`: one count for every sequence
// or one per sequence; none given: 1): 1 to 16 decode or verify, more make a prefill sequence of a
// mixed batch. The lengths given so far are the cache lengths, unless KV lengths were given.
void make_decode(Workload& w, const std::vector<u32>& new_tokens) {
  if (w.kv_lens.empty()) w.kv_lens = w.q_lens;
  if (new_tokens.size() > 1 && new_tokens.size() != w.q_lens.size())
    throw UsageError(fmt::format(
        "--new-tokens has {} values but the batch has {} sequences: give one for every sequence "
        "or one per sequence",
        new_tokens.size(), w.q_lens.size()));
  for (u32 n : new_tokens)
    if (n == 0)
      throw UsageError(
          "--new-tokens: 0 is not a token count: every sequence adds at least 1 new token");
  if (new_tokens.size() > 1)
    w.q_lens = new_tokens;
  else
    w.q_lens.assign(w.q_lens.size(), new_tokens.empty() ? 1u : new_tokens[0]);
  w.padded = w.padded && new_tokens.size() <= 1;
  w.decoding = true;
}

void apply_sequence_flags(const WorkloadFlags& f, Workload& w) {
  if (!f.q_lens.empty()) {
    w.q_lens = f.q_lens;
    w.padded = false;
    w.kv_lens.clear();  // the old KV lengths belong to the old sequences
  }
  if (f.batch) {
    w.q_lens.assign(*f.batch, *f.seq_len);  // --batch needs --seq-len
    w.padded = true;
    w.kv_lens.clear();
  }
  if (!f.kv_lens.empty()) {
    w.kv_lens = f.kv_lens;
    // A padded batch has one KV length; let it be given once.
    if (w.padded && w.kv_lens.size() == 1) w.kv_lens.assign(w.q_lens.size(), w.kv_lens[0]);
  }
  if (f.decode) make_decode(w, f.new_tokens);
}

}  // namespace

Workload resolve_workload(const WorkloadFlags& f, viz::CtaOrigin* origin) {
  bool file_sets_ctas = false;
  Workload w = sim::default_workload();
  if (!f.workload_file.empty()) {
    const sim::WorkloadFile file = sim::read_workload_file(f.workload_file);
    w = file.workload;
    file_sets_ctas = file.sets_num_ctas;
  }
  if (origin)
    *origin = f.ctas           ? viz::CtaOrigin::Flag
              : file_sets_ctas ? viz::CtaOrigin::File
                               : viz::CtaOrigin::Device;
  apply_sequence_flags(f, w);
  override_with(f.heads, w.num_q_heads);
  override_with(f.kv_heads, w.num_kv_heads);
  override_with(f.head_dim, w.head_dim);
  override_with(f.mask, w.mask);
  override_with(f.block_m, w.block_m);
  override_with(f.block_n, w.block_n);
  override_with(f.scheduler, w.scheduler);
  override_with(f.schedule, w.schedule);
  if (f.flip) {
    if (w.scheduler != SchedulerKind::Transient)
      throw UsageError(
          "--flip applies to the transient scheduler only (add --scheduler transient)");
    w.flip_prompt_idx = true;
  }
  // The persistent stride; a transient grid has none, so there the flag sets the resident CTAs.
  if (f.ctas) {
    w.num_ctas = *f.ctas;
    if (w.scheduler == SchedulerKind::Transient) w.resident_ctas = *f.ctas;
  }
  override_with(f.ragged, w.ragged_mode);
  override_with(f.l2_bytes, w.l2_bytes);
  override_with(f.l2_min_rounds, w.l2_min_rounds);
  override_with(f.page_size, w.page_size);
  override_with(f.split_kv_blocks, w.split_kv_blocks);
  if (!f.cost_profile.empty()) w.cost_profile = f.cost_profile;

  // One of --heads / --kv-heads given and the other from the base workload: validate()'s heads
  // rule says where the other came from, so that the message does not quote only a value the
  // user never typed.
  if (f.heads.has_value() != f.kv_heads.has_value()) {
    const std::string note =
        fmt::format(", {}; give {} too",
                    f.workload_file.empty() ? "the built-in workload's" : "the workload file's",
                    f.heads ? "--kv-heads" : "--heads");
    if (const std::string m = f.heads ? w.heads_problem({}, note) : w.heads_problem(note, {});
        !m.empty())
      throw UsageError("invalid workload: " + m);
  }
  if (const std::string problem = w.validate(); !problem.empty()) {
    // The file was valid on its own (read_workload checks), so flags made it invalid.
    throw UsageError(fmt::format("invalid workload: {}", problem));
  }
  return w;
}

sim::CostModel resolve_cost_model(const WorkloadFlags& f, const Workload& w) {
  if (!f.cost_model_file.empty()) return sim::CostModel::load(f.cost_model_file);
  try {
    return sim::CostModel::builtin(w.cost_profile);
  } catch (const std::invalid_argument& e) {
    // Only a workload file can name an unknown profile; the flag is checked while parsing.
    throw std::runtime_error(fmt::format("cost profile '{}': {}", w.cost_profile, e.what()));
  }
}

std::string cost_model_label(const WorkloadFlags& f, const Workload& w) {
  return f.cost_model_file.empty() ? fmt::format("cost profile {}", w.cost_profile)
                                   : fmt::format("cost model '{}'", f.cost_model_file);
}

Simulation resolve_simulation(const WorkloadFlags& f) {
  viz::CtaOrigin origin = viz::CtaOrigin::Device;
  Simulation s{resolve_workload(f, &origin), {}, ""};
  s.cost = resolve_cost_model(f, s.workload);
  Workload& w = s.workload;
  const u32 device_ctas = s.cost.resident_ctas(w.head_dim);
  if (origin == viz::CtaOrigin::Device) {
    w.num_ctas = device_ctas;
    if (const std::string problem = w.validate(); !problem.empty())
      throw UsageError(
          fmt::format("invalid workload with C = {}: {} (give --ctas)", w.num_ctas, problem));
  }
  const std::string rule =
      viz::device_cta_rule(s.cost.multiprocessors, s.cost.sharing(w.head_dim).ctas_per_sm,
                           w.head_dim, cost_model_label(f, w));
  if (w.scheduler != SchedulerKind::Transient) {
    s.ctas_note = viz::describe_cta_choice(false, origin, w.num_ctas, rule);
  } else if (w.resident_ctas == Workload::kResidentFromDevice) {
    s.ctas_note = viz::describe_cta_choice(true, viz::CtaOrigin::Device, device_ctas, rule);
  } else {  // --ctas or the file's resident_ctas
    s.ctas_note = viz::describe_cta_choice(
        true, f.ctas ? viz::CtaOrigin::Flag : viz::CtaOrigin::File, w.resident_ctas, rule);
  }
  return s;
}

}  // namespace tilesched::cli
