// Text names of the enums, for the CLI, the trace format and error messages (host only).
//
// Each enum has one table, and everything that names its values reads it: to_string, parse_enum,
// the JSON reader and writer, the command's choice flags and their help text. A new value is one
// row here. The first row of a value is its name (printed and written); rows marked kAlias are
// other spellings that parsing also accepts.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tilesched/types.hpp"

namespace tilesched {

template <class E>
struct EnumName {
  E value;
  const char* name;
  bool alias = false;
};

inline constexpr bool kAlias = true;

inline constexpr EnumName<Schedule> kScheduleNames[] = {
    {Schedule::Default, "default"},
    {Schedule::PromptRotate, "prompt_rotate"},
    {Schedule::PromptRotate, "rotate", kAlias},
};
inline constexpr EnumName<SchedulerKind> kSchedulerKindNames[] = {
    {SchedulerKind::Tile, "tile"},
    {SchedulerKind::Queued, "queued"},
    {SchedulerKind::Transient, "transient"},
    {SchedulerKind::Lpt, "lpt"},
    {SchedulerKind::LptQueued, "lpt_queued"},
    {SchedulerKind::Planned, "planned"},
    {SchedulerKind::RaggedQueued, "ragged_queued"},
    {SchedulerKind::SplitTail, "split_tail"},
    {SchedulerKind::SplitKv, "split_kv"},
    {SchedulerKind::StreamK, "stream_k"},
};
inline constexpr EnumName<RaggedMode> kRaggedModeNames[] = {
    {RaggedMode::Safe, "safe"},
    {RaggedMode::Faithful, "faithful"},
};
inline constexpr EnumName<Mask> kMaskNames[] = {
    {Mask::None, "none"},
    {Mask::Causal, "causal"},
};
inline constexpr EnumName<SchedulerSync> kSchedulerSyncNames[] = {
    {SchedulerSync::None, "none"},
    {SchedulerSync::Producer, "producer"},
    {SchedulerSync::All, "all"},
};

// The table of an enum, found by argument-dependent lookup so that enums of other namespaces
// (the pictures' colouring, the command's flags) add theirs beside their own definition.
constexpr const auto& enum_names(Schedule) {
  return kScheduleNames;
}
constexpr const auto& enum_names(SchedulerKind) {
  return kSchedulerKindNames;
}
constexpr const auto& enum_names(RaggedMode) {
  return kRaggedModeNames;
}
constexpr const auto& enum_names(Mask) {
  return kMaskNames;
}
constexpr const auto& enum_names(SchedulerSync) {
  return kSchedulerSyncNames;
}

// Whether E has a table (and so to_string and parse_enum).
template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(enum_names(E{}))>> : std::true_type {};

template <class E, class = std::enable_if_t<has_enum_names<E>::value>>
constexpr const char* to_string(E value) {
  for (const EnumName<E>& row : enum_names(value))
    if (row.value == value) return row.name;
  return "?";  // a value without a row: the table lacks it
}

// The value named `name` (a name or an alias, exact match), or nothing.
template <class E>
constexpr std::optional<E> parse_enum(std::string_view name) {
  for (const EnumName<E>& row : enum_names(E{}))
    if (name == row.name) return row.value;
  return std::nullopt;
}

// "none, causal": the names (not the aliases) in table order, for messages and help text.
template <class E>
std::string enum_choices(std::string_view separator = ", ") {
  std::string out;
  for (const EnumName<E>& row : enum_names(E{})) {
    if (row.alias) continue;
    if (!out.empty()) out += separator;
    out += row.name;
  }
  return out;
}

// How WorkInfo prints in the reference: (prompt_offset, head_idx, prompt_idx, is_valid).
inline std::string to_string(const WorkInfo& w) {
  return fmt::format("({},{},{},{})", w.prompt_offset, w.head_idx, w.prompt_idx,
                     w.is_valid() ? "T" : "F");
}

}  // namespace tilesched
