#pragma once
// The TCP listener's shared secret, read from a file the operator controls.

#include <string>

#include "common/result.hpp"

namespace ramguard {

// The token without trailing whitespace; an error names the file and what is wrong.
Result<std::string> read_token_file(const std::string& path);

}  // namespace ramguard
