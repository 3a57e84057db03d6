// Restart recovery: the active runs' heads and records from the queries, and the runs that
// cannot be decoded ended lost by the writer.
#include "common/log.hpp"
#include "store/store.hpp"

namespace ramguard {

Result<std::vector<RunLedger>> Store::load_active_runs() {
  std::vector<RunLedger> loaded;
  auto each = for_each_active_run([&](RunLedger l) -> Status {
    if (auto s = load_details(l); !s) return s;
    loaded.push_back(std::move(l));
    return ok_status();
  });
  if (!each) return each.error();
  return loaded;
}

Status Store::for_each_active_run(const std::function<Status(RunLedger head)>& resume) {
  // The runs' rows first (small), then each run's records, read by `resume` before the next.
  std::vector<RunLedger> runs;
  std::vector<std::pair<std::string, std::string>> undecodable;  // run id, reason
  if (auto s = active_run_heads(runs, undecodable); !s) return s;
  for (RunLedger& l : runs) {
    RunLedger head = std::move(l);
    const std::string run_id = head.info.run_id;
    Status s = load_head_details(head.info);
    if (s) s = resume(std::move(head));
    if (!s) undecodable.emplace_back(run_id, s.error().message);
  }
  // One bad run must not cost the others their recovery: skip it, say why, and end it lost so
  // the next start does not trip over it again (impossible on a read-only ledger; then it
  // stays active in the file and is skipped again).
  for (const auto& [run_id, reason] : undecodable) {
    const Status ended = end_undecodable(run_id);
    log::error("recovery.run_skipped", {{"run", run_id},
                                        {"reason", reason},
                                        {"ended_lost", ended.ok()},
                                        {"end_error", ended ? "" : ended.error().message}});
  }
  return ok_status();
}

}  // namespace ramguard
