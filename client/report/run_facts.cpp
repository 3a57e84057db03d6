#include "report/run_facts.hpp"

#include <algorithm>

namespace ramguard::report {

std::vector<PhaseGap> phase_gaps(const v1::RunStatus& run) {
  std::vector<const v1::PhaseStat*> phases;
  for (const v1::PhaseStat& p : run.phases()) phases.push_back(&p);
  std::stable_sort(phases.begin(), phases.end(), [](const auto* a, const auto* b) {
    return a->begin_seconds() < b->begin_seconds();
  });
  std::vector<PhaseGap> gaps;
  for (std::size_t i = 1; i < phases.size(); ++i) {
    const v1::PhaseStat& prev = *phases[i - 1];
    const v1::PhaseStat& next = *phases[i];
    if (prev.round() != next.round()) continue;
    const double gap = next.begin_seconds() - (prev.begin_seconds() + prev.duration_seconds());
    if (gap < 0) continue;
    gaps.push_back({next.round(), prev.phase(), next.phase(), gap});
  }
  return gaps;
}

double figure(const v1::Verdict& verdict, std::initializer_list<const char*> names,
              double fallback) {
  for (const char* name : names) {
    auto it = verdict.figures().find(name);
    if (it != verdict.figures().end()) return it->second;
  }
  return fallback;
}

double worst_gap_seconds(const v1::RunStatus& run) {
  double worst = 0;
  bool configured = false;
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() != "phase_gap") continue;
    const double seconds = figure(v, {"gap_seconds", "seconds", "interval_seconds"}, -1);
    if (seconds < 0) continue;
    configured = true;
    worst = std::max(worst, seconds);
  }
  if (configured) return worst;
  for (const PhaseGap& gap : phase_gaps(run)) worst = std::max(worst, gap.seconds);
  return worst;
}

const v1::Verdict* find_verdict(const v1::RunStatus& run, const std::string& kind) {
  const v1::Verdict* found = nullptr;
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() == kind && !v.cleared()) found = &v;
  }
  return found;
}

double estimate_ratio(const v1::RunStatus& run) {
  if (run.estimate_bytes() == 0) return 0;
  return static_cast<double>(run.peak_bytes()) / static_cast<double>(run.estimate_bytes());
}

std::uint32_t rounds_seen(const v1::RunStatus& run) {
  std::uint32_t rounds = run.round();
  for (const v1::BoundaryReading& b : run.boundaries()) rounds = std::max(rounds, b.round());
  for (const v1::PhaseStat& p : run.phases()) rounds = std::max(rounds, p.round());
  return rounds;
}

}  // namespace ramguard::report
