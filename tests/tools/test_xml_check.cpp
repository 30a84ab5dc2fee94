// The checks the chart tests rely on must themselves reject broken markup and count what the
// tests look for.
#include <doctest/doctest.h>

#include "xml_check.hpp"

using tilesched::test::count_elements;
using tilesched::test::xml_problem;

TEST_CASE("xml_problem accepts well-formed documents") {
  CHECK(xml_problem("<a/>") == "");
  CHECK(xml_problem(
            "<!DOCTYPE html>\n<html><body x=\"1\" y='&amp;'>t &lt; u<br/></body></html>\n") == "");
  CHECK(xml_problem("<svg><title>a &#39;b&#x27;</title><!-- c --></svg>") == "");
}

TEST_CASE("xml_problem rejects broken markup") {
  CHECK(xml_problem("<a><b></a></b>") != "");  // crossed nesting
  CHECK(xml_problem("<a x=1/>") != "");        // unquoted attribute
  CHECK(xml_problem("<a x=\"1\" x=\"2\"/>") != "");
  CHECK(xml_problem("<a>1 < 2</a>") != "");
  CHECK(xml_problem("<a>unclosed") != "");
  CHECK(xml_problem("<a/><b/>") == "2 root elements, expected one");
  CHECK(xml_problem("text<a/>") == "text outside the root element: 'text'");
  CHECK(xml_problem("") != "");
}

TEST_CASE("count_elements counts elements by name and class, at any depth") {
  const char* doc =
      R"(<g><rect class="tile" x="1"/><rect class="legend"/><g><rect x="0" class="tile">)"
      R"(<title>t</title></rect></g><text class="tile"/></g>)";
  CHECK(count_elements(doc, "rect", "tile") == 2);
  CHECK(count_elements(doc, "rect", "tile", "title") == 1);
  CHECK(count_elements(doc, "rect", "legend") == 1);
  CHECK(count_elements(doc, "rect", "row") == 0);
  CHECK(count_elements("<g><rect class=\"tile\"/>", "rect", "tile") == 0);  // not well-formed
}
