#pragma once
// A small RAII wrapper over the SQLite C API: one connection, prepared statements cached by
// their SQL text, bind/step/column helpers and transactions. Every SQLite failure becomes an
// Error that names the database file, the operation and SQLite's own message. Not thread-safe:
// the daemon drives it from its single io_context.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

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

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  std::uint64_t uint64(int column) const { return static_cast<std::uint64_t>(int64(column)); }
  double real(int column) const;
  std::string text(int column) const;

 private:
  friend class SqliteDb;
  Query(SqliteDb* db, sqlite3_stmt* stmt, std::string_view operation);
  void note_bind(int rc, int index);

  SqliteDb* db_;
  sqlite3_stmt* stmt_;
  std::string operation_;
  int bind_error_ = 0;  // the first failed bind, reported at step()
  int bind_error_index_ = 0;
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
  struct StmtDeleter {
    void operator()(sqlite3_stmt* stmt) const;
  };
  std::unordered_map<std::string, std::unique_ptr<sqlite3_stmt, StmtDeleter>> cache_;
};

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
