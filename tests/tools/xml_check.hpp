// XML checks for the chart tests, on tinyxml2: the SVG charts and the HTML page must parse as XML
// (browsers forgive broken markup silently; other tools that read SVG do not).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tilesched::test {

// Empty when `text` is well-formed XML with exactly one root element (optionally preceded by a
// <!DOCTYPE>, comments and whitespace); otherwise the parser's description of the first problem.
std::string xml_problem(std::string_view text);

// Elements named `name` whose class attribute is `cls`, anywhere in the document, that have a
// child element named `child` when one is given. 0 when `text` is not well-formed.
std::size_t count_elements(std::string_view text, std::string_view name, std::string_view cls,
                           std::string_view child = {});

}  // namespace tilesched::test
