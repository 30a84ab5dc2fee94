// Whole-file reading and atomic writing for the simulator's JSON files (workloads, traces, cost
// tables). Atomic so a tool killed half-way never leaves a truncated trace that another tool then
// misreads.
#pragma once

#include <string>

namespace tilesched::sim {

// Writes `content` to a temporary file in the same directory as `path`, then renames it over
// `path` (rename is atomic within one file system). Throws std::runtime_error naming the path and
// the reason on failure; the temporary file is removed.
void write_file_atomically(const std::string& path, const std::string& content);

// The whole file as bytes. Throws std::runtime_error naming the path when it is missing or
// unreadable.
std::string read_file(const std::string& path);

}  // namespace tilesched::sim
