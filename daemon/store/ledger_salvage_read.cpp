#include "store/ledger_salvage_read.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <system_error>

namespace ramguard {
namespace {

constexpr std::size_t kMaxLossNotes = 20;
// After a read error in a top-level table, seeks this many times further on (rowid + 2^k).
constexpr int kSkipAttempts = 32;

std::vector<std::string> column_names(sqlite3* db, const std::string& table) {
  std::vector<std::string> out;
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = "PRAGMA table_info(\"" + table + "\")";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)));
  }
  sqlite3_finalize(stmt);
  return out;
}

// SQLite refuses a file shorter than its header says, even the pages still there; the copy it
// reads from gets the page count the file really has, so only the missing pages are missing.
void fit_page_count(const std::filesystem::path& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  unsigned char header[100] = {};
  if (!f.read(reinterpret_cast<char*>(header), sizeof header)) return;
  if (std::memcmp(header, "SQLite format 3", 16) != 0) return;
  std::uint32_t page_size = (header[16] << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512) return;
  std::error_code ec;
  const auto pages = static_cast<std::uint32_t>(std::filesystem::file_size(file, ec) / page_size);
  const std::uint32_t said = (std::uint32_t{header[28]} << 24) | (std::uint32_t{header[29]} << 16) |
                             (std::uint32_t{header[30]} << 8) | header[31];
  if (ec || said <= pages) return;
  const unsigned char fitted[4] = {
      static_cast<unsigned char>(pages >> 24), static_cast<unsigned char>(pages >> 16),
      static_cast<unsigned char>(pages >> 8), static_cast<unsigned char>(pages)};
  f.seekp(28);
  f.write(reinterpret_cast<const char*>(fitted), sizeof fitted);
}

}  // namespace

// A scratch copy of the moved-aside file (and its WAL) to read from: the file set aside stays
// exactly as it was found.
Result<std::filesystem::path> readable_copy(const std::filesystem::path& aside) {
  const std::filesystem::path copy = aside.string() + ".salvaging";
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const std::filesystem::path from = aside.string() + suffix;
    if (!std::filesystem::exists(from, ec)) continue;
    std::filesystem::copy_file(from, copy.string() + suffix,
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return Error{"cannot copy " + from.string() + " to read it: " + ec.message()};
  }
  fit_page_count(copy);
  return copy;
}

void remove_copy(const std::filesystem::path& copy) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    std::filesystem::remove(copy.string() + suffix, ec);
  }
}

SalvageReport::Table& SalvageCopier::entry(const std::string& table) {
  for (auto& t : report_.tables) {
    if (t.name == table) return t;
  }
  report_.tables.push_back({table});
  return report_.tables.back();
}

void SalvageCopier::note(const std::string& what) {
  if (report_.losses.size() < kMaxLossNotes) report_.losses.push_back(what);
}

std::vector<std::string> SalvageCopier::keys(const char* sql) {
  std::vector<std::string> out;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(to_, sql, -1, &stmt, nullptr) != SQLITE_OK) return out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  }
  sqlite3_finalize(stmt);
  return out;
}

void SalvageCopier::copy(const std::string& table, const std::string& where, const std::string& key,
                         bool resume_by_rowid) {
  SalvageReport::Table& t = entry(table);
  const std::vector<std::string> have = column_names(from_, table);
  std::string cols, marks;
  for (const std::string& c : column_names(to_, table)) {
    if (std::find(have.begin(), have.end(), c) == have.end()) continue;
    cols += (cols.empty() ? "\"" : ", \"") + c + "\"";
    marks += marks.empty() ? "?" : ", ?";
  }
  if (cols.empty()) {
    if (key.empty()) note("table " + table + ": not readable in the old file");
    ++t.unreadable;
    return;
  }
  sqlite3_stmt* writer = nullptr;
  const std::string insert_sql =
      "INSERT OR IGNORE INTO \"" + table + "\" (" + cols + ") VALUES (" + marks + ")";
  if (sqlite3_prepare_v2(to_, insert_sql.c_str(), -1, &writer, nullptr) != SQLITE_OK) return;
  std::string select_sql = "SELECT " + (resume_by_rowid ? std::string("rowid, ") : "") + cols +
                           " FROM \"" + table + "\"";
  std::vector<std::string> conditions;
  if (!where.empty()) conditions.push_back(where);
  if (resume_by_rowid) conditions.push_back("rowid > ?");
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    select_sql += (i == 0 ? " WHERE " : " AND ") + conditions[i];
  }
  if (resume_by_rowid) select_sql += " ORDER BY rowid";
  const int offset = resume_by_rowid ? 1 : 0;
  sqlite3_int64 after = -1;  // rowid to resume after
  for (int skips = 0; skips <= kSkipAttempts; ++skips) {
    sqlite3_stmt* reader = nullptr;
    int rc = sqlite3_prepare_v2(from_, select_sql.c_str(), -1, &reader, nullptr);
    if (rc == SQLITE_OK) {
      int index = 1;
      if (!where.empty()) sqlite3_bind_text(reader, index++, key.c_str(), -1, SQLITE_TRANSIENT);
      if (resume_by_rowid) sqlite3_bind_int64(reader, index, after);
      while ((rc = sqlite3_step(reader)) == SQLITE_ROW) {
        if (resume_by_rowid) after = sqlite3_column_int64(reader, 0);
        const int n = sqlite3_column_count(reader) - offset;
        for (int i = 0; i < n; ++i)
          sqlite3_bind_value(writer, i + 1, sqlite3_column_value(reader, i + offset));
        const int written = sqlite3_step(writer);
        sqlite3_reset(writer);
        if (written == SQLITE_DONE && sqlite3_changes(to_) > 0) {
          ++t.copied;
        } else {
          ++t.refused;
        }
      }
    }
    const std::string message = sqlite3_errmsg(from_);
    sqlite3_finalize(reader);
    if (rc == SQLITE_DONE) break;
    ++t.unreadable;
    if (skips == 0) {
      note(table + (key.empty() ? "" : " of " + key) + ": reading stopped: " + message);
    }
    if (!resume_by_rowid) break;
    after += sqlite3_int64{1} << std::min(skips + 1, 40);  // seek past the bad page
  }
  sqlite3_finalize(writer);
}

}  // namespace ramguard
