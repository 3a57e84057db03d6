#include "control/visibility.hpp"

#include <string>

namespace ramguard::control {

Status check_read(const ReadScope& scope, const RunLedger& ledger) {
  if (scope.covers(ledger.info.owner_uid)) return ok_status();
  return Error{"uid " + std::to_string(scope.uid) + " may not read run " + ledger.info.run_id +
                   ": it belongs to uid " + std::to_string(ledger.info.owner_uid) +
                   " (control.peers_read is own)",
               ErrorKind::kPermissionDenied};
}

}  // namespace ramguard::control
