#pragma once
// Which verdict is the worst: one order for the daemon's compare rows, the ledger's run listing
// (in SQL) and the client's reports, over plain values so that every layer can use it.
//
// Worse first, key by key:
//   1. standing before cleared (a cleared warning no longer holds);
//   2. higher severity: critical, warning, info, then anything unnamed;
//   3. failed before passed;
//   4. the kind's weight (verdict_kind_weight): an OOM kill in the run's cgroup, the coordinator
//      failed, the process died, over budget, leak, runaway,
//      release, headroom, growth warning, phase gap, estimate accuracy, growth class, plateau,
//      then kinds this list does not know;
//   5. the kind's name, so that two different kinds never tie.
// Verdicts equal under all five (the same kind, severity and outcome) are equally bad: callers
// take the latest of them.

#include <cstdint>
#include <string>
#include <string_view>

namespace ramguard {

struct VerdictFacts {
  std::string_view kind;
  std::string_view severity;  // "info", "warning" or "critical", as on the wire and in the ledger
  bool passed = true;
  bool cleared = false;
};

// 0 for kinds the order does not know.
int verdict_kind_weight(std::string_view kind);

// A release verdict's outcome as metrics, reports and compare tables name it: "pass", "fail",
// "not_verified" (the process exited before a settled reading showed a release: never a pass;
// the verdict's figures carry not_verified = 1), or "allocator" for a release that did not pass
// at info severity, where what stays resident is free memory the C allocator keeps, not the
// application's (not alerted on).
inline const char* release_outcome(bool passed, std::string_view severity,
                                   bool not_verified = false) {
  if (passed) return "pass";
  if (not_verified) return "not_verified";
  return severity == "info" ? "allocator" : "fail";
}

// Keys 1 to 4 as one number: higher is worse.
std::int64_t verdict_rank(const VerdictFacts& v);

// True when a is strictly worse than b (all five keys).
bool worse_verdict(const VerdictFacts& a, const VerdictFacts& b);

// verdict_rank as an SQL expression over a row with columns kind, severity (the name), passed
// and cleared (0 or 1) of the table or alias `table`. Order by it DESC, then kind DESC, then
// recency to pick the same verdict as worst_verdict.
std::string verdict_rank_sql(std::string_view table);

// The worst of [first, last) by the order above, the later one among equals; last when empty.
// facts(element) gives the element's VerdictFacts.
template <typename It, typename Facts>
It worst_verdict(It first, It last, Facts facts) {
  It worst = last;
  for (It it = first; it != last; ++it) {
    if (worst == last || !worse_verdict(facts(*worst), facts(*it))) worst = it;
  }
  return worst;
}

}  // namespace ramguard
