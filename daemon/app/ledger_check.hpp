#pragma once
// The ledger's startup check seen from the daemon: a salvage logged line by line at start, and
// `ramguardd --check-ledger DIR`, the same check and salvage offline under the same state lock.

#include <string>

#include "store/ledger_salvage.hpp"

namespace ramguard {

// A corrupt ledger was moved aside and salvaged: what came over and what did not, one line
// each, so the loss is on record without opening the old file.
void log_salvage(const SalvageReport& report);

// --check-ledger DIR: prints what it found; 0 when the ledger is usable (as found or salvaged).
int check_ledger_offline(const std::string& state_dir);

}  // namespace ramguard
