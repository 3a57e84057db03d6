#include "store/ledger_salvage.hpp"

#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <system_error>

#include "common/log.hpp"
#include "store/ledger_check.hpp"
#include "store/ledger_salvage_read.hpp"

namespace ramguard {
namespace {

struct CloseDb {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using DbHandle = std::unique_ptr<sqlite3, CloseDb>;

std::string utc_stamp(std::chrono::system_clock::time_point now) {
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

Status move_aside(const std::filesystem::path& file, const std::filesystem::path& aside) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::filesystem::path from = file.string() + suffix;
    std::error_code ec;
    if (!std::filesystem::exists(from, ec)) continue;
    std::filesystem::rename(from, aside.string() + suffix, ec);
    if (ec) {
      return Error{"cannot move " + from.string() + " aside to " + aside.string() + suffix + ": " +
                   ec.message()};
    }
  }
  return ok_status();
}

}  // namespace

std::uint64_t SalvageReport::copied(const std::string& table) const {
  for (const auto& t : tables) {
    if (t.name == table) return t.copied;
  }
  return 0;
}

bool SalvageReport::lossless() const {
  for (const auto& t : tables) {
    if (t.refused > 0 || t.unreadable > 0) return false;
  }
  return true;
}

std::string SalvageReport::summary() const {
  std::string out = "unusable ledger (" + reason + ") moved aside to " + moved_to.string() +
                    "; salvaged into a fresh ledger:\n";
  for (const auto& t : tables) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-16s %10llu copied %8llu refused %6llu unreadable\n",
                  t.name.c_str(), static_cast<unsigned long long>(t.copied),
                  static_cast<unsigned long long>(t.refused),
                  static_cast<unsigned long long>(t.unreadable));
    out += line;
  }
  for (const auto& loss : losses) out += "  lost: " + loss + "\n";
  if (lossless()) out += "  nothing readable was lost\n";
  return out;
}

namespace {

// A fresh ledger in `state_dir` with what can be read of report.moved_to.
Status copy_into_fresh(const std::filesystem::path& state_dir, SalvageReport& report) {
  const std::filesystem::path file = state_dir / Store::kFileName;
  {
    // The fresh ledger with this build's schema; closed again before the copy.
    auto fresh = Store::open(state_dir);
    if (!fresh) return fresh.error();
  }
  auto copy = readable_copy(report.moved_to);
  if (!copy) return copy.error();
  struct RemoveCopy {
    std::filesystem::path path;
    ~RemoveCopy() { remove_copy(path); }
  } remove_later{*copy};
  sqlite3* raw_from = nullptr;
  sqlite3_open_v2(copy->c_str(), &raw_from, SQLITE_OPEN_READONLY, nullptr);
  DbHandle from(raw_from);
  sqlite3* raw_to = nullptr;
  const int opened = sqlite3_open_v2(file.c_str(), &raw_to, SQLITE_OPEN_READWRITE, nullptr);
  DbHandle to(raw_to);
  if (opened != SQLITE_OK) {
    return Error{"cannot open the fresh ledger " + file.string() + ": " + sqlite3_errstr(opened)};
  }
  sqlite3_busy_timeout(raw_to, 2000);
  // Foreign keys on: a row whose run was not salvaged is refused, not left dangling.
  sqlite3_exec(raw_to, "PRAGMA foreign_keys = ON; BEGIN", nullptr, nullptr, nullptr);
  SalvageCopier copier(from.get(), to.get(), report);
  copier.copy("runs", {}, {}, /*resume_by_rowid=*/true);
  for (const std::string& run : copier.keys("SELECT run_id FROM runs ORDER BY rowid")) {
    // A census before its groups (their foreign key).
    for (const char* table : {"run_labels", "run_scopes", "marks", "phases", "boundaries",
                              "verdicts", "samples", "censuses", "census_groups"}) {
      copier.copy(table, "run_id = ?", run);
    }
  }
  for (const std::string& verdict : copier.keys("SELECT id FROM verdicts ORDER BY id")) {
    copier.copy("verdict_figures", "verdict_id = ?", verdict);
  }
  copier.copy("reservations", {}, {}, /*resume_by_rowid=*/true);
  if (sqlite3_exec(raw_to, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error{"cannot write the salvaged rows to " + file.string() + ": " +
                 sqlite3_errmsg(raw_to)};
  }
  return ok_status();
}

}  // namespace

Result<SalvageReport> salvage_ledger(const std::filesystem::path& state_dir,
                                     const std::string& reason,
                                     std::chrono::system_clock::time_point now) {
  SalvageReport report;
  report.reason = reason;
  const std::filesystem::path file = state_dir / Store::kFileName;
  report.moved_to = file.string() + ".corrupt-" + utc_stamp(now);
  if (auto s = move_aside(file, report.moved_to); !s) return s.error();
  if (auto copied = copy_into_fresh(state_dir, report); !copied) {
    // Nothing half-done is left in the way: the fresh file goes and the old one comes back.
    remove_copy(file);
    (void)move_aside(report.moved_to, file);
    return copied.error();
  }
  return report;
}

Result<std::unique_ptr<Store>> open_or_salvage(const std::filesystem::path& state_dir,
                                               StoreOptions options,
                                               std::optional<SalvageReport>& salvaged) {
  const std::filesystem::path file = state_dir / Store::kFileName;
  std::error_code ec;
  if (std::filesystem::is_regular_file(file, ec) && std::filesystem::file_size(file, ec) == 0 &&
      !ec) {
    // SQLite takes an empty file for an empty database; ramguard writes its schema at creation,
    // so this one was cut short (or truncated): what it held is not known.
    log::warning("store.ledger_empty",
                 {{"file", file.string()},
                  {"effect",
                   "a new ledger is created in its place; the runs and reservations "
                   "the file held, if any, are not known"}});
  }
  const LedgerCheck check = check_ledger_file(file);
  if (check.verdict == LedgerCheck::Verdict::kUnusable) {
    auto report = salvage_ledger(state_dir, check.reason, std::chrono::system_clock::now());
    if (!report) {
      return Error{"ledger " + (state_dir / Store::kFileName).string() + " is unusable (" +
                   check.reason + ") and could not be salvaged: " + report.error().message};
    }
    salvaged = std::move(*report);
  }
  // Checked just now (quick_check included): Store::open need not read every page again.
  if (check.verdict != LedgerCheck::Verdict::kUnchecked) options.verify_on_open = false;
  return Store::open(state_dir, options);
}

}  // namespace ramguard
