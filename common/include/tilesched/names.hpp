// Text names of the enums, for the CLI, the trace format and error messages (host only).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tilesched/types.hpp"

namespace tilesched {

inline const char* to_string(Schedule s) {
  return s == Schedule::PromptRotate ? "prompt_rotate" : "default";
}
inline const char* to_string(SchedulerKind k) {
  switch (k) {
    case SchedulerKind::Tile: return "tile";
    case SchedulerKind::Queued: return "queued";
    case SchedulerKind::Transient: return "transient";
  }
  return "?";
}
inline const char* to_string(RaggedMode r) {
  return r == RaggedMode::Faithful ? "faithful" : "safe";
}
inline const char* to_string(Mask m) {
  return m == Mask::Causal ? "causal" : "none";
}
inline const char* to_string(SchedulerSync s) {
  switch (s) {
    case SchedulerSync::None: return "none";
    case SchedulerSync::Producer: return "producer";
    case SchedulerSync::All: return "all";
  }
  return "?";
}

inline std::optional<Schedule> parse_schedule(std::string_view s) {
  if (s == "default") return Schedule::Default;
  if (s == "prompt_rotate" || s == "rotate") return Schedule::PromptRotate;
  return std::nullopt;
}
inline std::optional<SchedulerKind> parse_scheduler_kind(std::string_view s) {
  if (s == "tile") return SchedulerKind::Tile;
  if (s == "queued") return SchedulerKind::Queued;
  if (s == "transient") return SchedulerKind::Transient;
  return std::nullopt;
}
inline std::optional<RaggedMode> parse_ragged_mode(std::string_view s) {
  if (s == "safe") return RaggedMode::Safe;
  if (s == "faithful") return RaggedMode::Faithful;
  return std::nullopt;
}
inline std::optional<Mask> parse_mask(std::string_view s) {
  if (s == "none") return Mask::None;
  if (s == "causal") return Mask::Causal;
  return std::nullopt;
}

// How WorkInfo prints in the reference: (prompt_offset, head_idx, prompt_idx, is_valid).
inline std::string to_string(const WorkInfo& w) {
  return "(" + std::to_string(w.prompt_offset) + "," + std::to_string(w.head_idx) + "," +
         std::to_string(w.prompt_idx) + "," + (w.is_valid() ? "T" : "F") + ")";
}

}  // namespace tilesched
