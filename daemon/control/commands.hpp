#pragma once
// The protocol's commands, one row each: the handler that answers it and what the server needs
// to know to run it. A command added to proto/ramguard.proto gets a row here (commands.cpp),
// its handler in the Dispatcher, its checks in request_checks.cpp and its clients' calls; the
// names in error messages come from the schema, and a test holds this table to the schema's
// `command` oneof.

#include <span>
#include <string>

#include "control/command_names.hpp"
#include "ramguard.pb.h"
#include "ramguard/base/result.hpp"

namespace ramguard::control {

class Dispatcher;
struct CommandCall;  // the request, its caller and its reply (dispatcher.hpp)

struct CommandSpec {
  v1::Request::CommandCase command;
  // Fills the call's reply, or says why not (the request has passed check_request).
  Status (Dispatcher::*handler)(CommandCall& call) = nullptr;
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

}  // namespace ramguard::control
