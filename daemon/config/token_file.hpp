#pragma once
// A shared secret read from a file the operator controls: the TCP listener's token, the fleet
// query endpoint's bearer token.

#include <string>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

// The token without trailing whitespace; an error names the file and what is wrong.
// `what` names the secret in errors.
Result<std::string> read_token_file(const std::string& path, std::string_view what = "TCP token");

}  // namespace ramguard
