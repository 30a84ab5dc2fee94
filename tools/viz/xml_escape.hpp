// Escaping text for HTML/SVG. Everything the charts print comes from files a user may have
// edited (device names, workload fields), so every piece of text goes through here.
#pragma once

#include <string>
#include <string_view>

namespace tilesched::viz {

// Replaces & < > " ' with entities and drops control characters XML 1.0 forbids, so the result
// is safe both as element text and inside a double- or single-quoted attribute.
std::string xml_escape(std::string_view text);

}  // namespace tilesched::viz
