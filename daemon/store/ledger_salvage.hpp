#pragma once
// A ledger SQLite can no longer use is moved aside, never deleted, and what can still be read
// of it is copied into a fresh ledger, so a garbled page costs the rows on it, not every run:
//   1. <state_dir>/ramguard.db (with its -wal and -shm) is renamed
//      ramguard.db.corrupt-<UTC time>, beside it;
//   2. a fresh ledger is created;
//   3. reservations, then runs, then their labels, scopes, marks, phases, boundaries, verdicts,
//      verdict figures, samples and censuses (read run by run, so a bad page stops one run's
//      rows, not a table's) are copied row by row as SQL queries still read them;
//   4. what they could not read is read page by page (ledger_salvage_pages.hpp): a garbled
//      header, a file cut short and zeroed pages cost the rows on the bad pages only.
// Another application's database is moved aside and nothing of it is imported.

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
    std::uint64_t copied = 0;      // read by SQL queries
    std::uint64_t recovered = 0;   // read page by page only
    std::uint64_t refused = 0;     // read but not stored (e.g. a mark whose run was lost)
    std::uint64_t unreadable = 0;  // SQL reads that stopped early (each may hide several rows)
    bool complete = false;         // every row it held was read (by SQL or page by page)
  };
  // What page-level recovery found in the file.
  struct Pages {
    bool read = false;
    bool header_sane = false;  // else the page size was found by probing
    bool schema_read = false;  // sqlite_schema named the ledger's tables
    std::uint32_t page_size = 0;
    std::uint32_t page_count = 0;     // whole pages in the file (with its log: at the last commit)
    std::uint32_t wal_pages = 0;      // of them, read from the write-ahead log
    std::uint32_t missing_pages = 0;  // the header counts more: the file was cut short
    std::uint32_t tree_pages = 0;     // reached from a root and read
    std::uint32_t bad_pages = 0;      // a tree's page that was unreadable or past the end
    std::uint32_t bad_cells = 0;      // cells of read pages that did not decode or fit
    std::uint32_t free_pages = 0;
    std::uint32_t overflow_pages = 0;
    std::uint32_t orphan_pages = 0;       // b-tree leaves no tree reached
    std::uint32_t unaccounted_pages = 0;  // neither b-tree, free nor overflow: garbled or zeroed
    std::uint64_t ambiguous_records = 0;  // fit two tables' shapes: not imported
  };
  std::string reason;  // why the file was unusable
  std::filesystem::path moved_to;
  bool foreign = false;  // another application's database: nothing imported
  std::vector<Table> tables;
  Pages pages;
  std::vector<std::string> losses;  // the first read errors, for the log (at most 20)

  std::uint64_t copied(const std::string& table) const;  // by SQL or page by page
  const Table* table(const std::string& name) const;
  bool lossless() const;
  // Whether the runs and reservations the old file held are all known; when not, admission
  // cannot know what was reserved (Admission::hold).
  bool reservations_known() const;
  std::string unknown_text() const;  // what is not known, for the log and admission's reason
  std::string summary() const;       // one line per table, then the pages
};

// Moves `<state_dir>/ramguard.db` aside and salvages it into a fresh one (the caller holds the
// state lock). Errors: the file could not be moved, or the fresh ledger not created or written
// (the fresh file is then removed and the old one put back where it was).
Result<SalvageReport> salvage_ledger(const std::filesystem::path& state_dir,
                                     const std::string& reason, bool foreign,
                                     std::chrono::system_clock::time_point now);

// Opens the ledger of `state_dir`; an unusable one (check_ledger_file) is salvaged first and
// `salvaged` filled; `emptied` is set when the file was 0 bytes long (what it held is unknown).
// Whatever else Store::open refuses is returned as its error.
Result<std::unique_ptr<Store>> open_or_salvage(const std::filesystem::path& state_dir,
                                               StoreOptions options,
                                               std::optional<SalvageReport>& salvaged,
                                               bool* emptied = nullptr);

}  // namespace ramguard
