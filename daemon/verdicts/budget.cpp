#include "verdicts/budget.hpp"

#include <algorithm>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

const char* budget_state_name(BudgetState s) {
  switch (s) {
    case BudgetState::kOk:
      return "ok";
    case BudgetState::kHeadroom:
      return "headroom";
    case BudgetState::kOver:
      return "over";
  }
  return "ok";
}

BudgetInput budget_input(const RunLedger& ledger) {
  BudgetInput in;
  // Peaks in the ledger are of the memory that counts (RunMachine folds counted_peak_bytes()).
  in.counted_bytes = ledger.last.counted_bytes();
  in.file_bytes = ledger.last.file_bytes;
  in.peak_bytes = std::max(ledger.peak_bytes, in.counted_bytes);
  in.peak_exact = ledger.peak_exact;
  in.at = ledger.last.at;
  in.model_bytes = ledger.info.model_bytes;
  const PhaseRecord* top = nullptr;
  for (const auto& ph : ledger.phases) {
    if (!top || ph.peak_bytes > top->peak_bytes) top = &ph;
  }
  // Name the phase only when its peak is the run's peak.
  if (top && top->peak_bytes > 0 && top->peak_bytes >= in.peak_bytes) {
    in.phase = top->phase;
    in.round = top->round;
    in.peak_exact = top->peak_exact;
    in.peak_bytes = top->peak_bytes;
    return in;
  }
  // A long run no longer holds its earlier phases: their totals by name still say which one
  // peaked (not in which round).
  for (const auto& [name, totals] : ledger.earlier_phase_totals) {
    if (totals.max_peak_bytes > 0 && totals.max_peak_bytes >= in.peak_bytes) {
      in.phase = name;
      in.peak_bytes = totals.max_peak_bytes;
      break;
    }
  }
  return in;
}

namespace {
// Page cache is shown, never judged: the kernel reclaims it before it kills anything.
std::string cache_note(const BudgetInput& in) {
  if (in.file_bytes == 0) return "";
  return " (page cache " + format_bytes(static_cast<double>(in.file_bytes)) + " not counted)";
}
}  // namespace

BudgetAssessment assess_budget(const BudgetInput& in, const DetectorParams& p) {
  BudgetAssessment a;
  const double budget = static_cast<double>(p.budget_bytes);
  const double top = static_cast<double>(std::max(in.counted_bytes, in.peak_bytes));
  a.fraction = top / budget;
  const double warn_at = p.headroom_warn_fraction * budget;
  if (top <= warn_at) return a;

  std::map<std::string, double> figures{
      {"counted_bytes", static_cast<double>(in.counted_bytes)},
      {"file_bytes", static_cast<double>(in.file_bytes)},
      {"peak_bytes", static_cast<double>(in.peak_bytes)},
      {"budget_bytes", budget},
      {"fraction", a.fraction},
      {"peak_exact", in.peak_exact ? 1.0 : 0.0},
  };
  add_copies_figure(figures, "peak_copies", top, in.model_bytes);
  const std::string where = in.phase.empty() ? "" : " (during " + in.phase + ")";
  // The figure and the budget with enough digits to differ: "0.30 GB exceeds the 0.30 GB
  // budget" would hide the point.
  const auto [top_text, budget_text] = format_bytes_apart(top, budget);
  // Which figure: the counted memory now, or its peak (exact: the kernel's high-water mark
  // less the page cache and kernel memory read with it).
  const std::string what = (in.counted_bytes >= in.peak_bytes
                                ? std::string("counted memory (anon + shmem + swap) ")
                                : std::string(in.peak_exact ? "exact peak of counted memory "
                                                            : "sampled peak of counted memory ")) +
                           top_text;
  if (top > budget) {
    a.state = BudgetState::kOver;
    figures["over_bytes"] = top - budget;
    a.verdict = make_verdict(
        verdict_kind::kOverBudget, Severity::kCritical, false, in.round, in.phase,
        "Over budget: " + what + where + " exceeds the " + budget_text + " " + p.budget_name +
            ": " + format_bytes(top - budget) + " over" + cache_note(in) + ".",
        std::move(figures), in.at);
  } else {
    a.state = BudgetState::kHeadroom;
    figures["headroom_bytes"] = budget - top;
    a.verdict =
        make_verdict(verdict_kind::kHeadroom, Severity::kWarning, false, in.round, in.phase,
                     "Little headroom: " + what + where + " is " + fixed(a.fraction * 100, 0) +
                         "% of the " + budget_text + " " + p.budget_name + ", " +
                         format_bytes(budget - top) + " left" + cache_note(in) + ".",
                     std::move(figures), in.at);
  }
  return a;
}

}  // namespace ramguard
