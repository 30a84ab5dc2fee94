#include "cli/parse_values.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/errors.hpp"

namespace tilesched::cli {

namespace {
std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}
}  // namespace

std::uint64_t parse_uint(const std::string& flag, const std::string& text, std::uint64_t max) {
  const std::string t = trim(text);
  if (t.empty()) throw UsageError(fmt::format("{}: expected a whole number, got nothing", flag));
  std::uint64_t value = 0;
  for (const char ch : t) {
    if (ch < '0' || ch > '9')
      throw UsageError(fmt::format("{}: '{}' is not a whole number", flag, text));
    const std::uint64_t digit = static_cast<std::uint64_t>(ch - '0');
    if (value > (max - digit) / 10)
      throw UsageError(fmt::format("{}: {} is too large (at most {})", flag, t, max));
    value = value * 10 + digit;
  }
  return value;
}

u32 parse_u32(const std::string& flag, const std::string& text) {
  return static_cast<u32>(parse_uint(flag, text, UINT32_MAX));
}

int parse_int_at_least(const std::string& flag, const std::string& text, int min) {
  const auto value = static_cast<int>(parse_uint(flag, text, INT32_MAX));
  if (value < min)
    throw UsageError(fmt::format("{}: must be at least {}, got {}", flag, min, value));
  return value;
}

std::vector<u32> parse_u32_list(const std::string& flag, const std::string& text) {
  std::vector<u32> values;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (trim(item).empty())
      throw UsageError(
          fmt::format("{}: empty entry in '{}' (give comma-separated lengths such as "
                      "512,8192)",
                      flag, text));
    values.push_back(parse_u32(flag, item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

std::string parse_choice(const std::string& flag, const std::string& text,
                         const std::vector<std::string>& choices) {
  for (const std::string& c : choices)
    if (text == c) return c;
  throw UsageError(fmt::format("{}: unknown value '{}' (expected one of: {})", flag, text,
                               fmt::join(choices, ", ")));
}

}  // namespace tilesched::cli
