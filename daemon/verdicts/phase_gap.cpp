#include "verdicts/phase_gap.hpp"

#include <algorithm>
#include <optional>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

namespace {

bool matches(const MarkRecord& m, const std::string& phase, MarkEdge edge) {
  const MarkKind kind = edge == MarkEdge::kBegin ? MarkKind::kPhaseBegin : MarkKind::kPhaseEnd;
  return m.kind == kind && m.phase == phase;
}

}  // namespace

PhaseGapAssessment measure_phase_gaps(std::span<const MarkRecord> marks,
                                      const DetectorParams& params) {
  PhaseGapAssessment a;
  for (std::size_t r = 0; r < params.phase_gaps.size(); ++r) {
    const PhaseGapRule& rule = params.phase_gaps[r];
    std::optional<std::size_t> open;  // index of the pending `from` mark
    for (std::size_t k = 0; k < marks.size(); ++k) {
      const MarkRecord& m = marks[k];
      // A mark can be both ends of a rule (x.end -> x.end is silly but harmless): close first.
      if (open && matches(m, rule.to_phase, rule.to_edge)) {
        const MarkRecord& from = marks[*open];
        PhaseGap g;
        g.rule_index = r;
        g.rule = phase_gap_rule_name(rule);
        g.round = from.round;
        g.seconds = seconds_between(from.reading.at, m.reading.at);
        g.max_seconds = rule.max_seconds;
        g.over = g.seconds > rule.max_seconds;
        g.from_at = from.reading.at;
        g.to_at = m.reading.at;
        a.worst_seconds = std::max(a.worst_seconds, g.seconds);
        if (g.over) {
          a.verdicts.push_back(make_verdict(
              verdict_kind::kPhaseGap, Severity::kWarning, false, g.round, rule.to_phase,
              "Phase gap " + g.rule + " in round " + std::to_string(g.round) + " took " +
                  format_seconds(g.seconds) + ", over the " + format_seconds(rule.max_seconds) +
                  " target.",
              {{"seconds", g.seconds}, {"max_seconds", rule.max_seconds}}, g.to_at));
        }
        a.gaps.push_back(std::move(g));
        open.reset();
        continue;
      }
      if (matches(m, rule.from_phase, rule.from_edge)) open = k;
    }
  }
  return a;
}

}  // namespace ramguard
