#include "store/sqlite_db.hpp"

#include <sqlite3.h>

#include <cstring>
#include <system_error>
#include <utility>

#include "store/write_health.hpp"

namespace ramguard {

Error sqlite_error(int code, std::string_view sqlite_message, const std::filesystem::path& file,
                   std::string_view operation) {
  const std::string path = file.string();
  const std::string op(operation);
  const std::string msg(sqlite_message);
  switch (code & 0xff) {
    case SQLITE_FULL:
      return Error{"disk full while " + op + " (" + path + "): " + msg};
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Error{"database file " + path + " is corrupt or not a ramguard database (while " + op +
                   "): " + msg};
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return Error{"cannot write " + path + " while " + op + ": " + msg};
    case SQLITE_IOERR:
      return Error{"I/O error on " + path + " while " + op + ": " + msg};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error{"database " + path + " is locked by another process while " + op + ": " + msg};
    default:
      return Error{"database error while " + op + " (" + path + "): " + msg + " (sqlite code " +
                   std::to_string(code) + ")"};
  }
}

// ---- Query -----------------------------------------------------------------------------------

Query::Query(SqliteDb* db, detail::PreparedStatement* prepared, std::string_view operation)
    : db_(db), prepared_(prepared), stmt_(prepared->stmt.get()), operation_(operation) {}

Query::Query(Query&& other) noexcept
    : db_(other.db_),
      prepared_(other.prepared_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      operation_(std::move(other.operation_)),
      bind_error_(other.bind_error_),
      bind_error_index_(other.bind_error_index_) {}

Query::~Query() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Query::note_bind(int rc, int index) {
  if (rc != SQLITE_OK && bind_error_ == 0) {
    bind_error_ = rc;
    bind_error_index_ = index;
  }
}

Query& Query::bind(int index, std::int64_t value) {
  note_bind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Query& Query::bind(int index, double value) {
  note_bind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Query& Query::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies, so the caller's buffer may go away before step().
  note_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
      index);
  return *this;
}

Query& Query::bind_null(int index) {
  note_bind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

Result<bool> Query::step() {
  if (bind_error_ != 0) {
    return db_->error(
        bind_error_, operation_ + " (binding parameter " + std::to_string(bind_error_index_) + ")");
  }
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Error e = db_->error(rc, operation_);
  sqlite3_reset(stmt_);  // leaves the cached statement usable for the next caller
  return e;
}

Status Query::run() {
  for (;;) {
    auto row = step();
    if (!row) return row.error();
    if (!*row) {
      db_->note_autocommit_write(sqlite3_stmt_readonly(stmt_) != 0);
      return ok_status();
    }
  }
}

bool Query::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Query::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Query::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string Query::text(int column) const {
  const auto* data = sqlite3_column_text(stmt_, column);
  if (data == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(data),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
}

// ---- Row -------------------------------------------------------------------------------------

int Row::find(ColumnName column) const {
  const char* name = column.c_str();
  auto& known = q_.prepared_->columns;
  // Out of the usual order: the same column again (is_null, then its value), or one further on
  // (a row whose nullable group was NULL skipped the group's other columns), or an earlier one.
  if (next_ > 0 && known[next_ - 1].name == name) return known[next_ - 1].index;
  for (std::size_t i = next_; i < known.size(); ++i) {
    if (known[i].name == name) {
      next_ = i + 1;
      return known[i].index;
    }
  }
  for (std::size_t i = 0; i < next_ && i < known.size(); ++i) {
    if (known[i].name == name) {
      next_ = i + 1;
      return known[i].index;
    }
  }
  // First asked for on this statement (from this spelling): find it among the result columns.
  const int count = sqlite3_column_count(q_.stmt_);
  for (int i = 0; i < count; ++i) {
    const char* result_name = sqlite3_column_name(q_.stmt_, i);
    if (result_name != nullptr && std::strcmp(result_name, name) == 0) {
      known.push_back({name, i});
      next_ = known.size();
      return i;
    }
  }
  if (missing_ == nullptr) missing_ = name;
  return -1;
}

std::optional<Error> Row::missing_column() const {
  if (missing_ == nullptr) return std::nullopt;
  return Error{q_.operation() + ": the query has no column '" + missing_ + "'",
               ErrorKind::kInternal};
}

bool Row::is_null(ColumnName column) const {
  const int i = index(column);
  return i < 0 || q_.is_null(i);
}
std::int64_t Row::int64(ColumnName column) const {
  const int i = index(column);
  return i < 0 ? 0 : q_.int64(i);
}
double Row::real(ColumnName column) const {
  const int i = index(column);
  return i < 0 ? 0.0 : q_.real(i);
}
std::string Row::text(ColumnName column) const {
  const int i = index(column);
  return i < 0 ? std::string() : q_.text(i);
}

// ---- SqliteDb --------------------------------------------------------------------------------

void detail::PreparedStatement::Deleter::operator()(sqlite3_stmt* stmt) const {
  sqlite3_finalize(stmt);
}

SqliteDb::SqliteDb(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}

SqliteDb::~SqliteDb() {
  cache_.clear();  // statements must be finalized before the connection closes
  sqlite3_close(db_);
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open(const std::filesystem::path& file,
                                                 const char* vfs) {
  sqlite3* handle = nullptr;
  const int rc = sqlite3_open_v2(
      file.c_str(), &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
  if (rc != SQLITE_OK) {
    Error e = sqlite_error(rc, handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc), file,
                           "opening the database");
    sqlite3_close(handle);
    return e;
  }
  sqlite3_extended_result_codes(handle, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(handle, file));
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::open_read_only(const std::filesystem::path& file) {
  auto attempt = [&](const std::string& uri) -> Result<std::unique_ptr<SqliteDb>> {
    sqlite3* handle = nullptr;
    const int rc =
        sqlite3_open_v2(uri.c_str(), &handle,
                        SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      Error e = sqlite_error(rc, handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc), file,
                             "opening the database read-only");
      sqlite3_close(handle);
      return e;
    }
    sqlite3_extended_result_codes(handle, 1);
    std::unique_ptr<SqliteDb> db(new SqliteDb(handle, file));
    // SQLite opens lazily: read the schema now, so a file it cannot read fails here.
    if (auto probe = db->scalar_int64("SELECT count(*) FROM sqlite_master", "reading the schema");
        !probe) {
      return probe.error();
    }
    return db;
  };
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return Error{"cannot open " + file.string() + " read-only: the file does not exist"};
  }
  auto plain = attempt("file:" + file.string() + "?mode=ro");
  if (plain) return plain;
  // A WAL database on a read-only disk cannot create its -shm file. Without a write-ahead log
  // to replay the main file is the whole ledger, so it may be read as immutable.
  const std::filesystem::path wal = file.string() + "-wal";
  const bool pending_wal =
      std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0;
  if (pending_wal) {
    return Error{plain.error().message + "; its write-ahead log " + wal.string() +
                 " holds commits that cannot be replayed without write access"};
  }
  return attempt("file:" + file.string() + "?immutable=1");
}

void SqliteDb::note_failure(int code, const std::string& message) {
  last_failure_code_ = code;
  if (health_ != nullptr) health_->failed(code, message);
}

void SqliteDb::note_autocommit_write(bool statement_read_only) {
  if (health_ == nullptr || statement_read_only || in_transaction()) return;
  if (sqlite3_changes64(db_) > 0) health_->succeeded();
}

Error SqliteDb::error(int code, std::string_view operation) {
  Error e = sqlite_error(code, sqlite3_errmsg(db_), path_, operation);
  note_failure(code, e.message);
  return e;
}

Status SqliteDb::exec(std::string_view sql, std::string_view operation) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return ok_status();
  Error e = sqlite_error(rc, message ? message : sqlite3_errstr(rc), path_, operation);
  sqlite3_free(message);
  note_failure(sqlite3_extended_errcode(db_), e.message);
  return e;
}

Result<Query> SqliteDb::query(std::string_view sql, std::string_view operation) {
  std::string key(sql);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, key.data(), static_cast<int>(key.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return error(rc, operation);
    }
    detail::PreparedStatement prepared;
    prepared.stmt.reset(stmt);
    it = cache_.emplace(std::move(key), std::move(prepared)).first;
  }
  // unordered_map nodes stay where they are as the cache grows: the Query may point into it.
  return Query(this, &it->second, operation);
}

Status SqliteDb::run(std::string_view sql, std::string_view operation) {
  auto q = query(sql, operation);
  if (!q) return q.error();
  return q->run();
}

Result<std::int64_t> SqliteDb::scalar_int64(std::string_view sql, std::string_view operation) {
  auto q = query(sql, operation);
  if (!q) return q.error();
  auto row = q->step();
  if (!row) return row.error();
  if (!*row) return Error{std::string(operation) + ": no result from " + std::string(sql)};
  return q->int64(0);
}

Status SqliteDb::begin(std::string_view operation) {
  // IMMEDIATE takes the write lock up front, so a busy database fails here, not mid-way.
  changes_at_begin_ = sqlite3_total_changes64(db_);
  return run("BEGIN IMMEDIATE", operation);
}

Status SqliteDb::commit(std::string_view operation) {
  const bool wrote = sqlite3_total_changes64(db_) > changes_at_begin_;
  auto s = run("COMMIT", operation);
  // An empty transaction commits even on a full disk: only one that wrote proves writability.
  if (s && wrote && health_ != nullptr) health_->succeeded();
  return s;
}

void SqliteDb::rollback() {
  // After SQLITE_FULL or an I/O error SQLite may already have rolled back by itself.
  if (in_transaction()) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

bool SqliteDb::in_transaction() const {
  return sqlite3_get_autocommit(db_) == 0;
}

bool SqliteDb::read_only() const {
  return sqlite3_db_readonly(db_, "main") == 1;
}

std::int64_t SqliteDb::changes() const {
  return sqlite3_changes64(db_);
}

}  // namespace ramguard
