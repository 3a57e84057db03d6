// Opening the ledger file, read-write or read-only, and the health of its disk: writability,
// the stop's reserve, the size cap.
#include "store/store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <system_error>

#include "common/log.hpp"
#include "store/schema.hpp"
#include "store/sqlite_db.hpp"
#include "store/state_lock.hpp"
#include "store/wal_checkpointer.hpp"
#include "store/wal_write_vfs.hpp"

namespace ramguard {
namespace {

Status configure(SqliteDb& db, bool sync_every_commit) {
  // WAL: readers never block the writer and a commit is one append. FULL adds an fsync of the
  // WAL to every commit; NORMAL (the daemon's choice) leaves it to checkpoints.
  if (auto s = db.exec("PRAGMA busy_timeout = 2000", "configuring the connection"); !s) return s;
  // A 512 KiB page cache per connection (SQLite's default is 2 MiB): the ledger is written
  // append-mostly and read by key, and the daemon's footprint must not grow with the ledger
  // (at 2 MiB the soak tests' RSS grew 2.9 MiB as the cache filled). Dozens of coordinators
  // marking at once read some pages back from the log for it (docs/benchmarks.md).
  if (auto s = db.exec("PRAGMA cache_size = -512", "configuring the connection"); !s) return s;
  {
    auto mode = db.query("PRAGMA journal_mode = WAL", "switching to WAL mode");
    if (!mode) return mode.error();
    if (auto row = mode->step(); !row) return row.error();
  }
  return db.exec(sync_every_commit ? "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON"
                                   : "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON",
                 "configuring the connection");
}

Status verify(SqliteDb& db) {
  auto q = db.query("PRAGMA quick_check(1)", "checking the database");
  if (!q) return q.error();
  auto row = q->step();
  if (!row) return row.error();
  std::string verdict = *row ? q->text(0) : std::string("no result");
  if (verdict == "ok") return ok_status();
  for (char& c : verdict) {
    if (c == '\n') c = ' ';  // one log line
  }
  return Error{"database file " + db.path().string() +
               " is corrupt or not a ramguard database (quick_check: " + verdict + ")"};
}

}  // namespace

Status prepare_state_dir(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool exists = fs::exists(dir, ec);
  if (ec) return Error{"cannot access state directory " + dir.string() + ": " + ec.message()};
  if (exists) {
    if (!fs::is_directory(dir, ec)) {
      return Error{"state directory " + dir.string() + " exists but is not a directory"};
    }
    return ok_status();
  }
  if (!fs::create_directories(dir, ec) || ec) {
    return Error{"cannot create state directory " + dir.string() + ": " +
                 (ec ? ec.message() : std::string("unknown reason"))};
  }
  // Run ledgers name jobs and hosts: readable by the daemon's group, nobody else.
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec,
                  fs::perm_options::replace, ec);
  if (ec)
    return Error{"cannot set mode 0750 on state directory " + dir.string() + ": " + ec.message()};
  return ok_status();
}

// The bases are built first, on the connection the unique_ptr still holds; db_ then owns it.
Store::Store(std::unique_ptr<SqliteDb> db, std::int64_t schema_version)
    : LedgerQueries(*db, schema_version),
      LedgerWriter(*db, *this),
      db_(std::move(db)),
      health_(db_->path()) {
  db_->set_health(&health_);
}
Store::~Store() {
  // A batch still open at shutdown holds writes that returned Ok: make them durable.
  (void)commit_batch();
}

const std::filesystem::path& Store::path() const {
  return db_->path();
}

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& state_dir,
                                           const StoreOptions& options) {
  if (auto s = prepare_state_dir(state_dir); !s) return s.error();
  const std::filesystem::path file = state_dir / kFileName;
  // Each commit's log in one write (store/wal_write_vfs.hpp), not two per page.
  auto db = SqliteDb::open(file, options.coalesce_wal_writes ? coalescing_wal_vfs() : nullptr);
  if (!db) return open_read_only(file, db.error());
  auto read_only_fallback = [&](const Error& e) -> Result<std::unique_ptr<Store>> {
    // Only a disk that refuses writes falls back; a corrupt or foreign file stays refused.
    const int code = (*db)->last_failure_code() & 0xff;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB || !WriteHealth::is_storage_failure(code)) {
      return e;
    }
    db->reset();
    return open_read_only(file, e);
  };
  if (auto s = configure(**db, options.sync_every_commit); !s) return read_only_fallback(s.error());
  if (options.verify_on_open) {
    if (auto s = verify(**db); !s) return s.error();
  }
  if (auto s = migrate_schema(**db); !s) return read_only_fallback(s.error());
  const bool read_only = (*db)->read_only();
  std::unique_ptr<Store> store(new Store(std::move(*db), current_schema_version()));
  if (read_only) {
    // SQLite quietly opened a read-only file for reading; say so now, not at the first write.
    store->opened_read_only_ = true;
    store->health_.start_degraded("opened read-only: " + file.string() +
                                  " or its filesystem does not allow writing");
  }
  if (options.max_db_bytes != 0) {
    if (auto s = store->set_max_db_bytes(options.max_db_bytes); !s) return s.error();
  }
  store->reserve_bytes_ = options.reserve_bytes;
  if (!read_only) (void)store->keep_reserve();
  if (options.checkpoint_in_background && !read_only) {
    auto checkpointer = WalCheckpointer::start(store->db_->handle(), file);
    if (checkpointer) {
      store->checkpointer_ = std::move(*checkpointer);
    } else {
      log::warning("store.checkpoint_thread_unavailable",
                   {{"reason", checkpointer.error().message},
                    {"effect", "commits checkpoint the write-ahead log themselves"}});
    }
  }
  return store;
}

Result<std::unique_ptr<Store>> Store::open_read_only(const std::filesystem::path& file,
                                                     const Error& write_error) {
  auto db = SqliteDb::open_read_only(file);
  if (!db) return Error{write_error.message + "; read-only too: " + db.error().message};
  const std::string op = "reading the ledger read-only";
  auto app_id = (*db)->scalar_int64("PRAGMA application_id", op);
  if (!app_id) return app_id.error();
  auto version = (*db)->scalar_int64("PRAGMA user_version", op);
  if (!version) return version.error();
  if (*app_id != kRamguardApplicationId || *version < 1 || *version > current_schema_version()) {
    return Error{write_error.message + "; and " + file.string() +
                 " cannot be read as this version's ledger (application id " +
                 std::to_string(*app_id) + ", schema " + std::to_string(*version) + ")"};
  }
  if (auto s = verify(**db); !s) return s.error();
  std::unique_ptr<Store> store(new Store(std::move(*db), *version));
  store->opened_read_only_ = true;
  store->health_.start_degraded("opened read-only: " + write_error.message);
  return store;
}

namespace {

std::filesystem::path reserve_path(const std::filesystem::path& db_file) {
  return db_file.parent_path() / "ramguard.reserve";
}

}  // namespace

bool Store::keep_reserve() {
  if (reserve_bytes_ == 0) return false;
  const std::filesystem::path file = reserve_path(path());
  std::error_code ec;
  if (std::filesystem::file_size(file, ec) == reserve_bytes_ && !ec) return true;
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // Blocks really allocated (a sparse file would free nothing when deleted).
  const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes_));
  ::close(fd);
  if (rc != 0) {
    std::filesystem::remove(file, ec);
    return false;
  }
  return true;
}

bool Store::release_reserve() {
  std::error_code ec;
  return std::filesystem::remove(reserve_path(path()), ec) && !ec;
}

bool Store::restart_would_write() {
  if (!opened_read_only_) return false;
  if (restart_needed_said_) return true;
  struct statvfs fs {};
  const std::filesystem::path dir = path().parent_path();
  if (::statvfs(dir.c_str(), &fs) != 0 || (fs.f_flag & ST_RDONLY) != 0) return false;
  // Room for a few commits and the log's index, and a directory this process may write.
  constexpr std::uint64_t kRoomBytes = 1 << 20;
  if (static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize < kRoomBytes) return false;
  if (::access(dir.c_str(), W_OK) != 0 || ::access(path().c_str(), W_OK) != 0) return false;
  restart_needed_said_ = true;
  const std::string note =
      "; the disk takes writes again, but this daemon opened the ledger read-only: restart "
      "ramguardd to write it";
  log::warning("store.restart_needed",
               {{"file", path().string()},
                {"reason", "opened read-only at startup: " + health_.reason()},
                {"effect",
                 "runs are guarded in memory only and nothing reaches the ledger until "
                 "ramguardd restarts"}});
  health_.add_to_reason(note);
  return true;
}

Status Store::set_max_db_bytes(std::uint64_t bytes) {
  const char* op = "setting the database size cap";
  auto page_size = db_->scalar_int64("PRAGMA page_size", op);
  if (!page_size) return page_size.error();
  // 1073741823 pages is SQLite's own default limit.
  std::uint64_t pages = 1073741823;
  if (bytes != 0)
    pages = std::max<std::uint64_t>(1, bytes / static_cast<std::uint64_t>(*page_size));
  auto set = db_->scalar_int64("PRAGMA max_page_count = " + std::to_string(pages), op);
  if (!set) return set.error();
  return ok_status();
}

}  // namespace ramguard
