#include "json_read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <stdexcept>

#include "tilesched/sim/io.hpp"

namespace tilesched::sim::detail {

namespace {

// `text` on one line and at most about `limit` bytes: control characters and bytes that are not
// UTF-8 escaped (a JSON key may hold a newline, a broken file any byte), and a longer text cut
// between characters with "...". Every message a reader gives is one line of valid text,
// whatever the file holds.
std::string one_line(std::string_view text, std::size_t limit) {
  std::string out;
  out.reserve(std::min(text.size(), limit) + 8);
  for (std::size_t i = 0; i < text.size();) {
    if (out.size() >= limit) return out + "...";
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char u = byte(i);
    const std::size_t length = u < 0x80             ? 1
                               : (u & 0xE0) == 0xC0 ? 2
                               : (u & 0xF0) == 0xE0 ? 3
                               : (u & 0xF8) == 0xF0 ? 4
                                                    : 0;
    bool whole = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; whole && k < length; ++k) whole = (byte(i + k) & 0xC0) == 0x80;
    if (u == '\n') {
      out += "\\n";
    } else if (u == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F || !whole) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", u);
      out += escaped;
    } else {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    ++i;
  }
  return out;
}

// A field path holds the file's own keys: long enough for any real path, short enough that a
// megabyte-long key does not become a megabyte-long message.
constexpr std::size_t kMaxFieldInMessage = 120;
// Longest string field (device, created, cost_profile, ...) a file may hold.
constexpr std::size_t kMaxStringBytes = 256;
// Our own problem sentences are far shorter; user text inside them (an enum name, say) is cut.
constexpr std::size_t kMaxProblemInMessage = 600;

// Depth of the deepest nesting in `text`, counting brackets outside strings. Only used to report
// how deep a rejected document goes, so it need not validate anything.
std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Builds the document from nlohmann's SAX events (the same way its own DOM parser does), adding
// what that parser lacks: a depth limit and duplicate-key detection. On failure the partial
// document is freed with release_json, so running out of memory half-way is reported, not fatal.
class DocumentBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  DocumentBuilder() = default;
  DocumentBuilder(const DocumentBuilder&) = delete;
  DocumentBuilder& operator=(const DocumentBuilder&) = delete;
  ~DocumentBuilder() { release_json(root_); }

  json take_root() { return std::move(root_); }
  bool too_deep() const { return too_deep_; }
  // Empty unless parsing stopped on a problem other than the depth limit.
  const std::string& problem() const { return problem_; }

  bool null() { return put(json(nullptr)) != nullptr; }
  bool boolean(bool b) { return put(json(b)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return put(json(v)) != nullptr; }
  bool string(string_t& s) { return put(json(std::move(s))) != nullptr; }
  bool binary(binary_t& b) { return put(json::binary(std::move(b))) != nullptr; }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    json& object = *open_.back();
    if (object.contains(k)) {
      problem_ = "field '" + one_line(path_to_open() + k, kMaxFieldInMessage) +
                 "': duplicate key (each key may appear once in an object)";
      return false;
    }
    key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    // nlohmann's message quotes the last token read, which may be a whole unterminated string.
    problem_ = one_line(e.what(), 300);
    syntax_error_ = true;
    return false;
  }
  bool syntax_error() const { return syntax_error_; }

 private:
  // Puts `v` where the parser is (the root, the next array element, or the pending key's value)
  // and returns where it now lives. Pointers into the document stay valid: a container only
  // grows while it is the innermost open one.
  json* put(json&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& parent = *open_.back();
    if (parent.is_array()) {
      auto& elements = parent.get_ref<json::array_t&>();
      elements.push_back(std::move(v));
      return &elements.back();
    }
    json& slot = parent.get_ref<json::object_t&>()[key_];
    slot = std::move(v);
    return &slot;
  }

  bool open(json&& container) {
    if (open_.size() >= kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
    open_.push_back(put(std::move(container)));
    return true;
  }

  bool close() {
    open_.pop_back();
    return true;
  }

  // "workload." or "events[3]." for the innermost open container (empty at the top level).
  std::string path_to_open() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      const json& parent = *open_[i];
      const json* child = open_[i + 1];
      if (parent.is_array()) {
        path += fmt::format("[{}]", child - &parent.get_ref<const json::array_t&>()[0]);
        continue;
      }
      for (const auto& [name, value] : parent.get_ref<const json::object_t&>())
        if (&value == child) path += (path.empty() ? "" : ".") + name;
    }
    return path.empty() ? path : path + ".";
  }

  json root_;
  std::vector<json*> open_;  // the containers being filled, outermost first
  string_t key_;             // the key whose value comes next, inside an object
  std::string problem_;
  bool too_deep_ = false;
  bool syntax_error_ = false;
};

}  // namespace

void fail(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("field '" + one_line(field, kMaxFieldInMessage) +
                              "': " + one_line(problem, kMaxProblemInMessage));
}

void release_json(json& j) noexcept {
  if (j.is_array()) {
    auto& elements = j.get_ref<json::array_t&>();
    for (json& element : elements) release_json(element);
    elements.clear();
  } else if (j.is_object()) {
    auto& members = j.get_ref<json::object_t&>();
    for (auto& member : members) release_json(member.second);
    members.clear();
  }
  j = nullptr;  // frees the now empty container: nothing left to move, so nothing allocated
}

json parse_json_text(std::string_view text, const std::string& source) {
  // nlohmann's lexer takes a NUL byte for the end of the input and would ignore what follows.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw std::invalid_argument(fmt::format(
        "'{}' is not valid JSON: a NUL byte at offset {} (is it a text file?)", source, nul));
  try {
    DocumentBuilder builder;
    const bool ok = json::sax_parse(text.data(), text.data() + text.size(), &builder,
                                    json::input_format_t::json, /*strict=*/true);
    if (ok) return builder.take_root();
    if (builder.too_deep())
      throw std::invalid_argument(
          fmt::format("'{}' nests arrays and objects {} levels deep; at most {} are accepted",
                      source, nesting_depth(text), kMaxJsonDepth));
    if (builder.syntax_error())
      throw std::invalid_argument("'" + source + "' is not valid JSON" +
                                  (text.empty() ? " (the file is empty)" : "") + ": " +
                                  builder.problem());
    throw std::invalid_argument("'" + source + "': " + builder.problem());
  } catch (const std::bad_alloc&) {
    // The builder has freed the partial document by now.
    throw std::runtime_error(not_enough_memory_to_read(source, text.size()));
  }
}

std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: break;
  }
  // Only scalars are dumped: a container may be megabytes long (or nested deep).
  // A document built by a caller (not parsed) may hold invalid UTF-8: replace it, never throw.
  const std::string text = one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 40);
  switch (v.type()) {
    case json::value_t::boolean: return "boolean " + text;
    case json::value_t::string: return "string " + text;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + text;
    default: return text;
  }
}

void require_object(const json& j, const std::string& what) {
  if (!j.is_object())
    throw std::invalid_argument(one_line(what, kMaxFieldInMessage) +
                                " must be a JSON object, got " + describe(j));
}

void check_known_fields(const json& obj, std::initializer_list<const char*> known,
                        const std::string& prefix) {
  check_known_fields(obj, std::vector<const char*>(known), prefix);
}

void check_known_fields(const json& obj, const std::vector<const char*>& known,
                        const std::string& prefix) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail(prefix + it.key(), "unknown field (accepted: " + list + ")");
  }
}

const json& require(const json& obj, const char* key, std::string_view prefix) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(std::string(prefix) + key, "required field is missing");
  return *it;
}

std::uint64_t as_u64(const json& v, const std::string& field) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0) fail(field, fmt::format("must not be negative, got {}", i));
    return static_cast<std::uint64_t>(i);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d < 0) fail(field, "must not be negative, got " + v.dump());
    if (std::isfinite(d) && d == std::floor(d) && d < 1.8e19) return static_cast<std::uint64_t>(d);
    fail(field, "expected an integer, got " + describe(v));
  }
  fail(field, "expected a non-negative integer, got " + describe(v));
}

u32 as_u32(const json& v, const std::string& field) {
  const std::uint64_t x = as_u64(v, field);
  if (x > 0xFFFFFFFFull) fail(field, fmt::format("does not fit in 32 bits: {}", x));
  return static_cast<u32>(x);
}

std::int32_t as_i32(const json& v, const std::string& field) {
  if (!v.is_number_integer()) fail(field, "expected an integer, got " + describe(v));
  const auto i = v.get<std::int64_t>();
  if (i < INT32_MIN || i > INT32_MAX) fail(field, "does not fit in 32 bits: " + v.dump());
  return static_cast<std::int32_t>(i);
}

double as_double(const json& v, const std::string& field) {
  if (!v.is_number()) fail(field, "expected a number, got " + describe(v));
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(field, "must be finite, got " + v.dump());
  return d;
}

bool as_bool(const json& v, const std::string& field) {
  if (!v.is_boolean()) fail(field, "expected true or false, got " + describe(v));
  return v.get<bool>();
}

std::string as_string(const json& v, const std::string& field) {
  if (!v.is_string()) fail(field, "expected a string, got " + describe(v));
  const auto& s = v.get_ref<const std::string&>();
  // The strings of these formats are names, printed in headers and on the terminal: a control
  // character (an escape sequence, a newline) would garble them.
  if (s.size() > kMaxStringBytes)
    fail(field, fmt::format("is {} bytes long; names are at most {}", s.size(), kMaxStringBytes));
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      fail(field, "must be printable text, got " + describe(v));
  return s;
}

std::vector<std::uint64_t> as_u64_list(const json& v, const std::string& field) {
  if (!v.is_array()) fail(field, "expected an array of non-negative integers, got " + describe(v));
  std::vector<std::uint64_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(as_u64(v[i], fmt::format("{}[{}]", field, i)));
  return out;
}

}  // namespace tilesched::sim::detail

namespace tilesched::sim {

nlohmann::json read_json_document(const std::string& path) {
  const std::string text = read_file(path);
  return detail::parse_json_text(text, path);
}

}  // namespace tilesched::sim
