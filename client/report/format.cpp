#include "report/format.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "ramguard/base/verdict_rank.hpp"

namespace ramguard::report {

std::string format_unix_ms(std::int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) return "-";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string format_fixed(double value, int decimals) {
  if (!std::isfinite(value)) return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string escape_text(std::string_view raw) {
  const std::string text = sanitize_utf8(raw);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (const std::size_t n = control_length(text, i); n != 0) {
      out += visible_control(text, i);  // C0, DEL and C1 (U+009B is a CSI on some terminals)
      i += n - 1;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string escape_xml(std::string_view raw) {
  const std::string text = sanitize_utf8(raw);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      case '\t':  // allowed in XML, kept as references: no raw control byte in the file
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        // XML 1.0 forbids the other C0 controls even as references; DEL and C1 are discouraged.
        if (const std::size_t n = control_length(text, i); n != 0) {
          out.push_back('?');
          i += n - 1;
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

std::string escape_csv(std::string_view raw) {
  // One record per line and no raw control character: newlines and escapes as in the terminal
  // table ("\\n", "\\x1b"), then RFC 4180 quoting.
  const std::string text = escape_text(raw);
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"') out.push_back('"');
    out.push_back(ch);
  }
  out.push_back('"');
  return out;
}

std::string escape_markdown(std::string_view raw) {
  const std::string text = sanitize_utf8(raw);
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    switch (ch) {
      case '|':
        out += "\\|";
        break;
      case '[':  // no link or image made of a label: [x](javascript:...)
        out += "\\[";
        break;
      case ']':
        out += "\\]";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '`':
        out += "\\`";
        break;
      case '*':
        out += "\\*";
        break;
      case '_':
        out += "\\_";
        break;
      case '<':
        out += "&lt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
        out += "<br>";
        break;
      default:
        if (const std::size_t n = control_length(text, i); n != 0) {
          out.push_back(' ');
          i += n - 1;
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (char ch : text) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::map<std::string, std::string> sorted_labels(
    const google::protobuf::Map<std::string, std::string>& labels) {
  return {labels.begin(), labels.end()};
}

std::string labels_string(const google::protobuf::Map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : sorted_labels(labels)) {
    if (!out.empty()) out += ",";
    out += key + "=" + value;
  }
  return out;
}

std::string format_figure(std::string_view name, double value, bool binary) {
  if (name.ends_with("_bytes")) return format_bytes(value, binary);
  if (name.ends_with("_bytes_per_round")) return format_bytes(value, binary) + "/round";
  if (name.ends_with("_bytes_per_second")) return format_bytes(value, binary) + "/s";
  if (name.ends_with("_seconds")) return format_seconds(value);
  if (!std::isfinite(value)) return "?";
  // As the verdicts write them.
  if (name.ends_with("_copies")) return format_fixed(value, 2) + " model copies";
  if (name.ends_with("copies_per_round")) return format_fixed(value, 2) + " model copies/round";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

std::map<std::string, double> sorted_figures(const v1::Verdict& verdict) {
  return {verdict.figures().begin(), verdict.figures().end()};
}

const char* severity_name(v1::Severity severity) {
  switch (severity) {
    case v1::INFO:
      return "info";
    case v1::WARNING:
      return "warning";
    case v1::CRITICAL:
      return "critical";
    default:
      return "unspecified";
  }
}

const v1::Verdict* worst_verdict(const google::protobuf::RepeatedPtrField<v1::Verdict>& verdicts) {
  const auto worst =
      ramguard::worst_verdict(verdicts.begin(), verdicts.end(), [](const v1::Verdict& v) {
        return VerdictFacts{v.kind(), severity_name(v.severity()), v.passed(), v.cleared()};
      });
  return worst == verdicts.end() ? nullptr : &*worst;
}

std::string verdict_label(const v1::Verdict* verdict) {
  if (verdict == nullptr) return "-";
  std::string out = std::string(severity_name(verdict->severity())) + " " + verdict->kind();
  if (verdict->kind() == "release") {
    out += std::string(" (") +
           release_outcome(verdict->passed(), severity_name(verdict->severity()),
                           verdict->figures().contains("not_verified")) +
           ")";
  }
  if (verdict->cleared()) out += " (cleared)";
  return out;
}

std::string verdict_result(const v1::Verdict& v) {
  if (v.cleared()) return "cleared";
  if (v.kind() == "release")
    return release_outcome(v.passed(), severity_name(v.severity()),
                           v.figures().contains("not_verified"));
  return v.passed() ? "pass" : "fail";
}

std::string verdict_heading(const v1::Verdict& v) {
  return std::string("[") + severity_name(v.severity()) + "] " + v.kind() + " " + verdict_result(v);
}

}  // namespace ramguard::report
