#pragma once
// What a caller may read of other UIDs' work (control.peers_read). Root and TCP peers with
// the token read everything; under `own`, any other member of the socket's group reads only
// runs and reservations its UID owns. Changes (start, mark, end, claim, release) are
// owner-only whatever this says.

#include <cstdint>

#include "config/config.hpp"
#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/run_registry.hpp"

namespace ramguard::control {

// PERMISSION_DENIED naming both UIDs when the run is another UID's and the scope is `own`.
Status check_read(const ReadScope& scope, const RunLedger& ledger);

}  // namespace ramguard::control
