#include "xml_check.hpp"

#include <fmt/format.h>
#include <tinyxml2.h>

namespace tilesched::test {
namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;
using tinyxml2::XMLNode;

// tinyxml2 accepts a document fragment (several roots, text beside them); XML does not.
std::string root_problem(const XMLDocument& doc) {
  std::size_t roots = 0;
  for (const XMLNode* n = doc.FirstChild(); n; n = n->NextSibling()) {
    if (n->ToElement()) ++roots;
    if (n->ToText()) return fmt::format("text outside the root element: '{}'", n->Value());
  }
  if (roots != 1) return fmt::format("{} root elements, expected one", roots);
  return {};
}

std::string parse(std::string_view text, XMLDocument& doc) {
  if (doc.Parse(text.data(), text.size()) != tinyxml2::XML_SUCCESS) return doc.ErrorStr();
  return root_problem(doc);
}

std::size_t count_below(const XMLNode* parent, std::string_view name, std::string_view cls,
                        std::string_view child) {
  std::size_t count = 0;
  for (const XMLElement* e = parent->FirstChildElement(); e; e = e->NextSiblingElement()) {
    const char* c = e->Attribute("class");
    if (name == e->Name() && c && cls == c &&
        (child.empty() || e->FirstChildElement(std::string(child).c_str())))
      ++count;
    count += count_below(e, name, cls, child);
  }
  return count;
}

}  // namespace

std::string xml_problem(std::string_view text) {
  XMLDocument doc;
  return parse(text, doc);
}

std::size_t count_elements(std::string_view text, std::string_view name, std::string_view cls,
                           std::string_view child) {
  XMLDocument doc;
  if (!parse(text, doc).empty()) return 0;
  return count_below(&doc, name, cls, child);
}

}  // namespace tilesched::test
