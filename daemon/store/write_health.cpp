#include "store/write_health.hpp"

#include <sqlite3.h>

#include "common/log.hpp"

namespace ramguard {
namespace {

// One reminder a minute while degraded: enough to be seen, never a flood at mark rate.
constexpr std::chrono::seconds kRemindEvery{60};

}  // namespace

bool WriteHealth::is_storage_failure(int sqlite_code) {
  switch (sqlite_code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_IOERR:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return true;
    default:
      return false;
  }
}

void WriteHealth::set_listener(Listener listener) {
  listener_ = std::move(listener);
  if (listener_) listener_(writable_);
}

void WriteHealth::degrade(const std::string& reason) {
  ++failed_writes_;
  const auto now = std::chrono::steady_clock::now();
  if (writable_) {
    writable_ = false;
    reason_ = reason;
    last_logged_ = now;
    unlogged_failures_ = 0;
    log::error("store.unwritable",
               {{"file", file_.string()},
                {"reason", reason},
                {"effect",
                 "guarding goes on in memory; replies say stored:false; status and "
                 "ramguard_store_writable show it until a write succeeds"}});
    if (listener_) listener_(false);
    return;
  }
  // Opened read-only: that stays the reason; each refused write is only its symptom.
  if (!read_only_) reason_ = reason;
  ++unlogged_failures_;
  if (now - last_logged_ >= kRemindEvery) {
    log::warning("store.still_unwritable", {{"file", file_.string()},
                                            {"reason", reason},
                                            {"failed_writes", failed_writes_},
                                            {"since_last_line", unlogged_failures_}});
    last_logged_ = now;
    unlogged_failures_ = 0;
  }
}

void WriteHealth::failed(int sqlite_code, const std::string& message) {
  if (is_storage_failure(sqlite_code)) degrade(message);
}

void WriteHealth::start_degraded(const std::string& reason) {
  degrade(reason);
  read_only_ = true;
  failed_writes_ = 0;
}

void WriteHealth::succeeded() {
  if (writable_) return;
  log::info("store.writable_again",
            {{"file", file_.string()}, {"after_failed_writes", failed_writes_}});
  writable_ = true;
  reason_.clear();
  failed_writes_ = 0;
  unlogged_failures_ = 0;
  if (listener_) listener_(true);
}

}  // namespace ramguard
