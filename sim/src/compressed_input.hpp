// Files the readers accept gzip-compressed (trace.json.gz, as `--gzip` writes them): recognised by
// their first bytes, not their name, so a renamed file reads the same.
#pragma once

#include <string>

namespace tilesched::sim::detail {

// `content` as it is, or decompressed when it starts with the gzip magic bytes. Throws
// std::runtime_error naming `source` when the compressed data is damaged or truncated, or when
// there is not enough memory for the decompressed text.
std::string decompress_if_gzip(std::string content, const std::string& source);

}  // namespace tilesched::sim::detail
