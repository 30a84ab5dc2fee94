#include "tilesched/sim/io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

#include "compressed_input.hpp"
#include "tilesched/sim/output_file.hpp"

namespace tilesched::sim {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  OutputFile file(path);
  file.append(content);
  file.commit();
}

std::string not_enough_memory_to_read(const std::string& path, std::uint64_t bytes) {
  const double mib = double(bytes) / (1024.0 * 1024.0);
  char size[64];
  if (mib >= 1)
    std::snprintf(size, sizeof size, "%.1f MiB", mib);
  else
    std::snprintf(size, sizeof size, "%llu bytes", static_cast<unsigned long long>(bytes));
  return "not enough memory to read '" + path + "' (" + size + ")";
}

std::string read_file(const std::string& path) {
  // O_NONBLOCK only for the open itself: a FIFO without a writer would otherwise block forever
  // (it then reads as empty); reads below block as usual.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error("cannot read '" + path + "': " + errno_text());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw std::runtime_error("cannot read '" + path + "': " + errno_text());
  if (S_ISDIR(st.st_mode))
    throw std::runtime_error("cannot read '" + path + "': it is a directory, not a file");
  // A device such as /dev/zero never ends; pipes and sockets do.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode))
    throw std::runtime_error("cannot read '" + path + "': not a regular file");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    throw std::runtime_error("cannot read '" + path + "': " + errno_text());

  std::string content;
  try {
    if (S_ISREG(st.st_mode)) content.reserve(static_cast<std::size_t>(st.st_size));
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error("cannot read '" + path + "': " + errno_text());
      }
      content.append(buffer, static_cast<std::size_t>(n));
    }
    // A gzip file (trace.json.gz) is read whole, then inflated in memory.
    content = detail::decompress_if_gzip(std::move(content), path);
  } catch (const std::bad_alloc&) {
    const std::uint64_t size =
        S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : content.size();
    std::string().swap(content);
    throw std::runtime_error(not_enough_memory_to_read(path, size));
  }
  return content;
}

}  // namespace tilesched::sim
