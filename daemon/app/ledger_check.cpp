#include "app/ledger_check.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "common/log.hpp"
#include "store/state_lock.hpp"
#include "store/store.hpp"

namespace ramguard {

void log_salvage(const SalvageReport& report) {
  if (report.foreign) {
    log::error(
        "store.not_a_ledger",
        {{"reason", report.reason},
         {"moved_to", report.moved_to.string()},
         {"effect", "not a ramguard ledger: nothing of it imported; a fresh ledger starts"}});
    return;
  }
  const SalvageReport::Pages& pages = report.pages;
  log::error("store.ledger_salvaged",
             {{"reason", report.reason},
              {"moved_to", report.moved_to.string()},
              {"runs", report.copied("runs")},
              {"marks", report.copied("marks")},
              {"boundaries", report.copied("boundaries")},
              {"reservations", report.copied("reservations")},
              {"from_pages", pages.read},
              {"header_sane", pages.header_sane},
              {"pages_lost", pages.bad_pages + pages.missing_pages + pages.unaccounted_pages},
              {"lossless", report.lossless()}});
  for (const auto& table : report.tables) {
    if (table.refused == 0 && table.complete) continue;
    log::warning("store.salvage_lost", {{"table", table.name},
                                        {"copied", table.copied},
                                        {"recovered", table.recovered},
                                        {"refused", table.refused},
                                        {"unreadable", table.unreadable},
                                        {"complete", table.complete}});
  }
  for (const auto& loss : report.losses) log::warning("store.salvage_lost", {{"detail", loss}});
}

int check_ledger_offline(const std::string& state_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir, ec)) {
    std::fprintf(stderr, "ramguardd: --check-ledger %s: not a state directory\n",
                 state_dir.c_str());
    return 1;
  }
  auto lock = StateLock::acquire(state_dir);
  if (!lock) {
    std::fprintf(stderr, "ramguardd: %s\n", lock.error().message.c_str());
    return 1;
  }
  std::optional<SalvageReport> salvaged;
  bool emptied = false;
  auto opened = open_or_salvage(state_dir, {}, salvaged, &emptied);
  if (salvaged) std::cout << salvaged->summary();
  if (emptied) {
    std::cout << "the ledger file was empty (0 bytes): what it held, if anything, is not known\n";
  }
  if (!opened) {
    std::fprintf(stderr, "ramguardd: %s\n", opened.error().message.c_str());
    return 1;
  }
  auto runs = (*opened)->run_count();
  auto reservations = (*opened)->load_reservations();
  std::cout << (*opened)->path().string() << ": " << (salvaged ? "salvaged" : "ok") << ", "
            << (runs ? std::to_string(*runs) : std::string("?")) << " runs, "
            << (reservations ? std::to_string(reservations->size()) : std::string("?"))
            << " reservations\n";
  // Something the old file held did not come over: say so to scripts too (like fsck's 1/4).
  if (salvaged && salvaged->foreign) {
    std::cout << "the file was not a ramguard ledger: the ledger it replaced, if any, is lost\n";
    return 2;
  }
  if ((salvaged && !salvaged->lossless()) || emptied) {
    std::cout << "some rows of the old ledger could not be salvaged\n";
    return 2;
  }
  return 0;
}

}  // namespace ramguard
