#pragma once
// Text from clients stays data: what goes into a reply, a log line or a report is valid UTF-8,
// whatever bytes a client sent (protobuf refuses, and logs, a string field that is not).

#include <cstdint>
#include <string>
#include <string_view>

namespace ramguard {

// `text` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) written as the four characters \xNN,
// or as `replacement` when one is given (the reports print "?").
std::string valid_utf8(std::string_view text, std::string_view replacement = {});

// The byte length of the control character at text[i], 0 for anything else: 1 for C0
// (U+0000-U+001F) and DEL; 2 for C1 (U+0080-U+009F, e.g. U+009B, a one-character CSI some
// terminals obey, and U+0085, a line break) and U+061C; 3 for the Unicode line and paragraph
// separators (U+2028, U+2029) and the other bidirectional controls (U+200E, U+200F,
// U+202A-U+202E, U+2066-U+2069). A Unicode-aware reader starts a line at a separator or
// reorders the text after a bidi control, so raw, either could forge a line or hide a value.
std::size_t control_length(std::string_view text, std::size_t i);
// The code point of the control character at text[i] (control_length(text, i) != 0).
std::uint32_t control_code_point(std::string_view text, std::size_t i);
// That control character written visibly: "\x1b" for C0 and DEL, "\u009b" or "\u2028" for
// the others.
std::string visible_control(std::string_view text, std::size_t i);

}  // namespace ramguard
