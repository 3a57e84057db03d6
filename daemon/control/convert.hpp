#pragma once
// Daemon values to protocol messages. One direction only: the daemon's types never depend on
// the protocol.

#include "ramguard.pb.h"
#include "runs/ledger.hpp"

namespace ramguard::control {

std::int64_t unix_ms(const Instant& at);
void to_proto(const MemoryReading& reading, v1::Reading& out);
void to_proto(const Verdict& verdict, const std::string& run_id, v1::Verdict& out);
// The whole run as status/report show it; floors and gaps come from the ledger.
void to_proto(const RunLedger& ledger, v1::RunStatus& out);

}  // namespace ramguard::control
