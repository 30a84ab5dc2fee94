#include "xml_check.hpp"

#include <set>
#include <vector>

namespace tilesched::test {
namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}
bool space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

struct Parser {
  std::string_view s;
  std::size_t i = 0;
  std::string error;

  bool fail(const std::string& what) {
    if (error.empty()) error = what + " at offset " + std::to_string(i);
    return false;
  }
  void skip_space() {
    while (i < s.size() && space(s[i])) ++i;
  }
  bool starts(std::string_view p) const { return s.substr(i, p.size()) == p; }

  bool name(std::string& out) {
    if (i >= s.size() || !name_start(s[i])) return fail("expected a name");
    const std::size_t b = i;
    while (i < s.size() && name_char(s[i])) ++i;
    out = std::string(s.substr(b, i - b));
    return true;
  }

  // At '&': a predefined entity or a character reference.
  bool entity() {
    const std::size_t semi = s.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) return fail("unterminated entity");
    const std::string_view e = s.substr(i + 1, semi - i - 1);
    static const std::set<std::string_view> named = {"amp", "lt", "gt", "quot", "apos"};
    bool ok = named.count(e) > 0;
    if (!ok && e.size() >= 2 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      ok = e.size() > (hex ? 2u : 1u);
      for (std::size_t k = hex ? 2 : 1; k < e.size() && ok; ++k) {
        const char c = e[k];
        ok = (c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
      }
    }
    if (!ok) return fail("unknown entity &" + std::string(e) + ";");
    i = semi + 1;
    return true;
  }

  bool skip_past(std::string_view end, const char* what) {
    const std::size_t p = s.find(end, i);
    if (p == std::string_view::npos) return fail(std::string("unterminated ") + what);
    i = p + end.size();
    return true;
  }

  // Comments, processing instructions and the doctype, which may appear outside the root.
  bool misc() {
    if (starts("<!--")) return skip_past("-->", "comment");
    if (starts("<?")) return skip_past("?>", "processing instruction");
    if (starts("<!DOCTYPE") || starts("<!doctype")) return skip_past(">", "doctype");
    return false;
  }

  bool start_tag(std::vector<std::string>& stack) {
    ++i;  // '<'
    std::string tag;
    if (!name(tag)) return false;
    std::set<std::string> attributes;
    while (true) {
      const std::size_t before = i;
      skip_space();
      if (i >= s.size()) return fail("unterminated start tag <" + tag);
      if (starts("/>")) {
        i += 2;
        return true;
      }
      if (s[i] == '>') {
        ++i;
        stack.push_back(tag);
        return true;
      }
      if (i == before) return fail("expected space before attribute in <" + tag);
      std::string attr;
      if (!name(attr)) return false;
      if (!attributes.insert(attr).second) return fail("duplicate attribute " + attr);
      skip_space();
      if (i >= s.size() || s[i] != '=') return fail("expected = after attribute " + attr);
      ++i;
      skip_space();
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return fail("unquoted attribute " + attr);
      const char quote = s[i++];
      while (i < s.size() && s[i] != quote) {
        if (s[i] == '<') return fail("'<' in attribute " + attr);
        if (s[i] == '&') {
          if (!entity()) return false;
        } else {
          ++i;
        }
      }
      if (i >= s.size()) return fail("unterminated attribute " + attr);
      ++i;
    }
  }

  bool end_tag(std::vector<std::string>& stack) {
    i += 2;
    std::string tag;
    if (!name(tag)) return false;
    skip_space();
    if (i >= s.size() || s[i] != '>') return fail("malformed end tag </" + tag);
    ++i;
    if (stack.empty() || stack.back() != tag)
      return fail("end tag </" + tag + "> does not match <" +
                  (stack.empty() ? std::string("nothing") : stack.back()) + ">");
    stack.pop_back();
    return true;
  }

  bool document() {
    while (true) {
      skip_space();
      if (!misc()) break;
      if (!error.empty()) return false;
    }
    if (i >= s.size() || s[i] != '<' || !name_start(s.size() > i + 1 ? s[i + 1] : ' '))
      return fail("expected the root element");
    std::vector<std::string> stack;
    if (!start_tag(stack)) return false;
    while (!stack.empty()) {
      if (i >= s.size()) return fail("unclosed element <" + stack.back() + ">");
      if (s[i] == '<') {
        if (starts("</")) {
          if (!end_tag(stack)) return false;
        } else if (starts("<![CDATA[")) {
          if (!skip_past("]]>", "CDATA section")) return false;
        } else if (starts("<!--") || starts("<?")) {
          misc();
          if (!error.empty()) return false;
        } else if (!start_tag(stack)) {
          return false;
        }
      } else if (s[i] == '&') {
        if (!entity()) return false;
      } else {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 && !space(s[i])) return fail("control character in text");
        ++i;
      }
    }
    while (true) {
      skip_space();
      if (i >= s.size()) return true;
      if (!misc()) return fail("content after the root element");
      if (!error.empty()) return false;
    }
  }
};

}  // namespace

std::string xml_problem(std::string_view text) {
  Parser p;
  p.s = text;
  p.document();
  return p.error;
}

std::size_t count_elements(std::string_view text, std::string_view name, std::string_view cls) {
  const std::string open = "<" + std::string(name) + " ";
  const std::string attr = "class=\"" + std::string(cls) + "\"";
  std::size_t count = 0;
  for (std::size_t p = text.find(open); p != std::string_view::npos; p = text.find(open, p + 1)) {
    const std::size_t end = text.find('>', p);
    if (text.substr(p, end - p).find(attr) != std::string_view::npos) ++count;
  }
  return count;
}

}  // namespace tilesched::test
