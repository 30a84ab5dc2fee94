// Exit codes of the tilesched command and the one exception that maps to a usage error. Every
// other exception reaching main is a runtime failure (exit 1); see main.cpp.
#pragma once

#include <stdexcept>

namespace tilesched::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a file could not be read, written or understood
inline constexpr int kExitUsage = 2;    // bad flags or bad flag values
inline constexpr int kExitDiffers = 3;  // `diff`: the two schedules differ
// `diff`: the traces are of different problems (lengths, heads, head_dim, mask, tile sizes)
inline constexpr int kExitDifferentProblems = 4;

// The user asked for something impossible on the command line.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tilesched::cli
