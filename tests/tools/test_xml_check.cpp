// The checker the chart tests rely on must itself reject broken markup.
#include <doctest/doctest.h>

#include "xml_check.hpp"

using tilesched::test::count_elements;
using tilesched::test::xml_problem;

TEST_CASE("xml checker accepts well-formed documents") {
  CHECK(xml_problem("<a/>") == "");
  CHECK(xml_problem(
            "<!DOCTYPE html>\n<html><body x=\"1\" y='&amp;'>t &lt; u<br/></body></html>\n") == "");
  CHECK(xml_problem("<svg><title>a &#39;b&#x27;</title><!-- c --></svg>") == "");
}

TEST_CASE("xml checker rejects what a strict parser rejects") {
  CHECK(xml_problem("<a><b></a></b>") != "");  // crossed nesting
  CHECK(xml_problem("<a x=1/>") != "");        // unquoted attribute
  CHECK(xml_problem("<a x=\"1\" x=\"2\"/>") != "");
  CHECK(xml_problem("<a>&nbsp;</a>") != "");  // not an XML entity
  CHECK(xml_problem("<a>1 < 2</a>") != "");
  CHECK(xml_problem("<a>unclosed") != "");
  CHECK(xml_problem("<a/><b/>") != "");  // two roots
  CHECK(xml_problem("<a t=\"x<y\"/>") != "");
  CHECK(xml_problem("") != "");
}

TEST_CASE("count_elements counts start tags by class") {
  const char* doc =
      R"(<g><rect class="tile" x="1"/><rect class="legend"/><rect x="0" class="tile">)"
      R"(<title>t</title></rect><text class="tile"/></g>)";
  CHECK(count_elements(doc, "rect", "tile") == 2);
  CHECK(count_elements(doc, "rect", "legend") == 1);
  CHECK(count_elements(doc, "rect", "row") == 0);
}
