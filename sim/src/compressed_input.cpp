#include "compressed_input.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace tilesched::sim::detail {

namespace {

bool is_gzip(const std::string& content) {
  return content.size() >= 2 && static_cast<unsigned char>(content[0]) == 0x1f &&
         static_cast<unsigned char>(content[1]) == 0x8b;
}

struct Inflater {
  z_stream zs{};
  Inflater() {
    // 15 + 32: accept a gzip (or zlib) header, whichever the stream has.
    if (inflateInit2(&zs, 15 + 32) != Z_OK) throw std::bad_alloc();
  }
  ~Inflater() { inflateEnd(&zs); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

std::string decompress_if_gzip(std::string content, const std::string& source) {
  if (!is_gzip(content)) return content;
  try {
    Inflater in;
    std::string text;
    // The trailer's size (modulo 4 GiB) is only a hint for the first allocation.
    const auto* tail = reinterpret_cast<const unsigned char*>(content.data() + content.size() - 4);
    const std::uint32_t hint = content.size() >= 18
                                   ? (std::uint32_t(tail[0]) | std::uint32_t(tail[1]) << 8 |
                                      std::uint32_t(tail[2]) << 16 | std::uint32_t(tail[3]) << 24)
                                   : 0;
    text.resize(std::max<std::size_t>(hint, content.size() * 4) + 1);
    const auto* begin = reinterpret_cast<const Bytef*>(content.data());
    const auto consumed = [&] { return static_cast<std::size_t>(in.zs.next_in - begin); };
    const auto refill = [&] {
      in.zs.avail_in =
          static_cast<uInt>(std::min<std::size_t>(content.size() - consumed(), UINT32_MAX));
    };
    in.zs.next_in = const_cast<Bytef*>(begin);
    refill();
    std::size_t produced = 0;
    for (;;) {
      if (produced == text.size()) text.resize(text.size() * 2);
      in.zs.next_out = reinterpret_cast<Bytef*>(text.data() + produced);
      in.zs.avail_out =
          static_cast<uInt>(std::min<std::size_t>(text.size() - produced, UINT32_MAX));
      const uInt space = in.zs.avail_out;
      const int rc = inflate(&in.zs, Z_NO_FLUSH);
      produced += space - in.zs.avail_out;
      if (rc == Z_STREAM_END) {
        // Several gzip members one after another (`cat a.gz b.gz`) are one file to gunzip.
        if (consumed() == content.size()) break;
        inflateReset(&in.zs);
        refill();
        continue;
      }
      if (rc == Z_MEM_ERROR) throw std::bad_alloc();
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw std::runtime_error(fmt::format("cannot read '{}': damaged gzip data ({})", source,
                                             in.zs.msg ? in.zs.msg : "zlib error"));
      if (in.zs.avail_in == 0) {
        // All input given and room left for output, yet the stream has not ended.
        if (consumed() == content.size() && in.zs.avail_out > 0)
          throw std::runtime_error(fmt::format(
              "cannot read '{}': the gzip data ends early (a truncated file?)", source));
        refill();
      }
    }
    text.resize(produced);
    return text;
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(fmt::format(
        "not enough memory to decompress '{}' ({} compressed bytes)", source, content.size()));
  }
}

}  // namespace tilesched::sim::detail
