// Strict parsing of flag values. CLI11's own conversions accept octal ("010"), hex and wrap
// negative numbers for unsigned types; a scheduler problem size must be exactly what was typed,
// so numbers are parsed here, decimal only, and every failure names the flag (UsageError).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilesched/config.hpp"

namespace tilesched::cli {

std::uint64_t parse_uint(const std::string& flag, const std::string& text,
                         std::uint64_t max = UINT64_MAX);
u32 parse_u32(const std::string& flag, const std::string& text);
int parse_int_at_least(const std::string& flag, const std::string& text, int min);

// "512,8192, 1000" -> {512, 8192, 1000}; at least one entry.
std::vector<u32> parse_u32_list(const std::string& flag, const std::string& text);

// One of `choices` (exact match), else a UsageError listing them.
std::string parse_choice(const std::string& flag, const std::string& text,
                         const std::vector<std::string>& choices);

}  // namespace tilesched::cli
