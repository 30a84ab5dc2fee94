// A small XML well-formedness checker for the tests: the SVG charts and the HTML page must parse
// as XML (browsers forgive broken markup silently; other tools that read SVG do not).
#pragma once

#include <string>
#include <string_view>

namespace tilesched::test {

// Empty when `text` is one well-formed XML element (optionally preceded by a <!DOCTYPE>,
// comments and whitespace); otherwise the first problem and its byte offset.
std::string xml_problem(std::string_view text);

// Number of start tags (<name ...> or <name .../>) named `name` whose class attribute is `cls`.
std::size_t count_elements(std::string_view text, std::string_view name, std::string_view cls);

}  // namespace tilesched::test
