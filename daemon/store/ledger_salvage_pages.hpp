#pragma once
// Page-level recovery for a ledger's salvage (ledger_salvage.hpp): what SQL queries could not
// read of the moved-aside file is read page by page (sqlite_pages.hpp) and stored in the fresh
// ledger. With sqlite_schema readable, each ledger table's b-tree is walked from its root page;
// a page it cannot read makes the table incomplete, and the leaf pages no tree reaches are then
// matched to the incomplete tables by their records' shape (column count and types of this
// build's schema), as when sqlite_schema itself is unreadable. A record two tables' shapes fit
// is left out and counted, not guessed. Reservations come first, then runs, then their rows.

#include <filesystem>

#include "store/ledger_salvage.hpp"

struct sqlite3;

namespace ramguard {

// Reads `file` page by page and stores what the fresh ledger `to` lacks (INSERT OR IGNORE
// inside the caller's transaction); fills report.pages and each table's recovered, refused and
// complete. Returns false when the file is another application's database (its schema names
// no ledger table): nothing is imported then.
bool recover_pages(const std::filesystem::path& file, sqlite3* to, SalvageReport& report);

}  // namespace ramguard
