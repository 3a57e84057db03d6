// The client's censuses in the run: kept in the ledger, written by the observers, and named in
// the growth and release verdicts (verdicts/census.hpp).
#include "runs/run_machine.hpp"
#include "verdicts/census.hpp"

namespace ramguard {

void RunMachine::add_census(CensusRecord census) {
  // One census per round end (and one at the end): a repeated one replaces the earlier.
  std::erase_if(ledger_.censuses, [&](const CensusRecord& c) {
    return c.round == census.round && c.at_end == census.at_end;
  });
  ledger_.censuses.push_back(std::move(census));
  if (ledger_.censuses.size() > kCensusHeld) ledger_.censuses.erase(ledger_.censuses.begin());
  const CensusRecord& added = ledger_.censuses.back();
  write("census", [&](RunObserver& o) { return o.census(ledger_, added); });
}

Verdict RunMachine::with_census(Verdict verdict) const {
  if (ledger_.censuses.empty()) return verdict;
  if (verdict.kind == "release") {
    if (verdict.passed) return verdict;
    const std::string clause = census_release_clause(ledger_.censuses, ledger_.info.model_bytes);
    if (!clause.empty()) verdict.summary += " " + clause;
    return verdict;
  }
  name_holders(ledger_.censuses, ledger_.info.model_bytes, verdict);
  return verdict;
}

}  // namespace ramguard
