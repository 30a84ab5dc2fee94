#include "tilesched/sim/io.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>

namespace tilesched::sim {

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  if (path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  // Unique per process and call, so two writers of the same path never share a temporary.
  static std::atomic<unsigned> serial{0};
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), serial.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error("cannot write '" + path + "': cannot create a temporary file in '" +
                             directory_of(path) + "': " + errno_text());
  auto fail = [&](const std::string& what) {
    const std::string reason = errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + what + ": " + reason);
  };
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // Flush before the rename: otherwise a crash can leave the new name pointing at empty data.
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    const std::string reason = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': close failed: " + reason);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write '" + path + "': rename failed: " + reason);
  }
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
  } catch (const std::bad_alloc&) {
    const std::uint64_t size =
        S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : content.size();
    std::string().swap(content);
    throw std::runtime_error(not_enough_memory_to_read(path, size));
  }
  return content;
}

}  // namespace tilesched::sim
