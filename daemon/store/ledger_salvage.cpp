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
#include "store/ledger_salvage_pages.hpp"
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

const SalvageReport::Table* SalvageReport::table(const std::string& name) const {
  for (const auto& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::uint64_t SalvageReport::copied(const std::string& name) const {
  const Table* t = table(name);
  return t ? t->copied + t->recovered : 0;
}

bool SalvageReport::lossless() const {
  if (foreign) return false;
  for (const auto& t : tables) {
    if (t.refused > 0 || !t.complete) return false;
  }
  return true;
}

bool SalvageReport::reservations_known() const {
  if (foreign) return false;
  for (const char* name : {"reservations", "runs"}) {
    const Table* t = table(name);
    if (t == nullptr || !t->complete) return false;
  }
  return true;
}

std::string SalvageReport::unknown_text() const {
  if (foreign) return "the ledger file was another application's database";
  std::string out;
  for (const char* name : {"reservations", "runs"}) {
    const Table* t = table(name);
    if (t != nullptr && t->complete) continue;
    out += std::string(out.empty() ? "" : " and ") + name;
  }
  return out.empty() ? out : "the salvaged ledger may lack " + out;
}

std::string SalvageReport::summary() const {
  std::string out = (foreign ? "not a ramguard ledger (" : "unusable ledger (") + reason +
                    ") moved aside to " + moved_to.string() +
                    (foreign ? "; nothing of it was imported: a fresh ledger starts empty\n"
                             : "; salvaged into a fresh ledger:\n");
  for (const auto& t : tables) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %-16s %10llu copied %8llu recovered from pages %6llu refused %6llu "
                  "unreadable%s\n",
                  t.name.c_str(), static_cast<unsigned long long>(t.copied),
                  static_cast<unsigned long long>(t.recovered),
                  static_cast<unsigned long long>(t.refused),
                  static_cast<unsigned long long>(t.unreadable), t.complete ? "" : " (incomplete)");
    out += line;
  }
  if (pages.read) {
    const Pages& p = pages;
    out += "  pages: " + std::to_string(p.page_count) + " of " + std::to_string(p.page_size) +
           " bytes, " + std::to_string(p.wal_pages) + " from the write-ahead log (" +
           (p.header_sane ? "header read" : "header garbled, size probed") + ", sqlite_schema " +
           (p.schema_read ? "read" : "unreadable: tables matched by shape") + "); " +
           std::to_string(p.tree_pages) + " in trees, " + std::to_string(p.free_pages) + " free, " +
           std::to_string(p.overflow_pages) + " overflow, " + std::to_string(p.orphan_pages) +
           " orphan leaves; lost: " + std::to_string(p.bad_pages) + " tree pages unreadable, " +
           std::to_string(p.missing_pages) + " missing (cut short), " +
           std::to_string(p.unaccounted_pages) + " garbled or zeroed, " +
           std::to_string(p.bad_cells) + " cells unreadable, " +
           std::to_string(p.ambiguous_records) + " records of uncertain table\n";
  }
  for (const auto& loss : losses) out += "  lost: " + loss + "\n";
  if (lossless()) out += "  nothing was lost\n";
  if (!reservations_known()) out += "  not known: " + unknown_text() + "\n";
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
  if (report.foreign) return ok_status();  // not a ledger: none of its rows are runs
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
  // Reservations first: what admission must know before it admits anything again.
  copier.copy("reservations", {}, {}, /*resume_by_rowid=*/true);
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
  // A table SQL read to its end is whole (a run's rows only when every run was read, a
  // verdict's figures only when every verdict was); the rest is read page by page.
  auto read_whole = [&](const char* name) {
    const SalvageReport::Table* t = report.table(name);
    return t != nullptr && t->unreadable == 0;
  };
  for (auto& t : report.tables) {
    t.complete = t.unreadable == 0 &&
                 (t.name == "reservations" || t.name == "runs" || read_whole("runs")) &&
                 (t.name != "verdict_figures" || read_whole("verdicts"));
  }
  recover_pages(report.moved_to, to.get(), report);
  if (sqlite3_exec(raw_to, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error{"cannot write the salvaged rows to " + file.string() + ": " +
                 sqlite3_errmsg(raw_to)};
  }
  return ok_status();
}

}  // namespace

Result<SalvageReport> salvage_ledger(const std::filesystem::path& state_dir,
                                     const std::string& reason, bool foreign,
                                     std::chrono::system_clock::time_point now) {
  SalvageReport report;
  report.reason = reason;
  report.foreign = foreign;
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
                                               std::optional<SalvageReport>& salvaged,
                                               bool* emptied) {
  const std::filesystem::path file = state_dir / Store::kFileName;
  std::error_code ec;
  if (std::filesystem::is_regular_file(file, ec) && std::filesystem::file_size(file, ec) == 0 &&
      !ec) {
    if (emptied != nullptr) *emptied = true;
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
    auto report =
        salvage_ledger(state_dir, check.reason, check.foreign, std::chrono::system_clock::now());
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
