// Runs a fuzz target's body over files, without libFuzzer: every input in the seed corpus and
// every input a fuzzer once found a problem with (tests/fuzz/regressions/<target>/) becomes a
// test of the CPU suite, built by any compiler. Arguments: files or directories (read one level
// deep). A finding aborts, as under the fuzzer.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tilesched/sim/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::string> inputs_under(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  if (!S_ISDIR(st.st_mode)) return {path};
  std::vector<std::string> files;
  if (DIR* dir = ::opendir(path.c_str())) {
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      const std::string file = path + "/" + name;
      if (name[0] != '.' && ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        files.push_back(file);
    }
    ::closedir(dir);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> files = inputs_under(argv[i]);
    if (files.empty()) {
      std::fprintf(stderr, "no inputs at '%s'\n", argv[i]);
      return 1;
    }
    for (const std::string& file : files) {
      const std::string bytes = tilesched::sim::read_file(file);
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++count;
    }
  }
  std::printf("ran %zu inputs\n", count);
  return count > 0 ? 0 : 1;
}
