#pragma once
// Reading a moved-aside ledger for its salvage (ledger_salvage.hpp): a scratch copy SQLite will
// open, and the row-by-row copy of a table's readable rows into the fresh ledger.

#include <filesystem>
#include <string>
#include <vector>

#include "ramguard/base/result.hpp"
#include "store/ledger_salvage.hpp"

struct sqlite3;

namespace ramguard {

// Copies of the moved-aside file (and its WAL), with the page count fitted to a truncated
// file's real size; remove_copy() deletes them.
Result<std::filesystem::path> readable_copy(const std::filesystem::path& aside);
void remove_copy(const std::filesystem::path& copy);

// Copies rows of one table from the moved-aside file into the fresh ledger.
class SalvageCopier {
 public:
  SalvageCopier(sqlite3* from, sqlite3* to, SalvageReport& report)
      : from_(from), to_(to), report_(report) {}

  // Rows matching `where` (bound to `key`); rowid tables may resume past a bad page.
  void copy(const std::string& table, const std::string& where = {}, const std::string& key = {},
            bool resume_by_rowid = false);
  std::vector<std::string> keys(const char* sql);  // from the fresh ledger

 private:
  SalvageReport::Table& entry(const std::string& table);
  void note(const std::string& what);

  sqlite3* from_;
  sqlite3* to_;
  SalvageReport& report_;
};

}  // namespace ramguard
