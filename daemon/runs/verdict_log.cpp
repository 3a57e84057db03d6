#include "runs/verdict_log.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "ramguard/base/verdict_rank.hpp"
#include "runs/held_room.hpp"

namespace ramguard {

void VerdictLog::emit(Verdict verdict, const std::function<void(const Verdict&)>& persist,
                      std::vector<Verdict>* out) {
  ledger_.verdicts.push_back(verdict);
  persist(verdict);
  trim();
  if (verdict.update) {  // the log has the warning it restates
    if (out != nullptr) out->push_back(std::move(verdict));
    return;
  }
  const log::Level level =
      verdict.severity == Severity::kInfo || verdict.cleared
          ? log::Level::kInfo
          : (verdict.severity == Severity::kWarning ? log::Level::kWarning : log::Level::kError);
  log::write(level, "verdict",
             {{"kind", verdict.kind},
              {"severity", severity_name(verdict.severity)},
              {"passed", verdict.passed},
              {"cleared", verdict.cleared},
              {"run", ledger_.info.run_id},
              {"job", ledger_.info.job},
              {"round", verdict.round},
              {"phase", verdict.phase},
              {"summary", verdict.summary}});
  if (out != nullptr) out->push_back(std::move(verdict));
}

void VerdictLog::resumed(Verdict verdict) {
  ledger_.verdicts.push_back(std::move(verdict));
  replied_ = ledger_.verdicts.size();
  trim();
}

// A mark's or run end's reply carries every verdict raised since the previous reply: those of
// this mark, and those decided in between (a settled floor's growth verdict, a runaway), so the
// coordinator hears of them without asking.
std::vector<Verdict> VerdictLog::take_unreplied() {
  std::vector<Verdict> out(ledger_.verdicts.begin() + static_cast<long>(replied_),
                           ledger_.verdicts.end());
  replied_ = ledger_.verdicts.size();
  return out;
}

// Drops the oldest verdicts past the held count; the worst dropped one is kept for status
// replies, the store has them all. Those not yet in a reply go only past twice the count (a
// run that raises them without marking): the next reply carries the newest.
void VerdictLog::trim(bool exact) {
  const std::size_t held = std::max<std::size_t>(params_.held_verdicts, 16);
  auto& verdicts = ledger_.verdicts;
  if (verdicts.size() > (exact ? held : held + held / 4)) {
    const std::size_t past = verdicts.size() - held;
    const std::size_t drop = verdicts.size() > 2 * held ? past : std::min(past, replied_);
    if (drop == 0) return;
    const auto facts = [](const Verdict& v) {
      return VerdictFacts{v.kind, severity_name(v.severity), v.passed, v.cleared};
    };
    const auto end = verdicts.begin() + static_cast<long>(drop);
    auto worst = worst_verdict(verdicts.begin(), end, facts);
    const auto& kept = ledger_.worst_earlier_verdict;
    if (worst != end && (!kept || !worse_verdict(facts(*kept), facts(*worst)))) {
      ledger_.worst_earlier_verdict = *worst;
    }
    verdicts.erase(verdicts.begin(), end);
    replied_ -= std::min(drop, replied_);
    ledger_.earlier_verdicts += drop;
  }
  keep_room(verdicts, held + held / 4 + 1);
}

}  // namespace ramguard
