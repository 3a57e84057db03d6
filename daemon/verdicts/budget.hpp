#pragma once
// The budget: over_budget (critical) when RSS or the exact peak is above budget_bytes;
// headroom (warning) when the peak is above headroom_warn_fraction x budget but within it.

#include <cstdint>
#include <optional>
#include <string>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class BudgetState { kOk, kHeadroom, kOver };
const char* budget_state_name(BudgetState s);

struct BudgetInput {
  std::uint64_t rss_bytes = 0;   // latest reading
  std::uint64_t peak_bytes = 0;  // exact (high-water mark) where possible
  bool peak_exact = false;
  std::string phase;  // where the peak happened, if known
  std::uint32_t round = 0;
  Instant at;
  std::uint64_t model_bytes = 0;
};

// From a ledger: latest RSS, run peak, and the phase record holding the largest peak.
BudgetInput budget_input(const RunLedger& ledger);

struct BudgetAssessment {
  BudgetState state = BudgetState::kOk;
  double fraction = 0;  // max(rss, peak) / budget
  std::optional<Verdict> verdict;
};

BudgetAssessment assess_budget(const BudgetInput& input, const DetectorParams& params);

}  // namespace ramguard
