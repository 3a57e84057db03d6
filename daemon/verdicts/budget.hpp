#pragma once
// The budget: over_budget (critical) when the memory that counts (anon + shmem + swap) or its
// peak is above budget_bytes; headroom (warning) when it is above headroom_warn_fraction x
// budget but within it. Page cache is named beside the figure, never judged.

#include <cstdint>
#include <optional>
#include <string>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class BudgetState { kOk, kHeadroom, kOver };
const char* budget_state_name(BudgetState s);

struct BudgetInput {
  std::uint64_t counted_bytes = 0;  // latest reading's counted_bytes()
  std::uint64_t file_bytes = 0;     // latest reading's page cache: named, not judged
  std::uint64_t peak_bytes = 0;     // of counted memory; exact (high-water mark) where possible
  bool peak_exact = false;
  std::string phase;  // where the peak happened, if known
  std::uint32_t round = 0;
  Instant at;
  std::uint64_t model_bytes = 0;
};

// From a ledger: latest counted memory, run peak, and the phase record holding the largest peak.
BudgetInput budget_input(const RunLedger& ledger);

struct BudgetAssessment {
  BudgetState state = BudgetState::kOk;
  double fraction = 0;  // max(counted, peak) / budget
  std::optional<Verdict> verdict;
};

BudgetAssessment assess_budget(const BudgetInput& input, const DetectorParams& params);

}  // namespace ramguard
