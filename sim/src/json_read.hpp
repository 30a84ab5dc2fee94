// Checked reading of JSON objects: every failure throws std::invalid_argument with a message that
// names the field (as a path like "workload.q_lens[3]") and what is wrong with it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tilesched/config.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim::detail {

using nlohmann::json;

[[noreturn]] void fail(const std::string& field, const std::string& problem);

// "string \"abc\"", "number -3", "array", ... for error messages.
std::string describe(const json& v);

void require_object(const json& j, const std::string& what);
// Rejects any key not in `known`, naming it and listing the accepted ones.
void check_known_fields(const json& obj, std::initializer_list<const char*> known,
                        const std::string& prefix);
// The field `key` of `obj` (a reference into `obj`). `prefix` is a string_view so that a literal
// "" creates no temporary std::string: binding the result of a call that takes a temporary to a
// reference is what -Wdangling-reference flags, even though the result refers to `obj`.
const json& require(const json& obj, const char* key, std::string_view prefix);

std::uint64_t as_u64(const json& v, const std::string& field);
u32 as_u32(const json& v, const std::string& field);
std::int32_t as_i32(const json& v, const std::string& field);
double as_double(const json& v, const std::string& field);  // finite
bool as_bool(const json& v, const std::string& field);
std::string as_string(const json& v, const std::string& field);
std::vector<std::uint64_t> as_u64_list(const json& v, const std::string& field);

// The file at `path` parsed as JSON. std::runtime_error when it cannot be read,
// std::invalid_argument "'<path>' is not valid JSON: ..." when it does not parse.
json parse_json_file(const std::string& path);

// parse_json_file, then `from_json` on the result, with the path put in front of any
// std::invalid_argument it throws: every reader of a JSON file (workload, trace, cost table)
// reports problems the same way.
template <class FromJson>
auto read_json_file(const std::string& path, FromJson&& from_json) {
  const json j = parse_json_file(path);
  try {
    return from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("'" + path + "': " + e.what());
  }
}

}  // namespace tilesched::sim::detail

namespace tilesched::sim::detail {
// workload_from_json with every field name prefixed (the trace reader passes "workload.").
Workload workload_from_json_at(const nlohmann::json& j, const std::string& prefix);
}  // namespace tilesched::sim::detail
