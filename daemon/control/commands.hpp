#pragma once
// The protocol's commands, one row each: what the server needs to know about a command beyond
// its handler (Dispatcher::handle). A command added to proto/ramguard.proto gets a row here, a
// case in the dispatcher and its clients' calls; the names in error messages come from the
// schema, and a test holds this table to the schema's `command` oneof.

#include <span>
#include <string>

#include "ramguard.pb.h"

namespace ramguard::control {

struct CommandSpec {
  v1::Request::CommandCase command;
  // Replies that grow with the ledger (a long run's status is megabytes of JSON, tens to
  // hundreds of milliseconds to encode): encoded off the event loop.
  bool big_reply = false;
  // What the handler fetches before it can answer (RequestHandler::prepare): an admission's
  // node and cgroup caps and fleet history, a report's or compare's stored rows, a mark's
  // census's placement in the process's mappings (read while the client waits for the reply).
  enum class Prepare { kNone, kAdmission, kStoredReads, kCensusPlacement } prepare = Prepare::kNone;
};

std::span<const CommandSpec> command_table();
// The row of `command`; nullptr for COMMAND_NOT_SET or a command without one.
const CommandSpec* command_spec(v1::Request::CommandCase command);
// "hello, runStart, ...": the commands as named on the wire, in table order.
const std::string& command_names();

}  // namespace ramguard::control
