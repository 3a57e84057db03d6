#pragma once
// JSON string escaping, once for every writer: the reports' JSON and the daemon's fast reply
// printer (which must match protobuf's output byte for byte, hence the angle-bracket option).

#include <string>
#include <string_view>

namespace ramguard {

enum class AngleBrackets { kKeep, kEscape };  // kEscape: "<" and ">" as \u003c and \u003e

// `text` as the inside of a JSON string (no quotes around it): bytes that are not valid UTF-8
// become "?", '"' and '\\' are escaped, \n \r \t keep their short forms, and the other control
// characters (C0, DEL, C1) become \u00XX, so the parsed string is the same and the bytes inert.
std::string escape_json(std::string_view text, AngleBrackets angle = AngleBrackets::kKeep);

// The same escaping appended to `out`, for `text` already known to be valid UTF-8 (the reply
// printer's hot path: no sanitising copy, no string of its own).
void append_json_escaped(std::string_view valid_text, AngleBrackets angle, std::string& out);

}  // namespace ramguard
