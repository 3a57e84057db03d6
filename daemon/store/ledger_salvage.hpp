#pragma once
// A ledger SQLite can no longer use is moved aside, never deleted, and what can still be read
// of it is copied into a fresh ledger, so a garbled page costs the rows on it, not every run:
//   1. <state_dir>/ramguard.db (with its -wal and -shm) is renamed
//      ramguard.db.corrupt-<UTC time>, beside it;
//   2. a fresh ledger is created;
//   3. runs, then their labels, scopes, marks, phases, boundaries, verdicts, verdict figures
//      and samples (read run by run, so a bad page stops one run's rows, not a table's), and
//      reservations are copied row by row; a row that cannot be read or stored is counted.
// SQLite's .recover is not in the library (Debian 12's libsqlite3 3.40 lacks sqlite3_recover),
// so this reads what ordinary queries still can.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ramguard/base/result.hpp"
#include "store/store.hpp"

namespace ramguard {

struct SalvageReport {
  struct Table {
    std::string name;
    std::uint64_t copied = 0;
    std::uint64_t refused = 0;     // read but not stored (e.g. a mark whose run was lost)
    std::uint64_t unreadable = 0;  // reads that stopped early (each may hide several rows)
  };
  std::string reason;  // why the file was unusable
  std::filesystem::path moved_to;
  std::vector<Table> tables;
  std::vector<std::string> losses;  // the first read errors, for the log (at most 20)

  std::uint64_t copied(const std::string& table) const;
  bool lossless() const;
  std::string summary() const;  // one line per table
};

// Moves `<state_dir>/ramguard.db` aside and salvages it into a fresh one (the caller holds the
// state lock). Errors: the file could not be moved, or the fresh ledger not created or written
// (the fresh file is then removed and the old one put back where it was).
Result<SalvageReport> salvage_ledger(const std::filesystem::path& state_dir,
                                     const std::string& reason,
                                     std::chrono::system_clock::time_point now);

// Opens the ledger of `state_dir`; an unusable one (check_ledger_file) is salvaged first and
// `salvaged` filled. Whatever else Store::open refuses is returned as its error.
Result<std::unique_ptr<Store>> open_or_salvage(const std::filesystem::path& state_dir,
                                               StoreOptions options,
                                               std::optional<SalvageReport>& salvaged);

}  // namespace ramguard
