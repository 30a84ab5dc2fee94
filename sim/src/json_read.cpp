#include "json_read.hpp"

#include <cmath>
#include <stdexcept>

#include "tilesched/sim/io.hpp"

namespace tilesched::sim::detail {

void fail(const std::string& field, const std::string& problem) {
  throw std::invalid_argument("field '" + field + "': " + problem);
}

json parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument("'" + path + "' is not valid JSON: " + e.what());
  }
}

std::string describe(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "boolean " + text;
    case json::value_t::string: return "string " + text;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + text;
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return text;
  }
}

void require_object(const json& j, const std::string& what) {
  if (!j.is_object())
    throw std::invalid_argument(what + " must be a JSON object, got " + describe(j));
}

void check_known_fields(const json& obj, std::initializer_list<const char*> known,
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
    if (i < 0) fail(field, "must not be negative, got " + std::to_string(i));
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
  if (x > 0xFFFFFFFFull) fail(field, "does not fit in 32 bits: " + std::to_string(x));
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
  return v.get<std::string>();
}

std::vector<std::uint64_t> as_u64_list(const json& v, const std::string& field) {
  if (!v.is_array()) fail(field, "expected an array of non-negative integers, got " + describe(v));
  std::vector<std::uint64_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back(as_u64(v[i], field + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace tilesched::sim::detail
