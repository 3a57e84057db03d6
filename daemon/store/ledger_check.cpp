#include "store/ledger_check.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/schema.hpp"

namespace ramguard {
namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbHandle = std::unique_ptr<sqlite3, CloseDb>;

struct Column {
  std::string name, type;
  bool operator==(const Column&) const = default;
};

// A table's columns in order; empty when it does not exist. `ok` false when unreadable.
std::vector<Column> columns(sqlite3* db, const std::string& table, bool& ok) {
  std::vector<Column> out;
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = "PRAGMA table_info(\"" + table + "\")";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ok = false;
    return out;
  }
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    auto text = [&](int i) {
      const auto* t = sqlite3_column_text(stmt, i);
      return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
    };
    out.push_back({text(1), text(2)});
  }
  if (rc != SQLITE_DONE) ok = false;
  sqlite3_finalize(stmt);
  return out;
}

std::vector<std::string> table_names(sqlite3* db) {
  std::vector<std::string> out;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid",
                         -1, &stmt, nullptr) != SQLITE_OK) {
    return out;
  }
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  }
  sqlite3_finalize(stmt);
  return out;
}

// The first column of the first row, or nullopt with `error` set.
std::optional<std::string> first_text(sqlite3* db, const char* sql, std::string& error) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  std::optional<std::string> out;
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    const auto* t = sqlite3_column_text(stmt, 0);
    out = t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  } else {
    error = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  return out;
}

}  // namespace

std::string schema_difference(sqlite3* db) {
  sqlite3* raw = nullptr;
  if (sqlite3_open(":memory:", &raw) != SQLITE_OK) return {};
  DbHandle reference(raw);
  for (const Migration& m : schema_migrations()) {
    if (sqlite3_exec(raw, std::string(m.sql).c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return {};  // cannot happen with this build's own schema; never blame the file for it
    }
  }
  for (const std::string& table : table_names(raw)) {
    bool ok = true;
    const std::vector<Column> want = columns(raw, table, ok);
    const std::vector<Column> have = columns(db, table, ok);
    if (!ok) return "table " + table + " cannot be read";
    if (have.empty()) return "table " + table + " is missing";
    if (have != want) {
      std::string names;
      for (const Column& c : have) names += (names.empty() ? "" : ", ") + c.name;
      return "table " + table + " has columns (" + names + "), not this build's";
    }
  }
  return {};
}

LedgerCheck check_ledger_file(const std::filesystem::path& file) {
  using V = LedgerCheck::Verdict;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return {};
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  DbHandle db(raw);
  if (rc != SQLITE_OK) return {};
  std::string error;
  auto verdict = first_text(raw, "PRAGMA quick_check(1)", error);
  if (!verdict) {
    const int code = sqlite3_errcode(raw) & 0xff;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return {V::kUnusable, error};
    return {};  // a disk or permission problem: not the file's content
  }
  if (*verdict != "ok") return {V::kUnusable, "quick_check: " + verdict->substr(0, 200)};
  auto app = first_text(raw, "PRAGMA application_id", error);
  auto version = first_text(raw, "PRAGMA user_version", error);
  if (!app || !version) return {};
  const std::int64_t app_id = std::stoll(*app);
  const std::int64_t schema = std::stoll(*version);
  if (app_id != 0 && app_id != kRamguardApplicationId) {
    return {V::kUnusable, "another application's database (application_id " + *app + ")", true};
  }
  if (schema > current_schema_version()) return {};  // a newer ramguardd's: leave it alone
  if (app_id == 0 && schema == 0) {
    if (table_names(raw).empty()) return {V::kUsable, {}};
    return {V::kUnusable, "another application's database (tables without ramguard's tag)", true};
  }
  if (schema == current_schema_version()) {
    if (std::string diff = schema_difference(raw); !diff.empty()) {
      return {V::kUnusable, "wrong schema: " + diff};
    }
  }
  return {V::kUsable, {}};
}

}  // namespace ramguard
