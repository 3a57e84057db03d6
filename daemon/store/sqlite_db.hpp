#pragma once
// A small RAII wrapper over the SQLite C API: one connection, prepared statements cached by
// their SQL text, bind/step helpers, rows read by column name, and transactions. Every SQLite
// failure becomes an Error that names the database file, the operation and SQLite's own message.
// Not thread-safe: the daemon drives it from its single io_context.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ramguard/base/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace ramguard {

// Maps an SQLite result code to an Error naming the file and what was being done:
// SQLITE_FULL -> "disk full while ...", SQLITE_CORRUPT/NOTADB -> "... is corrupt or not a
// ramguard database", SQLITE_READONLY/CANTOPEN/PERM -> "cannot write ...".
Error sqlite_error(int code, std::string_view sqlite_message, const std::filesystem::path& file,
                   std::string_view operation);

class SqliteDb;
class WriteHealth;
class Row;

namespace detail {
// A prepared statement and the result columns rows have asked it for by name (ColumnName's
// address), in the order first asked, each with its index: kept with the statement in
// SqliteDb's cache.
struct PreparedStatement {
  struct Deleter {
    void operator()(sqlite3_stmt* stmt) const;
  };
  struct Column {
    const char* name;
    int index;
  };
  std::unique_ptr<sqlite3_stmt, Deleter> stmt;
  std::vector<Column> columns;
};
}  // namespace detail

// A cached statement in use. Bindings are 1-based as in SQLite; unsigned values are stored as
// their two's-complement int64 and read back bit-exact. Destruction resets the statement so
// the cache can hand it out again.
class Query {
 public:
  Query(Query&& other) noexcept;
  Query& operator=(Query&&) = delete;
  Query(const Query&) = delete;
  ~Query();

  Query& bind(int index, std::int64_t value);
  Query& bind(int index, std::uint64_t value) {
    return bind(index, static_cast<std::int64_t>(value));
  }
  Query& bind(int index, std::uint32_t value) {
    return bind(index, static_cast<std::int64_t>(value));
  }
  Query& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Query& bind(int index, bool value) {
    return bind(index, static_cast<std::int64_t>(value ? 1 : 0));
  }
  Query& bind(int index, double value);
  Query& bind(int index, std::string_view value);
  Query& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Query& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Query& bind_null(int index);
  template <typename T>
  Query& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // One step: true when a row is available, false when done.
  Result<bool> step();
  // Steps to completion (for statements that return no rows).
  Status run();

  // Columns by position: for pragmas and one-column results. Rows of ledger tables are read by
  // name through Row (SqliteDb::for_each_row).
  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  std::uint64_t uint64(int column) const { return static_cast<std::uint64_t>(int64(column)); }
  double real(int column) const;
  std::string text(int column) const;

  const std::string& operation() const { return operation_; }

 private:
  friend class SqliteDb;
  friend class Row;
  Query(SqliteDb* db, detail::PreparedStatement* prepared, std::string_view operation);
  void note_bind(int rc, int index);

  SqliteDb* db_;
  detail::PreparedStatement* prepared_;
  sqlite3_stmt* stmt_;
  std::string operation_;
  int bind_error_ = 0;  // the first failed bind, reported at step()
  int bind_error_index_ = 0;
};

// A result column's name as the code spells it. Only a string literal (or another constant)
// makes one, so its address names the column for as long as the program runs and a statement
// can remember which address is which column.
class ColumnName {
 public:
  consteval ColumnName(const char* name) : name_(name) {}  // NOLINT: implicit from a literal
  const char* c_str() const { return name_; }

 private:
  const char* name_;
};

// The current row of a Query, its columns taken by the names the statement's SELECT gives them
// (a table's column name, or the AS alias of an expression). A name is looked up among the
// result columns once per prepared statement and kept with it; rows read their columns in the
// same order every row, so the slot after the last one read is tried first and a read costs
// an address compare more than reading by position. A name the statement does not have reads
// as NULL (0, empty) and is reported by missing_column(), which for_each_row returns.
class Row {
 public:
  explicit Row(const Query& q) : q_(q) {}
  Row(const Row&) = delete;
  Row& operator=(const Row&) = delete;

  bool is_null(ColumnName column) const;
  std::int64_t int64(ColumnName column) const;
  std::uint64_t uint64(ColumnName column) const {
    return static_cast<std::uint64_t>(int64(column));
  }
  std::uint32_t uint32(ColumnName column) const {
    return static_cast<std::uint32_t>(int64(column));
  }
  bool flag(ColumnName column) const { return int64(column) != 0; }
  double real(ColumnName column) const;
  std::string text(ColumnName column) const;

  // An Error naming the first column this row was asked for that the statement lacks.
  std::optional<Error> missing_column() const;

 private:
  // The column's index, -1 when the statement has none of that name.
  int index(ColumnName column) const {
    const auto& known = q_.prepared_->columns;
    if (next_ < known.size() && known[next_].name == column.c_str()) return known[next_++].index;
    return find(column);
  }
  int find(ColumnName column) const;

  const Query& q_;
  mutable std::size_t next_ = 0;  // the slot the next read most likely takes
  mutable const char* missing_ = nullptr;
};

class SqliteDb {
 public:
  // Opens (creating if missing) the database file. SQLite opens lazily, so a file that is not
  // a database is reported by the first statement, not here. `vfs`: a registered VFS's name,
  // or null for SQLite's default.
  static Result<std::unique_ptr<SqliteDb>> open(const std::filesystem::path& file,
                                                const char* vfs = nullptr);
  // Opens an existing database for reading only, for a ledger whose disk refuses writes. A
  // WAL database needs its -shm file for that; without a WAL to replay, it opens immutable.
  static Result<std::unique_ptr<SqliteDb>> open_read_only(const std::filesystem::path& file);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The connection itself, for what this wrapper does not cover (a WAL hook).
  sqlite3* handle() const { return db_; }

  // Runs one or more statements without results (DDL, pragmas). `operation` names the work
  // for error messages ("creating the schema").
  Status exec(std::string_view sql, std::string_view operation);
  // Runs one statement without results through the statement cache: for the ones run at every
  // write (BEGIN, COMMIT, SAVEPOINT, RELEASE), which exec() would parse and plan every time.
  Status run(std::string_view sql, std::string_view operation);
  // A cached prepared statement for `sql`.
  Result<Query> query(std::string_view sql, std::string_view operation);
  // The first column of the first row of `sql` as an integer (pragmas such as user_version).
  Result<std::int64_t> scalar_int64(std::string_view sql, std::string_view operation);
  // Runs the cached statement for `sql` with `bind(Query&)`'s parameters and hands each row to
  // `take(const Row&)`, which returns void or a Status (an error stops the read and is
  // returned). A column a row asks for that the statement does not have stops it too.
  template <typename Bind, typename Take>
  Status for_each_row(std::string_view sql, std::string_view operation, Bind&& bind, Take&& take);

  Status begin(std::string_view operation);
  Status commit(std::string_view operation);
  // Rolls back if a transaction is open; safe after SQLite has already rolled back by itself.
  void rollback();
  bool in_transaction() const;

  std::int64_t changes() const;
  // True when SQLite could open the file for reading only (read-only file or filesystem).
  bool read_only() const;
  // Builds the Error for `code` and remembers the code for last_failure_code().
  Error error(int code, std::string_view operation);
  // The extended result code of the most recent failure (e.g. SQLITE_CONSTRAINT_FOREIGNKEY), so
  // callers can say "unknown run" instead of "FOREIGN KEY constraint failed".
  int last_failure_code() const { return last_failure_code_; }

  // Storage failures and writes that reached the file are reported here (may be null).
  void set_health(WriteHealth* health) { health_ = health; }
  // A statement outside a transaction wrote rows (Query::run calls it).
  void note_autocommit_write(bool statement_read_only);

 private:
  void note_failure(int code, const std::string& message);

  SqliteDb(sqlite3* db, std::filesystem::path path);

  sqlite3* db_;
  std::filesystem::path path_;
  int last_failure_code_ = 0;
  WriteHealth* health_ = nullptr;
  std::int64_t changes_at_begin_ = 0;
  std::unordered_map<std::string, detail::PreparedStatement> cache_;
};

template <typename Bind, typename Take>
Status SqliteDb::for_each_row(std::string_view sql, std::string_view operation, Bind&& bind,
                              Take&& take) {
  auto q = query(sql, operation);
  if (!q) return q.error();
  bind(*q);
  for (;;) {
    auto more = q->step();
    if (!more) return more.error();
    if (!*more) return ok_status();
    const Row row(*q);
    if constexpr (std::is_void_v<std::invoke_result_t<Take&, const Row&>>) {
      take(row);
    } else {
      if (Status s = take(row); !s) return s;
    }
    if (auto missing = row.missing_column()) return *missing;
  }
}

// Runs a group of writes as one transaction: commits when the body succeeds, rolls back
// otherwise. Nested use becomes a savepoint of the outer transaction: a failed inner group is
// undone alone, and only the outermost commit makes anything durable.
template <typename Body>
Status in_transaction(SqliteDb& db, std::string_view operation, Body&& body) {
  if (db.in_transaction()) {
    if (auto s = db.run("SAVEPOINT nested", operation); !s) return s;
    Status result = body();
    if (!result) {
      // SQLite may have rolled back the whole transaction itself (disk full, I/O error).
      if (db.in_transaction()) (void)db.exec("ROLLBACK TO nested; RELEASE nested", operation);
      return result;
    }
    if (auto s = db.run("RELEASE nested", operation); !s) return s;
    return result;
  }
  if (auto begun = db.begin(operation); !begun) return begun;
  Status result = body();
  if (!result) {
    db.rollback();
    return result;
  }
  if (auto committed = db.commit(operation); !committed) {
    db.rollback();
    return committed;
  }
  return result;
}

}  // namespace ramguard
