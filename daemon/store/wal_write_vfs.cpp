#include "store/wal_write_vfs.hpp"

#include <sqlite3.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace ramguard {
namespace {

// 32 frames of 4 KiB pages: a batch of 64 coordinators' marks in two or three writes. Allocated
// at the first write; it stays with the open log (one per connection).
constexpr int kBufferBytes = 128 * 1024;
constexpr int kFrameHeaderBytes = 24;  // the WAL header is 32, pages are >= 512

std::atomic<std::uint64_t> g_requested{0};
std::atomic<std::uint64_t> g_written{0};

// SQLite allocates szOsFile bytes per open file and never constructs them: plain fields only.
struct WalFile {
  sqlite3_file base;   // pMethods = the methods below
  sqlite3_file* real;  // the default VFS's file, in the memory right after this struct
  char* buffer;        // kBufferBytes or null
  int buffered;        // bytes in buffer, to be written at offset `at`
  sqlite3_int64 at;
  int commit_pending;  // the last write was a commit frame's header: its page ends the commit
};

WalFile* wal(sqlite3_file* f) {
  return reinterpret_cast<WalFile*>(f);
}
sqlite3_file* real(sqlite3_file* f) {
  return wal(f)->real;
}

// What the buffer holds is always part of a transaction not yet committed (a commit flushes),
// so a write that fails loses nothing acknowledged: SQLite hears the error and rolls back.
int flush(WalFile* w) {
  if (w->buffered == 0) return SQLITE_OK;
  const int n = std::exchange(w->buffered, 0);
  g_written.fetch_add(1, std::memory_order_relaxed);
  return w->real->pMethods->xWrite(w->real, w->buffer, n, w->at);  // loops over short writes
}

int wal_close(sqlite3_file* f) {
  WalFile* w = wal(f);
  const int flushed = flush(w);
  std::free(w->buffer);
  w->buffer = nullptr;
  const int closed = w->real->pMethods->xClose(w->real);
  return flushed != SQLITE_OK ? flushed : closed;
}

int wal_read(sqlite3_file* f, void* out, int amount, sqlite3_int64 offset) {
  if (int rc = flush(wal(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xRead(real(f), out, amount, offset);
}

int wal_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  WalFile* w = wal(f);
  g_requested.fetch_add(1, std::memory_order_relaxed);
  const bool contiguous = w->buffered > 0 && offset == w->at + w->buffered;
  if (w->buffered > 0 && (!contiguous || w->buffered + amount > kBufferBytes)) {
    if (int rc = flush(w); rc != SQLITE_OK) return rc;
  }
  if (w->buffer == nullptr && amount <= kBufferBytes) {
    w->buffer = static_cast<char*>(std::malloc(kBufferBytes));
  }
  if (w->buffer == nullptr || amount > kBufferBytes) {  // no room to gather: as SQLite asked
    g_written.fetch_add(1, std::memory_order_relaxed);
    return w->real->pMethods->xWrite(w->real, data, amount, offset);
  }
  if (w->buffered == 0) w->at = offset;
  std::memcpy(w->buffer + w->buffered, data, static_cast<std::size_t>(amount));
  w->buffered += amount;
  if (amount == kFrameHeaderBytes) {
    // Bytes 4-7 of a frame header: the database size after a commit, 0 in other frames.
    const auto* header = static_cast<const unsigned char*>(data);
    w->commit_pending = (header[4] | header[5] | header[6] | header[7]) != 0;
    return SQLITE_OK;
  }
  if (std::exchange(w->commit_pending, 0) != 0) return flush(w);  // the commit frame is whole
  return SQLITE_OK;
}

int wal_truncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = flush(wal(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xTruncate(real(f), size);
}

int wal_sync(sqlite3_file* f, int flags) {
  if (int rc = flush(wal(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xSync(real(f), flags);
}

int wal_file_size(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = flush(wal(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xFileSize(real(f), size);
}

int wal_lock(sqlite3_file* f, int level) {
  return real(f)->pMethods->xLock(real(f), level);
}
int wal_unlock(sqlite3_file* f, int level) {
  return real(f)->pMethods->xUnlock(real(f), level);
}
int wal_check_reserved_lock(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int wal_file_control(sqlite3_file* f, int op, void* arg) {
  // No flush: none of these reads the log, and SQLite ignores the result of some (hints).
  return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int wal_sector_size(sqlite3_file* f) {
  return real(f)->pMethods->xSectorSize(real(f));
}
int wal_device_characteristics(sqlite3_file* f) {
  return real(f)->pMethods->xDeviceCharacteristics(real(f));
}

// Version 1: SQLite never maps or shares memory through a log file (the WAL index belongs to
// the database file), and without xFetch it reads the log with xRead, which flushes.
const sqlite3_io_methods kWalMethods = {
    1,
    wal_close,
    wal_read,
    wal_write,
    wal_truncate,
    wal_sync,
    wal_file_size,
    wal_lock,
    wal_unlock,
    wal_check_reserved_lock,
    wal_file_control,
    wal_sector_size,
    wal_device_characteristics,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

sqlite3_vfs g_vfs;

sqlite3_vfs* base_vfs() {
  return static_cast<sqlite3_vfs*>(g_vfs.pAppData);
}

int vfs_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  sqlite3_vfs* base = base_vfs();
  if ((flags & SQLITE_OPEN_WAL) == 0) return base->xOpen(base, name, file, flags, out_flags);
  WalFile* w = wal(file);
  w->real = reinterpret_cast<sqlite3_file*>(w + 1);
  w->buffer = nullptr;
  w->buffered = 0;
  w->at = 0;
  w->commit_pending = 0;
  const int rc = base->xOpen(base, name, w->real, flags, out_flags);
  // A file that did not open is never closed: SQLite looks at pMethods to know.
  w->base.pMethods = rc == SQLITE_OK ? &kWalMethods : nullptr;
  return rc;
}

int vfs_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return base_vfs()->xDelete(base_vfs(), name, sync_dir);
}
int vfs_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return base_vfs()->xAccess(base_vfs(), name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs*, const char* name, int size, char* out) {
  return base_vfs()->xFullPathname(base_vfs(), name, size, out);
}

}  // namespace

const char* coalescing_wal_vfs() {
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
    g_vfs = *base;  // the rest (randomness, time, sleep, dlopen) ignore which VFS calls them
    g_vfs.pNext = nullptr;
    g_vfs.zName = "ramguard-wal";
    g_vfs.pAppData = base;
    g_vfs.szOsFile = static_cast<int>(sizeof(WalFile)) + base->szOsFile;  // a WAL file's size
    g_vfs.xOpen = vfs_open;
    g_vfs.xDelete = vfs_delete;
    g_vfs.xAccess = vfs_access;
    g_vfs.xFullPathname = vfs_full_pathname;
    sqlite3_vfs_register(&g_vfs, 0);
  });
  return g_vfs.zName;
}

WalWriteCounts wal_write_counts() {
  return {g_requested.load(std::memory_order_relaxed), g_written.load(std::memory_order_relaxed)};
}

}  // namespace ramguard
