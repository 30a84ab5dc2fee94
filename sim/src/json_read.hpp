// Checked reading of JSON files and objects. Documents are parsed with limits (nesting depth,
// unique keys) and freed without allocating, so no file makes a reader crash; every problem with
// the content throws std::invalid_argument with a message that names the field (as a path like
// "workload.q_lens[3]") and what is wrong with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tilesched/config.hpp"
#include "tilesched/sim/io.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim::detail {

using nlohmann::json;

// The deepest nesting of arrays and objects a document may have. The file formats need 3 (a
// trace's events[i] object); the limit keeps every recursive walk of a document (dump, compare,
// copy, release_json) far from the end of the stack, whatever a file holds.
inline constexpr std::size_t kMaxJsonDepth = 64;

[[noreturn]] void fail(const std::string& field, const std::string& problem);

// "string \"abc\"", "number -3", "an array", ... for error messages; never the whole of a large
// value.
std::string describe(const json& v);

void require_object(const json& j, const std::string& what);
// Rejects any key not in `known`, naming it and listing the accepted ones.
void check_known_fields(const json& obj, std::initializer_list<const char*> known,
                        const std::string& prefix);
void check_known_fields(const json& obj, const std::vector<const char*>& known,
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

// Frees a document bottom up without allocating, leaving `j` null. nlohmann's own destructor
// first moves a container's children into a new vector (to avoid recursion), which throws
// std::bad_alloc inside a noexcept destructor, i.e. std::terminate, when memory has run out:
// exactly when a reader gives up on a document too large for the memory. Recursion is bounded by
// the nesting depth, which parse_json_text limits.
void release_json(json& j) noexcept;

// A parsed document that is freed with release_json, whichever way its scope is left.
class JsonDocument {
 public:
  explicit JsonDocument(json root) noexcept : root_(std::move(root)) {}
  ~JsonDocument() { release_json(root_); }
  JsonDocument(const JsonDocument&) = delete;
  JsonDocument& operator=(const JsonDocument&) = delete;
  const json& root() const { return root_; }
  void release() noexcept { release_json(root_); }

 private:
  json root_;
};

// `text` parsed as JSON; `source` (a path) names it in errors. std::invalid_argument:
//   "'<source>' is not valid JSON: ..."
//   "'<source>' nests arrays and objects <N> levels deep; at most 64 are accepted"
//   "'<source>': field '<path>': duplicate key ..."
// std::runtime_error "not enough memory to read '<source>' (...)" when an allocation fails.
json parse_json_text(std::string_view text, const std::string& source);

// parse_json_text, then `from_json` on the result, with the source put in front of any
// std::invalid_argument it throws, and an allocation failure reported as not enough memory:
// every reader of a JSON file (workload, trace, cost table) reports problems the same way.
template <class FromJson>
auto read_json_text(std::string_view text, const std::string& source, FromJson&& from_json) {
  JsonDocument doc(parse_json_text(text, source));
  try {
    return from_json(doc.root());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("'" + source + "': " + e.what());
  } catch (const std::bad_alloc&) {
    doc.release();  // first give back what the document holds, so the message can be built
    throw std::runtime_error(not_enough_memory_to_read(source, text.size()));
  }
}

// read_file(path), then read_json_text.
template <class FromJson>
auto read_json_file(const std::string& path, FromJson&& from_json) {
  const std::string text = read_file(path);
  return read_json_text(text, path, std::forward<FromJson>(from_json));
}

}  // namespace tilesched::sim::detail

namespace tilesched::sim::detail {
// workload_from_json with every field name prefixed (the trace reader passes "workload.").
Workload workload_from_json_at(const nlohmann::json& j, const std::string& prefix);
}  // namespace tilesched::sim::detail
