#pragma once
// Whether the ledger takes writes. A read-only, full, corrupt or failing disk makes it
// unwritable until a write succeeds again; the daemon goes on guarding in memory and says so
// (status, ramguard_store_writable), with one log line when it degrades and at most one a
// minute while it stays degraded, never a line per failed write.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace ramguard {

class WriteHealth {
 public:
  using Listener = std::function<void(bool writable)>;

  explicit WriteHealth(std::filesystem::path file) : file_(std::move(file)) {}

  // True for SQLite result codes that mean the file cannot take writes (full, read-only,
  // corrupt, I/O error), as opposed to a bad statement or a constraint.
  static bool is_storage_failure(int sqlite_code);

  // A write failed with `sqlite_code`; only storage failures change the state.
  void failed(int sqlite_code, const std::string& message);
  // Degraded from the start (the file was opened read-only).
  void start_degraded(const std::string& reason);
  // A write reached the file: the ledger is writable (again).
  void succeeded();
  // Opened read-only, and now the disk would take writes: `note` joins the reason (what to do).
  void add_to_reason(const std::string& note) { reason_ += note; }

  bool writable() const { return writable_; }
  const std::string& reason() const { return reason_; }           // empty while writable
  std::uint64_t failed_writes() const { return failed_writes_; }  // since it degraded
  // Called on every change of writable() (and once when set).
  void set_listener(Listener listener);

 private:
  void degrade(const std::string& reason);

  std::filesystem::path file_;
  bool writable_ = true;
  bool read_only_ = false;  // degraded from the start; the first reason stays
  std::string reason_;
  std::uint64_t failed_writes_ = 0;
  std::uint64_t unlogged_failures_ = 0;
  std::chrono::steady_clock::time_point last_logged_{};
  Listener listener_;
};

}  // namespace ramguard
