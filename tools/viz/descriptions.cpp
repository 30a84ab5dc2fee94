#include "viz/descriptions.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tilesched/sim/describe.hpp"

namespace tilesched::viz {

std::string describe_workload(const Workload& w) {
  std::string lens;
  if (w.q_lens.empty()) {
    lens = "no sequences";
  } else if (w.decoding) {
    u32 lo = w.key_len(0), hi = lo;
    for (u32 b = 1; b < w.batch_size(); ++b) {
      lo = std::min(lo, w.key_len(b));
      hi = std::max(hi, w.key_len(b));
    }
    const std::string keys = lo == hi ? fmt::format("{}", hi) : fmt::format("{}..{}", lo, hi);
    if (w.mixed()) {
      std::size_t prefill = 0;
      for (u32 q : w.q_lens) prefill += q > kMaxDecodeTokens ? 1 : 0;
      lens = fmt::format("mixed, {} prefill and {} decode sequences of {} keys", prefill,
                         w.q_lens.size() - prefill, keys);
    } else {
      lens = fmt::format("decode, {} sequences of {} keys", w.q_lens.size(), keys);
    }
  } else {
    const auto [lo, hi] = std::minmax_element(w.q_lens.begin(), w.q_lens.end());
    const char* layout = w.padded ? "padded" : "ragged";
    lens = *lo == *hi
               ? fmt::format("{} x {} rows, {}", w.q_lens.size(), *hi, layout)
               : fmt::format("{} sequences of {}..{} rows, {}", w.q_lens.size(), *lo, *hi, layout);
  }
  return fmt::format("{}; {} q heads / {} kv heads, d {}, {} mask, BM {}, BN {}", lens,
                     w.num_q_heads, w.num_kv_heads, w.head_dim, to_string(w.mask), w.block_m,
                     w.block_n);
}

std::string describe_trace(const Trace& t) {
  return fmt::format("{}, {} CTAs launched (C = {}), {} ({})", strategy_name(t.workload),
                     t.launched_ctas, t.workload.num_ctas, t.source.empty() ? "?" : t.source,
                     t.device.empty() ? "?" : t.device);
}

std::string describe_tile(const TraceEvent& e) {
  return fmt::format("{}, idx {}, {}", sim::describe_tile(e), e.linear_idx,
                     sim::describe_kv_blocks(e));
}

std::string describe_event(const TraceEvent& e) {
  std::string s = fmt::format(
      "CTA {} step {}: tile idx {}\nprompt {}, head {}, prompt offset {}\n{} query rows, {} KV "
      "blocks\nstart {} us, end {} us ({} us)",
      e.cta, e.step, e.linear_idx, e.prompt_idx, e.head_idx, e.prompt_offset, e.query_rows,
      e.kv_blocks, format_us(e.start_us), format_us(e.end_us), format_us(e.end_us - e.start_us));
  if (e.sm_id >= 0) s += fmt::format("\nSM {}", e.sm_id);
  return s;
}

std::string format_us(double us) {
  const double a = us < 0 ? -us : us;
  if (a >= 1000) return fmt::format("{:.0f}", us);
  if (a >= 10) return fmt::format("{:.1f}", us);
  return fmt::format("{:.2f}", us);
}

std::string device_cta_rule(u32 sms, u32 per_sm, u32 head_dim, const std::string& device) {
  return fmt::format("{} SMs x {} CTA{} per SM at d = {} ({})", sms, per_sm, per_sm == 1 ? "" : "s",
                     head_dim, device);
}

std::string describe_cta_choice(bool transient, CtaOrigin origin, u32 count,
                                const std::string& device_rule) {
  const std::string what = fmt::format("{} = {}", transient ? "resident CTAs" : "C", count);
  switch (origin) {
    case CtaOrigin::Flag: return fmt::format("{}: from --ctas", what);
    case CtaOrigin::File: return fmt::format("{}: from the workload file", what);
    case CtaOrigin::Device: break;
  }
  return fmt::format("{}: {}", what, device_rule);
}

}  // namespace tilesched::viz
