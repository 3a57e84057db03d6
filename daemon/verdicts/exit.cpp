#include "verdicts/exit.hpp"

#include <string.h>

#include <algorithm>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

RunPosition run_position(const RunLedger& ledger) {
  RunPosition pos;
  for (auto it = ledger.phases.rbegin(); it != ledger.phases.rend(); ++it) {
    if (!it->end) {
      pos.phase = it->phase, pos.phase_open = true, pos.round = it->round;
      return pos;
    }
  }
  if (!ledger.phases.empty()) pos.phase = ledger.phases.back().phase;
  for (auto it = ledger.marks.rbegin(); it != ledger.marks.rend(); ++it) {
    if (it->kind == MarkKind::kRunStart || it->kind == MarkKind::kRunEnd) continue;
    pos.round = it->kind == MarkKind::kRoundEnd ? it->round + 1 : it->round;
    return pos;
  }
  if (!ledger.boundaries.empty()) pos.round = ledger.boundaries.back().round + 1;
  return pos;
}

namespace {

std::string signal_text(int signal) {
  const char* name = sigabbrev_np(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
}

std::string where_text(const RunPosition& pos) {
  std::string s;
  if (!pos.phase.empty()) s += (pos.phase_open ? " during " : " after ") + pos.phase;
  if (pos.round > 0) s += " in round " + std::to_string(pos.round);
  return s;
}

// The last reading by its parts: the memory that counts, and the page cache beside it.
std::string last_text(const MemoryReading& r, std::uint64_t model_bytes) {
  const double counted = static_cast<double>(r.counted_bytes());
  return format_bytes(counted) + " counted (anon + shmem + swap)" +
         copies_note(counted, model_bytes) +
         (r.file_bytes > 0
              ? ", page cache " + format_bytes(static_cast<double>(r.file_bytes)) + " not counted"
              : std::string());
}

std::map<std::string, double> last_figures(const RunLedger& ledger, const RunPosition& pos) {
  std::map<std::string, double> f{
      {"last_rss_bytes", static_cast<double>(ledger.last.rss_bytes)},
      {"last_counted_bytes", static_cast<double>(ledger.last.counted_bytes())},
      {"last_file_bytes", static_cast<double>(ledger.last.file_bytes)},
      {"peak_bytes", static_cast<double>(ledger.peak_bytes)},
      {"pid", static_cast<double>(ledger.info.target.pid)},
  };
  if (pos.round > 0) f["round"] = pos.round;
  add_copies_figure(f, "last_rss_copies", static_cast<double>(ledger.last.rss_bytes),
                    ledger.info.model_bytes);
  return f;
}

}  // namespace

Verdict exited_verdict(const RunLedger& ledger, std::optional<int> exit_code,
                       std::optional<int> signal, bool oom_killed, Instant at,
                       const std::optional<CgroupDeathPeak>& cgroup) {
  const RunPosition pos = run_position(ledger);
  auto figures = last_figures(ledger, pos);
  std::string how;
  if (oom_killed) {
    how = "was killed by the kernel's OOM killer";
    figures["oom_killed"] = 1;
  }
  if (signal) {
    how += (how.empty() ? "was killed by " : " (") + signal_text(*signal) + (oom_killed ? ")" : "");
    figures["signal"] = *signal;
  }
  if (exit_code) {
    if (how.empty()) how = "exited with code " + std::to_string(*exit_code);
    figures["exit_code"] = *exit_code;
  }
  if (how.empty()) how = "exited (status unknown)";
  std::uint64_t peak = ledger.peak_bytes;
  std::string peak_text = "counted peak " + format_bytes(static_cast<double>(peak));
  std::string limit_text;
  if (cgroup && cgroup->peak_usage_bytes > 0) {
    // The cgroup's own peak is exact where the periodic readings missed the last climb.
    peak = std::max(peak, cgroup->peak_usage_bytes);
    figures["cgroup_peak_usage_bytes"] = static_cast<double>(cgroup->peak_usage_bytes);
    peak_text = "peak " + format_bytes(static_cast<double>(peak)) + " (the cgroup's max usage " +
                format_bytes(static_cast<double>(cgroup->peak_usage_bytes)) + ")";
    if (cgroup->limit_bytes > 0) {
      figures["cgroup_limit_bytes"] = static_cast<double>(cgroup->limit_bytes);
      // Usage is charged in pages and batches: within 1% of the limit is at the limit.
      if (static_cast<double>(cgroup->peak_usage_bytes) >=
          0.99 * static_cast<double>(cgroup->limit_bytes)) {
        limit_text = "; the cgroup reached its " +
                     format_bytes(static_cast<double>(cgroup->limit_bytes)) + " limit" +
                     where_text(pos);
        figures["cgroup_limit_reached"] = 1;
      }
    }
  }
  figures["peak_bytes"] = static_cast<double>(peak);
  std::string summary = "Coordinator (PID " + std::to_string(ledger.info.target.pid) + ") " + how +
                        where_text(pos) + "; last reading " +
                        last_text(ledger.last, ledger.info.model_bytes) + ", " + peak_text +
                        limit_text + ".";
  return make_verdict(verdict_kind::kExited, Severity::kCritical, false, pos.round, pos.phase,
                      std::move(summary), std::move(figures), at);
}

Verdict lost_verdict(const RunLedger& ledger, Instant at) {
  const RunPosition pos = run_position(ledger);
  std::string summary = "Run lost: after a daemon restart the coordinator (PID " +
                        std::to_string(ledger.info.target.pid) + ", same start time) was gone" +
                        where_text(pos) + "; last stored reading " +
                        last_text(ledger.last, ledger.info.model_bytes) + ".";
  return make_verdict(verdict_kind::kLost, Severity::kCritical, false, pos.round, pos.phase,
                      std::move(summary), last_figures(ledger, pos), at);
}

Verdict failed_verdict(const RunLedger& ledger, const std::string& failure, Instant at) {
  const RunPosition pos = run_position(ledger);
  std::string summary = "Coordinator (PID " + std::to_string(ledger.info.target.pid) +
                        ") ended the run on a failure" + where_text(pos) + ": " + failure +
                        "; last reading " + last_text(ledger.last, ledger.info.model_bytes) +
                        ", counted peak " + format_bytes(static_cast<double>(ledger.peak_bytes)) +
                        ".";
  return make_verdict(verdict_kind::kFailed, Severity::kCritical, false, pos.round, pos.phase,
                      std::move(summary), last_figures(ledger, pos), at);
}

}  // namespace ramguard
