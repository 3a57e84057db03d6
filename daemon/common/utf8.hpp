#pragma once
// Text from clients stays data: what goes into a reply, a log line or a report is valid UTF-8,
// whatever bytes a client sent (protobuf refuses, and logs, a string field that is not).

#include <string>
#include <string_view>

namespace ramguard {

// `text` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) written as the four characters \xNN,
// or as `replacement` when one is given (the reports print "?").
std::string valid_utf8(std::string_view text, std::string_view replacement = {});

}  // namespace ramguard
