#include "metrics/exposition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace ramguard::exposition {
namespace {

// Backslash and newline as \\ and \n; a double quote as \" too inside a label value.
void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// Room write_value needs at most.
constexpr std::size_t kMaxValueChars = 32;

// Writes `value` at `at`, returns the end. Whole numbers (byte counts, mostly) below 2^53 in
// plain digits: faster than the shortest double form, and 1000000 rather than 1e+06. The rest
// in the shortest form that reads back exactly; -0 keeps its sign through it.
char* write_value(char* at, double value) {
  if (std::isnan(value)) return std::copy_n("NaN", 3, at);
  if (std::isinf(value)) return std::copy_n(value > 0 ? "+Inf" : "-Inf", 4, at);
  if (std::fabs(value) < 0x1p53 && value == std::trunc(value) && !std::signbit(value)) {
    return std::to_chars(at, at + kMaxValueChars, static_cast<std::int64_t>(value)).ptr;
  }
  return std::to_chars(at, at + kMaxValueChars, value).ptr;
}

}  // namespace

std::string render_labels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (!out.empty()) out += ',';
    out += name;
    out += "=\"";
    append_escaped(out, value, true);
    out += '"';
  }
  return out;
}

void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type) {
  out += "# HELP ";
  out += name;
  out += ' ';
  append_escaped(out, help, false);  // help text escapes only backslash and newline
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void append_sample(std::string& out, std::string_view name, std::string_view labels, double value) {
  append_line(out, name, {labels}, value);
}

void append_line(std::string& out, std::string_view name,
                 std::initializer_list<std::string_view> label_parts, double value) {
  std::size_t labels_size = 0;
  for (const std::string_view part : label_parts) labels_size += part.size();
  // Room made once, then filled: one capacity check per line instead of one per piece (a
  // scrape writes ~12,000 lines at a thousand targets).
  const std::size_t start = out.size();
  out.resize(start + name.size() + labels_size + 3 + kMaxValueChars + 1);
  char* at = out.data() + start;
  at = std::copy(name.begin(), name.end(), at);
  if (labels_size != 0) {
    *at++ = '{';
    for (const std::string_view part : label_parts) at = std::copy(part.begin(), part.end(), at);
    *at++ = '}';
  }
  *at++ = ' ';
  at = write_value(at, value);
  *at++ = '\n';
  out.resize(static_cast<std::size_t>(at - out.data()));
}

}  // namespace ramguard::exposition
