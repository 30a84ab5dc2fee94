// Whole-file reading and atomic writing for the simulator's JSON files (workloads, traces, cost
// tables). Atomic so a tool killed half-way never leaves a truncated trace that another tool then
// misreads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace tilesched::sim {

// Writes `content` to a temporary file in the same directory as `path`, then renames it over
// `path` (rename is atomic within one file system). Throws std::runtime_error naming the path and
// the reason on failure; the temporary file is removed. An OutputFile (output_file.hpp) streams.
void write_file_atomically(const std::string& path, const std::string& content);

// The whole file as bytes, decompressed when it is gzip data (trace.json.gz). Throws
// std::runtime_error naming the path when it is missing, unreadable, a directory or a device, not
// valid gzip data, or too large for the memory (not_enough_memory_to_read). A pipe (e.g.
// `<(command)`) is read to its end.
std::string read_file(const std::string& path);

// "not enough memory to read '<path>' (<size>)": what every reader says when an allocation fails
// while it reads, parses or converts a file of `bytes` bytes.
std::string not_enough_memory_to_read(const std::string& path, std::uint64_t bytes);

// The JSON document in the file at `path`, read (read_file) and parsed as the workload, trace and
// cost readers parse theirs: arrays and objects nested at most 64 deep, each key once per object.
// For the tool's own formats (suite results, trace packs). std::invalid_argument naming the file:
// "'<path>' is not valid JSON: ...", "'<path>' nests arrays and objects N levels deep; ...",
// "'<path>': field 'runs[0].tiles': duplicate key ..."; std::runtime_error as read_file, or
// not_enough_memory_to_read.
nlohmann::json read_json_document(const std::string& path);

}  // namespace tilesched::sim
