#include "verdicts/release.hpp"

#include <algorithm>
#include <string>

#include "ramguard/base/units.hpp"
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
    case ReleaseState::kNotVerified:
      return "not_verified";
  }
  return "pending";
}

std::string allocator_remedy(const std::string& allocator_name) {
  if (allocator_name == "jemalloc") {
    return "let jemalloc return free pages sooner (MALLOC_CONF=background_thread:true,"
           "dirty_decay_ms:1000,muzzy_decay_ms:0) or purge it after freeing (mallctl "
           "arena.<all>.purge)";
  }
  const std::string tunables =
      "set MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_TRIM_THRESHOLD_=134217728";
  const std::string jemalloc = "run it under jemalloc (ramguard exec --allocator jemalloc)";
  if (allocator_name == "glibc") {
    return jemalloc + ", or " + tunables + ", or call malloc_trim(0) after freeing large objects";
  }
  return jemalloc + ", or under glibc " + tunables + " or call malloc_trim(0)";
}

namespace {

double probe_freed(std::uint64_t before, std::uint64_t after) {
  return before > after ? static_cast<double>(before - after) : 0.0;
}

// What the end's probes returned before the end reading: reference cycles (gc.collect()) and
// the allocator's free memory (malloc_trim(0)); empty when they returned nothing.
std::string probes_clause(const EndFacts& facts, std::uint64_t model_bytes,
                          std::map<std::string, double>& figures) {
  std::string text;
  if (facts.gc) {
    const double freed = probe_freed(facts.gc->rss_before_bytes, facts.gc->rss_after_bytes);
    figures["cycles_bytes"] = freed;
    add_copies_figure(figures, "cycles_copies", freed, model_bytes);
    if (freed > 0) {
      text += format_bytes(freed) + copies_note(freed, model_bytes) +
              " held by reference cycles until gc.collect() at the end";
    }
  }
  if (facts.trim) {
    const double freed = probe_freed(facts.trim->rss_before_bytes, facts.trim->rss_after_bytes);
    figures["trim_freed_bytes"] = freed;
    add_copies_figure(figures, "trim_freed_copies", freed, model_bytes);
    if (freed > 0) {
      text += (text.empty() ? "" : ", ") + format_bytes(freed) + copies_note(freed, model_bytes) +
              " of free memory the allocator kept until it was asked to return it (" +
              (facts.allocator_name == "jemalloc" ? "arena purge" : "malloc_trim(0)") + ")";
    }
  }
  return text;
}

}  // namespace

ReleaseAssessment assess_release(const ReleaseInput& in, const DetectorParams& p) {
  ReleaseAssessment a;
  // Judged on the memory that counts: page cache left by the run (its checkpoint files) is
  // the kernel's to reclaim, not memory the run failed to release.
  const double baseline = static_cast<double>(in.baseline.counted_bytes());
  a.limit_bytes = in.baseline.counted_bytes() + p.release_slack_bytes;
  std::map<std::string, double> figures{
      {"baseline_bytes", baseline},
      {"slack_bytes", static_cast<double>(p.release_slack_bytes)},
      {"limit_bytes", static_cast<double>(a.limit_bytes)},
      {"grace_seconds", p.release_grace_seconds},
  };
  const auto pass = [&](double seconds, const Instant& at, const std::string& how) {
    a.state = ReleaseState::kPassed;
    a.seconds_taken = seconds;
    figures["taken_seconds"] = seconds;
    figures["last_bytes"] = static_cast<double>(a.last_bytes);
    std::string probes;
    if (in.facts) probes = probes_clause(*in.facts, in.model_bytes, figures);
    // Memory the allocator gave back only when asked would have stayed without the probe.
    const bool trimmed = figures.count("trim_freed_bytes") != 0 &&
                         figures["trim_freed_bytes"] > 0.5 * p.release_slack_bytes;
    a.verdict = make_verdict(verdict_kind::kRelease, Severity::kInfo, true, 0, "",
                             "Release passed: " + how + ", " + format_seconds(seconds) +
                                 " after the run ended (limit " +
                                 format_bytes(static_cast<double>(a.limit_bytes)) + " = baseline " +
                                 format_bytes(baseline) + " + slack " +
                                 format_bytes(static_cast<double>(p.release_slack_bytes)) + ")" +
                                 (probes.empty() ? "" : "; the end's probes returned " + probes) +
                                 (trimmed ? ". Without asking, the allocator keeps it: " +
                                                allocator_remedy(in.facts->allocator_name)
                                          : "") +
                                 ".",
                             figures, at);
    return a;
  };

  bool seen = false;
  Instant last_at = in.ended;
  for (const auto& r : in.after_end) {
    const double t = seconds_between(in.ended, r.at);
    if (t < 0) continue;  // before the end mark
    if (t > p.release_grace_seconds) break;
    if (in.exited && r.at.monotonic > in.exited->monotonic) break;  // the kernel's clean-up
    seen = true;
    a.last_bytes = r.counted_bytes();
    a.last_file_bytes = r.file_bytes;
    last_at = r.at;
    if (a.last_bytes <= a.limit_bytes) {
      return pass(t, r.at,
                  "counted memory (anon + shmem + swap) fell to " +
                      format_bytes(static_cast<double>(a.last_bytes)));
    }
  }
  // An exit returns the memory, but that is the kernel's clean-up, not the application's
  // release: judged on what the process did between the end and its exit.
  std::optional<double> held_until_exit;
  if (in.exited) {
    const double t = seconds_between(in.ended, *in.exited);
    if (t >= 0 && t <= p.release_grace_seconds) {
      if (!seen || t <= in.settle_seconds) {
        a.state = ReleaseState::kNotVerified;
        a.seconds_taken = t;
        figures["exited_after_seconds"] = t;
        figures["settle_seconds"] = in.settle_seconds;
        figures["not_verified"] = 1;
        if (seen) figures["last_bytes"] = static_cast<double>(a.last_bytes);
        std::string summary =
            "Release not verified: the process exited " + format_seconds(t) +
            " after the run ended, within the " + format_seconds(in.settle_seconds) +
            " settle window, so no settled reading shows whether it released its memory" +
            (seen ? " (its last reading: counted memory (anon + shmem + swap) " +
                        format_bytes(static_cast<double>(a.last_bytes)) + ", limit " +
                        format_bytes(static_cast<double>(a.limit_bytes)) + ")"
                  : std::string()) +
            ". An exit is the kernel's clean-up, not the application's release.";
        a.verdict = make_verdict(verdict_kind::kRelease, Severity::kInfo, false, 0, "",
                                 std::move(summary), std::move(figures), *in.exited);
        return a;
      }
      held_until_exit = t;  // held above the limit past the settle window, then exited
    }
  }
  if (!held_until_exit && seconds_between(in.ended, in.now) < p.release_grace_seconds) {
    return a;  // pending
  }

  a.state = ReleaseState::kFailed;
  if (!seen) a.last_bytes = in.baseline.counted_bytes();  // nothing read: held is unknown, say 0
  a.held_bytes = static_cast<double>(a.last_bytes) - baseline;
  figures["last_bytes"] = static_cast<double>(a.last_bytes);
  figures["held_bytes"] = a.held_bytes;
  add_copies_figure(figures, "held_copies", a.held_bytes, in.model_bytes);
  if (held_until_exit) {
    a.seconds_taken = *held_until_exit;
    figures["held_seconds"] = *held_until_exit;
    figures["exited_after_seconds"] = *held_until_exit;
  }
  Severity severity = Severity::kWarning;
  std::string summary;
  if (!seen) {
    summary = "Release failed: no reading within " + format_seconds(p.release_grace_seconds) +
              " after the run ended showed counted memory back under " +
              format_bytes(static_cast<double>(a.limit_bytes)) + ".";
  } else {
    // The page cache beside it is named and left out of what is held.
    const std::string resident =
        format_bytes(static_cast<double>(a.last_bytes)) +
        " of counted memory (anon + shmem + swap) " +
        (held_until_exit ? "held for " + format_seconds(*held_until_exit) +
                               " after the run ended, until the process exited (the exit "
                               "returned it, not the application)"
                         : "still held when the " + format_seconds(p.release_grace_seconds) +
                               " grace after the run ended ran out") +
        (a.last_file_bytes > 0
             ? " (page cache " + format_bytes(static_cast<double>(a.last_file_bytes)) +
                   " beside it, not counted)"
             : std::string());
    figures["file_bytes"] = static_cast<double>(a.last_file_bytes);
    const std::string above = format_bytes(a.held_bytes) +
                              copies_note(a.held_bytes, in.model_bytes) +
                              " above the baseline of " + format_bytes(baseline);
    if (!in.facts) {
      summary = "Release failed: " + resident + ", holding " + above + ".";
    } else {
      const EndFacts& facts = *in.facts;
      const std::string probes = probes_clause(facts, in.model_bytes, figures);
      // Free memory still resident: with a trim probe the allocator returned what it could.
      double free_bytes = 0;
      if (facts.allocator && !facts.trim) {
        // Free chunks count whether resident or not (pages an earlier malloc_trim returned
        // still do): what is resident and not allocated bounds them.
        const double allocated = static_cast<double>(facts.allocator->allocated_bytes);
        free_bytes = std::min(static_cast<double>(facts.allocator->retained_bytes),
                              std::max(0.0, static_cast<double>(a.last_bytes) - allocated));
      }
      a.allocator_free_bytes = std::clamp(free_bytes, 0.0, std::max(0.0, a.held_bytes));
      a.live_bytes = std::max(0.0, a.held_bytes - a.allocator_free_bytes);
      a.allocator_retention = facts.allocator && a.held_bytes > 0 &&
                              a.allocator_free_bytes >= kAllocatorRetentionShare * a.held_bytes;
      figures["live_bytes"] = a.live_bytes;
      figures["allocator_free_bytes"] = a.allocator_free_bytes;
      add_copies_figure(figures, "live_copies", a.live_bytes, in.model_bytes);
      add_copies_figure(figures, "allocator_free_copies", a.allocator_free_bytes, in.model_bytes);
      figures["allocator_retention"] = a.allocator_retention ? 1.0 : 0.0;
      std::string allocated;
      if (facts.allocator) {
        const double live = static_cast<double>(facts.allocator->allocated_bytes);
        figures["allocated_bytes"] = live;
        allocated = "; " + (facts.allocator_name.empty() ? "the allocator" : facts.allocator_name) +
                    " counts " + format_bytes(live) + " allocated in all, the baseline's included";
      }
      const std::string name =
          facts.allocator_name.empty() ? "the allocator" : facts.allocator_name;
      const std::string split =
          "live objects " + format_bytes(a.live_bytes) + copies_note(a.live_bytes, in.model_bytes) +
          ", free memory kept by " + name + " " + format_bytes(a.allocator_free_bytes) +
          copies_note(a.allocator_free_bytes, in.model_bytes) + allocated +
          (probes.empty() ? "" : "; the end's probes had returned " + probes);
      if (a.allocator_retention) {
        // Nothing the application holds: not a leak, a remedy of the allocator's.
        severity = Severity::kInfo;
        summary = "Release kept by the allocator, not leaked: " + resident + ", " + above +
                  ", of which " + split + ". The application does not hold it; to return it, " +
                  allocator_remedy(facts.allocator_name) + ".";
      } else {
        summary = "Release failed: " + resident + ", holding " + above + ": " + split +
                  ". Live objects left after the run are a leak" +
                  // A remedy only for a part worth one (a fifth of what stays, or more).
                  (a.allocator_free_bytes >= 0.2 * a.held_bytes
                       ? "; for the allocator's part, " + allocator_remedy(facts.allocator_name)
                       : std::string()) +
                  ".";
      }
    }
  }
  a.verdict =
      make_verdict(verdict_kind::kRelease, severity, false, 0, "", std::move(summary),
                   std::move(figures), held_until_exit ? *in.exited : (seen ? last_at : in.now));
  return a;
}

}  // namespace ramguard
