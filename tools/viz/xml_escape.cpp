#include "viz/xml_escape.hpp"

namespace tilesched::viz {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto u = static_cast<unsigned char>(ch);
        if (u < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') break;  // not allowed in XML
        out += ch;
      }
    }
  }
  return out;
}

}  // namespace tilesched::viz
