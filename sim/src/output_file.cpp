#include "tilesched/sim/output_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tilesched::sim {

namespace {

// Temporary files not yet committed, for the signal handler to remove. Plain C strings in
// lock-free slots: a handler may only touch memory that needs no lock, and unlink() is
// async-signal-safe. More files open at once than slots only loses the clean-up for the extra
// ones.
constexpr std::size_t kPendingSlots = 64;
std::atomic<const char*> g_pending[kPendingSlots];
// The handler and a thread creating a temporary file: the handler may run on any thread while
// another one is between registering its temporary and creating it (the outputs are written on
// two threads), and would then remove the name before the file exists. So the handler first says
// the process is stopping, then waits until no thread is creating, and only then removes; a
// thread that sees the process stopping creates nothing. A creating thread blocks the signals
// while it creates, so the handler never runs on it and never waits for itself.
std::atomic<bool> g_stopping{false};
std::atomic<int> g_creating{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the signal handler may touch lock-free atomics only");

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void remove_pending_files_and_stop(int signal_number) {
  g_stopping.store(true);
  while (g_creating.load() != 0) {
  }
  for (auto& slot : g_pending)
    if (const char* path = slot.load()) ::unlink(path);
  // Die of the same signal, so the parent sees what stopped us (shell status 130/143).
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

// Installed once, and only where the program left the default action: a program (or test
// framework) with its own handler, or a shell that ignores SIGINT for background jobs, keeps it.
void install_signal_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const int signal_number : kCleanupSignals) {
      struct sigaction current {};
      if (::sigaction(signal_number, nullptr, &current) != 0) continue;
      if ((current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction cleanup {};
      cleanup.sa_handler = remove_pending_files_and_stop;
      sigemptyset(&cleanup.sa_mask);
      ::sigaction(signal_number, &cleanup, nullptr);
    }
  });
}

void register_pending(const char* path) {
  for (auto& slot : g_pending) {
    const char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, path)) return;
  }
}

void unregister_pending(const char* path) {
  for (auto& slot : g_pending) {
    const char* expected = path;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

std::string errno_text() {
  return std::strerror(errno);
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Large enough that write() and deflate() calls are few, small enough not to matter in memory.
constexpr std::size_t kFlushBytes = std::size_t(1) << 20;

}  // namespace

std::string compressed_path(const std::string& path, Compression compression) {
  return compression == Compression::Gzip ? path + ".gz" : path;
}

struct OutputFile::Impl {
  std::string path, tmp;
  int fd = -1;
  bool committed = false;
  std::string buffer;
  std::uint64_t appended = 0;
  bool gzip = false;
  z_stream zs{};
  std::vector<unsigned char> compressed;

  [[noreturn]] void fail(const std::string& what, const std::string& reason) const {
    throw std::runtime_error(fmt::format("cannot write '{}': {}: {}", path, what, reason));
  }

  void write_raw(const char* data, std::size_t size) {
    while (size > 0) {
      const ssize_t n = ::write(fd, data, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write failed", errno_text());
      }
      data += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  // Feeds `size` bytes to the compressor (all of them: zlib counts in 32 bits, so in pieces) and
  // writes what comes out; `finish` ends the gzip stream.
  void write_compressed(const char* data, std::size_t size, bool finish) {
    constexpr std::size_t kPiece = std::size_t(1) << 30;
    do {
      const std::size_t piece = std::min(size, kPiece);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
      zs.avail_in = static_cast<uInt>(piece);
      data += piece;
      size -= piece;
      const int flush = finish && size == 0 ? Z_FINISH : Z_NO_FLUSH;
      int rc = Z_OK;
      do {
        zs.next_out = compressed.data();
        zs.avail_out = static_cast<uInt>(compressed.size());
        rc = deflate(&zs, flush);
        if (rc == Z_STREAM_ERROR) fail("compression failed", zs.msg ? zs.msg : "zlib error");
        write_raw(reinterpret_cast<const char*>(compressed.data()),
                  compressed.size() - zs.avail_out);
      } while (zs.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
    } while (size > 0);
  }

  void flush(bool finish) {
    if (gzip)
      write_compressed(buffer.data(), buffer.size(), finish);
    else
      write_raw(buffer.data(), buffer.size());
    buffer.clear();
  }

  void discard() noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (!committed && !tmp.empty()) ::unlink(tmp.c_str());
    unregister_pending(tmp.c_str());
    if (gzip) deflateEnd(&zs);
    gzip = false;
  }
};

OutputFile::OutputFile(std::string path, Compression compression) : impl_(new Impl) {
  Impl& f = *impl_;
  f.path = std::move(path);
  if (f.path.empty()) throw std::runtime_error("cannot write a file with an empty path");
  install_signal_cleanup();
  // Unique per process and call, so two writers of the same path never share a temporary.
  static std::atomic<unsigned> serial{0};
  f.tmp = fmt::format("{}.tmp.{}.{}", f.path, ::getpid(), serial.fetch_add(1));
  // Registered before the file exists, and created with the cleanup signals blocked on this
  // thread and counted in g_creating (see the handler).
  sigset_t cleanup_signals, previous;
  sigemptyset(&cleanup_signals);
  for (const int signal_number : kCleanupSignals) sigaddset(&cleanup_signals, signal_number);
  ::pthread_sigmask(SIG_BLOCK, &cleanup_signals, &previous);
  g_creating.fetch_add(1);
  const bool stopping = g_stopping.load();
  if (!stopping) {
    register_pending(f.tmp.c_str());
    f.fd = ::open(f.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  g_creating.fetch_sub(1);
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // The process is stopping on a signal (another thread runs the handler): create nothing.
  if (stopping)
    for (;;) ::pause();
  if (f.fd < 0) {
    const std::string reason = errno_text();
    unregister_pending(f.tmp.c_str());
    f.tmp.clear();
    throw std::runtime_error(
        fmt::format("cannot write '{}': cannot create a temporary file in '{}': {}", f.path,
                    directory_of(f.path), reason));
  }
  f.buffer.reserve(kFlushBytes + 4096);
  if (compression == Compression::Gzip) {
    // 15 + 16: a gzip header and trailer rather than a bare zlib stream, so that gunzip, zcat
    // and Perfetto's UI read the file. Level 1: several times faster than the default for a few
    // per cent more bytes on this repetitive text.
    if (deflateInit2(&f.zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      f.discard();
      throw std::runtime_error(
          fmt::format("cannot write '{}': cannot start gzip compression", f.path));
    }
    f.gzip = true;
    f.compressed.resize(std::size_t(1) << 18);
  }
}

OutputFile::~OutputFile() {
  impl_->discard();
}

void OutputFile::append(std::string_view text) {
  Impl& f = *impl_;
  if (f.committed) throw std::logic_error("OutputFile::append after commit");
  f.buffer.append(text);
  f.appended += text.size();
  if (f.buffer.size() >= kFlushBytes) f.flush(false);
}

void OutputFile::commit() {
  Impl& f = *impl_;
  if (f.committed) return;
  f.flush(true);
  // Synced before the rename: otherwise a crash can leave the new name pointing at empty data.
  if (::fsync(f.fd) != 0) f.fail("fsync failed", errno_text());
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) f.fail("close failed", errno_text());
  if (std::rename(f.tmp.c_str(), f.path.c_str()) != 0) f.fail("rename failed", errno_text());
  f.committed = true;
  unregister_pending(f.tmp.c_str());
}

const std::string& OutputFile::path() const {
  return impl_->path;
}

std::uint64_t OutputFile::bytes_appended() const {
  return impl_->appended;
}

}  // namespace tilesched::sim
