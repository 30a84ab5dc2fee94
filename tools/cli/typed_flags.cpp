#include "cli/typed_flags.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "tilesched/sim/cost_model.hpp"

namespace tilesched::cli {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

}  // namespace

std::uint64_t parse_decimal(std::string_view text, std::uint64_t min, std::uint64_t max) {
  const std::string_view digits = trim(text);
  if (digits.empty()) throw std::invalid_argument("expected a whole number, got nothing");
  std::uint64_t value = 0;
  for (const char ch : digits) {
    if (ch < '0' || ch > '9')
      throw std::invalid_argument(fmt::format("'{}' is not a whole number", text));
    const auto digit = static_cast<std::uint64_t>(ch - '0');
    if (value > (max - digit) / 10)
      throw std::invalid_argument(fmt::format("{} is too large (at most {})", digits, max));
    value = value * 10 + digit;
  }
  if (value < min)
    throw std::invalid_argument(fmt::format("must be at least {}, got {}", min, value));
  return value;
}

std::vector<u32> parse_u32_list(std::string_view text) {
  std::vector<u32> values;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == text.npos ? comma : comma - start);
    if (trim(item).empty())
      throw std::invalid_argument(
          fmt::format("empty entry in '{}' (give comma-separated lengths such as 512,8192)", text));
    values.push_back(static_cast<u32>(parse_decimal(item, 0, UINT32_MAX)));
    if (comma == text.npos) break;
    start = comma + 1;
  }
  return values;
}

CLI::Validator decimal_number(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        try {
          text = fmt::format("{}", parse_decimal(text, min, max));
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
        return {};
      },
      "");
}

CLI::Option* add_cost_profile_flag(CLI::App& command, const std::string& name, std::string& value,
                                   const std::string& help) {
  const CLI::Validator known(
      [](std::string& profile) -> std::string {
        try {
          sim::CostModel::builtin(profile);
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
        return {};
      },
      "");
  return command
      .add_option(name, value,
                  fmt::format("{}: {}", help, fmt::join(sim::CostModel::builtin_names(), " | ")))
      ->type_name("NAME")
      ->check(known);
}

namespace {

// An output path flag of type name `type` (FILE or DIR): an empty path is refused, naming `what`
// the path is for and suggesting `example`; any other path by `problem` ("" when it is fine).
CLI::Option* add_output_path_flag(CLI::App& command, const std::string& name, std::string& value,
                                  const std::string& help, const std::string& type,
                                  const std::string& what, const std::string& example,
                                  std::string (*problem)(const std::string& path,
                                                         const std::string& example)) {
  const CLI::Validator path_check(
      [what, example, problem](std::string& path) -> std::string {
        if (path.empty()) return fmt::format("empty path: give the {}, e.g. {}", what, example);
        return problem(path, example);
      },
      "");
  return command.add_option(name, value, help)->type_name(type)->check(path_check);
}

std::string file_path_problem(const std::string& path, const std::string& example) {
  std::error_code ec;
  const bool directory = std::filesystem::is_directory(path, ec);
  if (!directory && path.back() != '/') return {};
  return fmt::format("'{}' {}: give the file to write in it, e.g. {}", path,
                     directory ? "is a directory" : "names a directory",
                     (std::filesystem::path(path) / example).string());
}

std::string no_problem(const std::string&, const std::string&) {
  return {};
}

}  // namespace

CLI::Option* add_output_file_flag(CLI::App& command, const std::string& name, std::string& value,
                                  const std::string& help, const std::string& example) {
  return add_output_path_flag(command, name, value, help, "FILE", "file to write", example,
                              file_path_problem);
}

CLI::Option* add_output_dir_flag(CLI::App& command, const std::string& name, std::string& value,
                                 const std::string& help, const std::string& example) {
  return add_output_path_flag(command, name, value, help, "DIR", "directory to write into", example,
                              no_problem);
}

CLI::Option* add_u32_list_flag(CLI::App& command, const std::string& name, std::vector<u32>& values,
                               const std::string& help, const std::vector<u32>& allowed,
                               const std::string& allowed_what) {
  // A list is one argument split here rather than by CLI11, whose delimiter option silently
  // drops empty entries ("512,,1").
  return command
      .add_option_function<std::string>(
          name,
          [name, &values, allowed, allowed_what](const std::string& text) {
            try {
              values = parse_u32_list(text);
            } catch (const std::invalid_argument& e) {
              throw CLI::ValidationError(name, e.what());
            }
            for (const u32 v : values)
              if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), v) == allowed.end())
                throw CLI::ValidationError(name,
                                           fmt::format("{} is not one of {} ({})", v, allowed_what,
                                                       fmt::join(allowed, ", ")));
          },
          help)
      ->type_name("LIST");
}

}  // namespace tilesched::cli
