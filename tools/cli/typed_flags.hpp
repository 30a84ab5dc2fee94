// Flags stored in their own types and checked once, while CLI11 parses, by one rule per kind of
// value. Numbers: decimal digits only, within the type's range (CLI11's own conversions read
// "010" as octal and "0x10" as hex, and wrap "-1" for unsigned types, but a problem size must be
// exactly what was typed). Choices: the names in the enum's table (tilesched/names.hpp). A bad
// value throws CLI::ValidationError, "--flag: what is wrong", which the tool prints as one line
// and exit status 2 (app.cpp).
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tilesched/config.hpp"
#include "tilesched/names.hpp"

namespace tilesched::cli {

// The rule for numbers: decimal digits, optionally surrounded by spaces, with a value in
// [min, max]. Throws std::invalid_argument saying what is wrong with `text`; the caller names
// the flag.
std::uint64_t parse_decimal(std::string_view text, std::uint64_t min, std::uint64_t max);

// "512,8192, 1000" -> {512, 8192, 1000}: one or more comma-separated parse_decimal values that
// fit in 32 bits. Throws std::invalid_argument like parse_decimal.
std::vector<u32> parse_u32_list(std::string_view text);

// A CLI11 transformer applying parse_decimal and leaving the value in plain decimal, so that
// CLI11's conversion into the flag's type reads exactly the number that was checked.
CLI::Validator decimal_number(std::uint64_t min, std::uint64_t max);

// A CLI11 checked transformer from the names in E's table to E (aliases accepted). CLI11's own
// CheckedTransformer is not used: it also accepts the number an enum is stored as ("--mask 1"),
// and its message lists name->number pairs.
template <class E>
CLI::Validator enum_choice() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<E> value = parse_enum<E>(text);
        if (!value)
          return fmt::format("unknown value '{}' (expected one of: {})", text, enum_choices<E>());
        text = fmt::format("{}", static_cast<std::underlying_type_t<E>>(*value));
        return {};
      },
      "");
}

// A flag naming a built-in cost profile: its help ends with the names sim::CostModel::builtin
// knows, and any other name is refused while parsing (the message lists them too).
CLI::Option* add_cost_profile_flag(CLI::App& command, const std::string& name, std::string& value,
                                   const std::string& help);

// Flags naming where output goes, checked while parsing so that nothing is computed for a path
// that cannot be written: a file (`compare --html`, `fit --out`, `bench --json`) must not be
// empty, an existing directory or end in '/' ("--html: '.' is a directory: give the file to
// write in it, e.g. ./compare.html"); a directory (`--out DIR`) must not be empty. `example` is
// a name to suggest (compare.html, out).
CLI::Option* add_output_file_flag(CLI::App& command, const std::string& name, std::string& value,
                                  const std::string& help, const std::string& example);
CLI::Option* add_output_dir_flag(CLI::App& command, const std::string& name, std::string& value,
                                 const std::string& help, const std::string& example);

namespace detail {
template <class T>
struct Unwrapped {
  using type = T;
};
template <class T>
struct Unwrapped<std::optional<T>> {
  using type = T;
};
}  // namespace detail

// A number flag stored in `value` (an integer, or a std::optional of one: empty when not given),
// within [min, max] (max: the largest the type holds unless given).
template <class T>
CLI::Option* add_number_flag(CLI::App& command, const std::string& name, T& value,
                             const std::string& help, std::uint64_t min = 0,
                             std::uint64_t max = UINT64_MAX) {
  using Number = typename detail::Unwrapped<T>::type;
  static_assert(std::is_integral_v<Number> && !std::is_same_v<Number, bool>);
  const std::uint64_t largest = std::numeric_limits<Number>::max();
  return command.add_option(name, value, help)
      ->transform(decimal_number(min, std::min(max, largest)))
      ->type_name("N");
}

// A comma-separated list of u32 (parse_u32_list), one command-line argument. Stays empty when
// the flag is not given; a given list has at least one entry. With `allowed` non-empty, every
// entry must be one of those ("V is not one of <allowed_what> (A, B, ...)" otherwise).
CLI::Option* add_u32_list_flag(CLI::App& command, const std::string& name, std::vector<u32>& values,
                               const std::string& help, const std::vector<u32>& allowed = {},
                               const std::string& allowed_what = "the allowed values");

// A choice flag stored in `value` (an enum with a table, or a std::optional of one). The help
// text gets the names appended ("Attention mask: none | causal") and, for a plain enum, the
// default.
template <class T>
CLI::Option* add_choice_flag(CLI::App& command, const std::string& name, T& value,
                             const std::string& help) {
  using E = typename detail::Unwrapped<T>::type;
  CLI::Option* option =
      command.add_option(name, value, fmt::format("{}: {}", help, enum_choices<E>(" | ")))
          ->transform(enum_choice<E>());
  if constexpr (std::is_same_v<T, E>) option->default_str(to_string(value));
  return option;
}

}  // namespace tilesched::cli
