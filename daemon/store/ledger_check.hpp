#pragma once
// Whether a ledger file can serve as this daemon's ledger, read without changing it: a
// truncated or garbled file, something that is not an SQLite database, another program's
// database and a ramguard schema whose tables are not this build's are all unusable, and are
// moved aside and salvaged (ledger_salvage.hpp). A newer schema is not unusable: that is a
// newer ramguardd's ledger, refused by Store::open and left alone.

#include <filesystem>
#include <string>

struct sqlite3;

namespace ramguard {

struct LedgerCheck {
  enum class Verdict {
    kUsable,     // checked (quick_check passed, tables are this build's): no need to check again
    kUnusable,   // reason says why; salvage it
    kUnchecked,  // could not be read here (missing, unreadable disk): Store::open decides
  };
  Verdict verdict = Verdict::kUnchecked;
  std::string reason;
  bool foreign = false;  // another application's database, not a damaged ledger
};

LedgerCheck check_ledger_file(const std::filesystem::path& file);

// The tables and columns of `db` against this build's schema: empty when they match, else the
// first difference ("table marks is missing").
std::string schema_difference(sqlite3* db);

}  // namespace ramguard
