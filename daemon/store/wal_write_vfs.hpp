#pragma once
// A SQLite VFS over the default one that writes one ledger commit's log in one system call.
//
// SQLite appends a commit to the write-ahead log frame by frame, and each frame in two writes
// (a 24-byte header, then the page): a batch of marks from 64 coordinators dirties ~50 pages,
// so ~100 pwrites on the event loop, each a full trip into the kernel (~7 per mark, a third
// of the loop's time per mark on this VM). This VFS gathers consecutive writes to a `-wal`
// file in a buffer and writes them at once when the commit frame is complete (the frame
// header with a non-zero database size), before any read, sync, truncate or size query of
// the log, and when the buffer is full. Every other file goes straight to the default VFS.
//
// Why it is safe: a commit becomes visible (and durable against a crash of the process) only
// when SQLite publishes its frames in the shared WAL index, which it does after writing the
// commit frame, so after this VFS has flushed it; a flush that fails fails that write, and the
// transaction with it. Frames written earlier by a cache spill are not published until their
// commit, and a read of them flushes first. Nothing is kept across calls that SQLite believes
// is on disk.
#include <cstdint>

namespace ramguard {

// The VFS's name for sqlite3_open_v2; registered on first use (not as the default VFS).
const char* coalescing_wal_vfs();

// Process-wide counts, for tests and benchmarks: writes SQLite asked for on `-wal` files, and
// the system writes they became.
struct WalWriteCounts {
  std::uint64_t requested = 0;
  std::uint64_t written = 0;
};
WalWriteCounts wal_write_counts();

}  // namespace ramguard
