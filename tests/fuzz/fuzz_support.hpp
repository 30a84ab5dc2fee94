// What every fuzz target checks: an input is either accepted or rejected the documented way
// (std::invalid_argument or std::runtime_error, one line). Any other exception, a failed check,
// a crash or a sanitizer report is a finding: the target aborts and libFuzzer keeps the input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tilesched::fuzz {

[[noreturn]] inline void finding(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz finding: %s %s\n", what, detail.c_str());
  std::abort();
}

inline void require(bool condition, const char* what) {
  if (!condition) finding(what);
}

// Whether `text` is well-formed UTF-8 (lead bytes followed by their continuation bytes).
inline bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto u = static_cast<unsigned char>(text[i]);
    const std::size_t length = u < 0x80             ? 1
                               : (u & 0xE0) == 0xC0 ? 2
                               : (u & 0xF0) == 0xE0 ? 3
                               : (u & 0xF8) == 0xF0 ? 4
                                                    : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k)
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    i += length;
  }
  return true;
}

// Runs `body`; rejections are fine when they come as the readers promise.
template <class Body>
void expect_accept_or_clean_rejection(Body&& body) {
  const auto check_message = [](const char* message) {
    const std::string_view m(message);
    if (m.empty() || m.find('\n') != std::string_view::npos || m.size() > 2000 || !is_utf8(m))
      finding(
          "a rejection message that is empty, longer than 2000 bytes, not one line or not "
          "UTF-8:",
          std::string(m.substr(0, 300)));
  };
  try {
    body();
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
  } catch (const std::runtime_error& e) {
    check_message(e.what());
  }
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Draws values from the fuzzer's bytes, front to back; zeros once they run out.
class ByteSource {
 public:
  ByteSource(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <class T>
  T take() {
    T value{};
    const std::size_t n = std::min(sizeof(T), size_ - used_);
    std::memcpy(&value, data_ + used_, n);
    used_ += n;
    return value;
  }
  // A value in [lo, hi], small values as likely as large ones in log scale, so that both tiny
  // problems and the 32-bit edges come up.
  std::uint32_t take_in(std::uint32_t lo, std::uint32_t hi) {
    const auto bits = take<std::uint8_t>() % 33;
    const std::uint64_t raw =
        take<std::uint32_t>() & ((bits == 32) ? 0xFFFFFFFFull : ((1ull << bits) - 1));
    return lo + static_cast<std::uint32_t>(raw % (std::uint64_t(hi) - lo + 1));
  }
  bool empty() const { return used_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t used_ = 0;
};

}  // namespace tilesched::fuzz
