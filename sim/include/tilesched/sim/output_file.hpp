// Output files written as streams. Text goes into a buffer and out to disk in large blocks,
// optionally gzip-compressed, so that writing a million-tile trace needs a few MiB of memory
// rather than the whole document. The file is written to a temporary name in the same directory
// and renamed over the target only when complete (commit), so a reader never sees half a file;
// one that is abandoned (an exception, or SIGINT/SIGTERM) leaves no temporary file behind either.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace tilesched::sim {

// Where formatted text goes: a file (OutputFile) or a string (StringSink, for tests and small
// pages).
class TextSink {
 public:
  virtual ~TextSink() = default;
  virtual void append(std::string_view text) = 0;
};

// fmt::format into a sink, without a temporary std::string. Writers of millions of lines format
// into one reused fmt::memory_buffer with FMT_COMPILE instead: several times faster.
template <class... T>
void print_to(TextSink& sink, fmt::format_string<T...> format, T&&... args) {
  fmt::memory_buffer buffer;
  fmt::format_to(fmt::appender(buffer), format, std::forward<T>(args)...);
  sink.append(std::string_view(buffer.data(), buffer.size()));
}

class StringSink final : public TextSink {
 public:
  explicit StringSink(std::string& target) : target_(target) {}
  void append(std::string_view text) override { target_.append(text); }

 private:
  std::string& target_;
};

enum class Compression { None, Gzip };

// `path` with ".gz" appended when compressed: the name every writer gives a gzip file.
std::string compressed_path(const std::string& path, Compression compression);

// Told how far a long write has come: `done` of `total` items (events, tiles).
using ProgressCallback = std::function<void(std::uint64_t done, std::uint64_t total)>;

class OutputFile final : public TextSink {
 public:
  // Creates the temporary file next to `path`. Throws std::runtime_error naming `path` and the
  // directory when it cannot.
  explicit OutputFile(std::string path, Compression compression = Compression::None);
  // Without commit(): the temporary file is removed and `path` is left as it was.
  ~OutputFile() override;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void append(std::string_view text) override;

  // Writes what is buffered, finishes the compressed stream, syncs the data to disk and renames
  // the temporary file over `path`. Throws std::runtime_error naming `path` and the reason.
  void commit();

  const std::string& path() const;
  std::uint64_t bytes_appended() const;  // text given to append(), before compression

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilesched::sim
