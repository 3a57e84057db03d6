#pragma once
// The commands' wire names, for error messages. Read from the schema's `command` oneof, not
// from the command table, so the codecs (and their fuzzers) need no handlers; a test holds the
// table to the same oneof.

#include <string>

namespace ramguard::control {

// "hello, runStart, ...": the commands as named on the wire, in the schema's order.
const std::string& command_names();

}  // namespace ramguard::control
