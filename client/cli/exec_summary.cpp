#include "exec_summary.hpp"

#include <algorithm>
#include <sstream>

#include "output.hpp"
#include "ramguard/base/verdict_rank.hpp"
#include "ramguard/units.hpp"

namespace ramguard::cli {
namespace {

std::string how_it_ended(const ExecOutcome& o) {
  if (o.signal_number > 0) return "was killed by signal " + std::to_string(o.signal_number);
  return "exited with code " + std::to_string(o.exit_code);
}

// The daemon's peak, unless CMD ended before the daemon read it: then wait4's high-water mark,
// which the kernel kept for the whole life of CMD, is the better figure (and says so).
std::string peak_text(const ExecOutcome& o, bool binary) {
  const std::uint64_t daemon_peak = o.run ? o.run->peak_bytes() : 0;
  const bool exact = o.run && o.run->peak_exact();
  // ru_maxrss also counts the moment before exec (a copy of this CLI, a few MB) and rounds to
  // KiB, so only a clear excess means the daemon missed the peak.
  const std::uint64_t tolerance = std::max<std::uint64_t>(4u << 20, daemon_peak / 20);
  // The daemon folds ru_maxrss into the run's peak; a daemon that did not (an older one) left
  // it lower, and then wait4's figure is the better one.
  if (o.ru_maxrss_bytes > daemon_peak + tolerance) {
    return bytes_text(static_cast<double>(o.ru_maxrss_bytes), binary) +
           " (from wait4's ru_maxrss: " + o.command +
           " ended before the daemon read its memory; the whole process's RSS high-water mark, "
           "not the daemon's exact reading)";
  }
  if (!o.run) return "unknown (the daemon's report could not be read)";
  return "counted " + bytes_text(static_cast<double>(daemon_peak), binary) +
         (exact ? " (exact: kernel high-water mark" : " (sampled") +
         (o.ru_maxrss_bytes > 0 ? "; RSS high-water mark " +
                                      bytes_text(static_cast<double>(o.ru_maxrss_bytes), binary) +
                                      " from wait4's ru_maxrss)"
                                : std::string(")"));
}

const v1::Verdict* find_release(const v1::RunStatus& run) {
  const v1::Verdict* release = nullptr;
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() == "release") release = &v;
  }
  return release;
}

}  // namespace

std::string exec_summary_text(const ExecOutcome& o, bool binary) {
  std::ostringstream out;
  out << "ramguard: run " << o.run_id << " ended: " << o.command << " " << how_it_ended(o)
      << " after " << units::format_seconds(o.elapsed_seconds) << "\n";
  out << "  peak:     " << peak_text(o, binary) << "\n";
  if (!o.run) {
    out << "  verdicts: unknown (see `ramguard report " << o.run_id << "`)\n";
    return out.str();
  }
  const auto& verdicts = o.run->verdicts();
  const auto worst =
      ramguard::worst_verdict(verdicts.begin(), verdicts.end(), [](const v1::Verdict& v) {
        return VerdictFacts{v.kind(), severity_name(v.severity()), v.passed(), v.cleared()};
      });
  out << "  verdicts: ";
  std::size_t standing = 0;
  for (const v1::Verdict& v : verdicts) {
    if (!v.cleared() && v.severity() != v1::INFO) ++standing;
  }
  if (standing == 0) {
    out << "no warning or critical (" << verdicts.size() << " informational)\n";
  } else {
    out << standing << " warning or critical; the worst: " << verdict_heading(*worst);
    if (!worst->summary().empty()) out << ": " << worst->summary();
    out << "\n";
  }
  out << "  release:  ";
  if (const v1::Verdict* release = find_release(*o.run)) {
    out << verdict_result(*release) << " (" << severity_name(release->severity()) << ")";
    if (!release->summary().empty()) out << ": " << release->summary();
    out << "\n";
  } else {
    out << "pending: see `ramguard report " << o.run_id << "` once the release grace is over\n";
  }
  return out.str();
}

}  // namespace ramguard::cli
