#include "ramguard/base/json_escape.hpp"

#include <cstdio>

#include "ramguard/base/utf8.hpp"

namespace ramguard {

std::string escape_json(std::string_view raw, AngleBrackets angle) {
  const std::string text = valid_utf8(raw, "?");
  std::string out;
  out.reserve(text.size());
  append_json_escaped(text, angle, out);
  return out;
}

void append_json_escaped(std::string_view text, AngleBrackets angle, std::string& out) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '<':
        out += angle == AngleBrackets::kEscape ? "\\u003c" : "<";
        break;
      case '>':
        out += angle == AngleBrackets::kEscape ? "\\u003e" : ">";
        break;
      default:
        if (const std::size_t n = control_length(text, i); n != 0) {
          char buf[16];
          std::snprintf(buf, sizeof buf, "\\u%04x",
                        static_cast<unsigned>(control_code_point(text, i)));
          out += buf;
          i += n - 1;
        } else {
          out.push_back(ch);
        }
    }
  }
}

}  // namespace ramguard
