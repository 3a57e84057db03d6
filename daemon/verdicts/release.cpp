#include "verdicts/release.hpp"

#include <string>

#include "common/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

const char* release_state_name(ReleaseState s) {
  switch (s) {
    case ReleaseState::kPending:
      return "pending";
    case ReleaseState::kPassed:
      return "passed";
    case ReleaseState::kFailed:
      return "failed";
  }
  return "pending";
}

ReleaseAssessment assess_release(const ReleaseInput& in, const DetectorParams& p) {
  ReleaseAssessment a;
  const double baseline = static_cast<double>(in.baseline.rss_bytes);
  a.limit_bytes = in.baseline.rss_bytes + p.release_slack_bytes;
  std::map<std::string, double> figures{
      {"baseline_bytes", baseline},
      {"slack_bytes", static_cast<double>(p.release_slack_bytes)},
      {"limit_bytes", static_cast<double>(a.limit_bytes)},
      {"grace_seconds", p.release_grace_seconds},
  };
  const auto pass = [&](double seconds, const Instant& at, const std::string& how) {
    a.state = ReleaseState::kPassed;
    a.seconds_taken = seconds;
    figures["seconds_taken"] = seconds;
    figures["last_bytes"] = static_cast<double>(a.last_bytes);
    a.verdict = make_verdict(verdict_kind::kRelease, Severity::kInfo, true, 0, "",
                             "Release passed: " + how + " " + format_seconds(seconds) +
                                 " after the run ended (limit " +
                                 format_bytes(static_cast<double>(a.limit_bytes)) + " = baseline " +
                                 format_bytes(baseline) + " + " +
                                 format_bytes(static_cast<double>(p.release_slack_bytes)) + ").",
                             figures, at);
    return a;
  };

  bool seen = false;
  Instant last_at = in.ended;
  for (const auto& r : in.after_end) {
    const double t = seconds_between(in.ended, r.at);
    if (t < 0) continue;  // before the end mark
    if (t > p.release_grace_seconds) break;
    seen = true;
    a.last_bytes = r.rss_bytes;
    last_at = r.at;
    if (r.rss_bytes <= a.limit_bytes) {
      return pass(t, r.at, "RSS fell to " + format_bytes(static_cast<double>(r.rss_bytes)));
    }
  }
  if (in.exited) {
    const double t = seconds_between(in.ended, *in.exited);
    if (t >= 0 && t <= p.release_grace_seconds) {
      return pass(t, *in.exited, "the process exited, returning its memory,");
    }
  }
  if (seconds_between(in.ended, in.now) < p.release_grace_seconds) return a;  // pending

  a.state = ReleaseState::kFailed;
  if (!seen) a.last_bytes = in.baseline.rss_bytes;  // nothing read: held is unknown, say 0
  a.held_bytes = static_cast<double>(a.last_bytes) - baseline;
  figures["last_bytes"] = static_cast<double>(a.last_bytes);
  figures["held_bytes"] = a.held_bytes;
  add_copies_figure(figures, "held_copies", a.held_bytes, in.model_bytes);
  std::string summary =
      seen ? "Release failed: " + format_bytes(static_cast<double>(a.last_bytes)) +
                 " still resident " + format_seconds(p.release_grace_seconds) +
                 " after the run ended, holding " + format_bytes(a.held_bytes) +
                 copies_note(a.held_bytes, in.model_bytes) + " above the baseline of " +
                 format_bytes(baseline) + "."
           : "Release failed: no reading within " + format_seconds(p.release_grace_seconds) +
                 " after the run ended showed RSS back under " +
                 format_bytes(static_cast<double>(a.limit_bytes)) + ".";
  a.verdict = make_verdict(verdict_kind::kRelease, Severity::kWarning, false, 0, "",
                           std::move(summary), std::move(figures), seen ? last_at : in.now);
  return a;
}

}  // namespace ramguard
