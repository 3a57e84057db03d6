#include "output.hpp"

#include <google/protobuf/util/json_util.h>

#include <iomanip>
#include <sstream>

#include "ramguard/base/verdict_rank.hpp"
#include "ramguard/units.hpp"

namespace ramguard::cli {

std::string to_json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return "{}";  // cannot happen for messages that parsed from JSON
  return json;
}

std::string bytes_text(double bytes, bool binary) {
  return units::format_bytes(bytes, binary);
}

std::string admit_text(const v1::AdmitReply& r, bool binary) {
  auto b = [&](double v) { return bytes_text(v, binary); };
  // Daemons that measure the caps send the committed sum and the effective budget; older ones
  // (effective_budget_bytes 0) the plain reservations and the configured budget.
  const bool caps = r.effective_budget_bytes() != 0;
  const double committed = static_cast<double>(caps ? r.committed_bytes() : r.reserved_bytes());
  const double budget = static_cast<double>(caps ? r.effective_budget_bytes() : r.budget_bytes());
  const double total =
      static_cast<double>(r.baseline_bytes()) + committed + static_cast<double>(r.estimate_bytes());
  const double limit = budget - static_cast<double>(r.margin_bytes());
  std::ostringstream out;
  if (r.admitted()) {
    out << "admitted: reservation " << r.reservation_id();
    if (r.lease_seconds() > 0) out << " (lease " << units::format_seconds(r.lease_seconds()) << ")";
    out << "\n";
  } else {
    out << "refused: the estimate does not fit the "
        << (caps && r.budget_cap() != "budget" ? r.budget_cap() + " cap" : std::string("budget"))
        << "\n";
  }
  // Right-aligned amounts so the sum reads as a sum.
  auto row = [&](const char* label, double value) { out << label << std::setw(12) << b(value); };
  row("  baseline        ", static_cast<double>(r.baseline_bytes()));
  out << "\n";
  row(caps ? "+ committed       " : "+ reserved        ", committed);
  out << "\n";
  for (const auto& run : r.committed_runs()) {
    out << "    run " << run.run_id() << " holds " << b(static_cast<double>(run.held_bytes()))
        << ", reserved " << b(static_cast<double>(run.reserved_bytes())) << ": counted "
        << b(static_cast<double>(run.counted_bytes())) << "\n";
  }
  row("+ estimate        ", static_cast<double>(r.estimate_bytes()));
  if (!r.estimate_source().empty()) out << "  (" << r.estimate_source() << ")";
  out << "\n";
  row("= total           ", total);
  out << "\n";
  row("  budget - margin ", limit);
  out << "  (" << b(budget) << " - " << b(static_cast<double>(r.margin_bytes())) << ")\n";
  if (caps) {
    out << "  caps: budget " << b(static_cast<double>(r.budget_bytes())) << ", node "
        << (r.node_cap_bytes() != 0 ? b(static_cast<double>(r.node_cap_bytes())) : "unknown")
        << ", cgroup "
        << (r.cgroup_limit_bytes() != 0 ? b(static_cast<double>(r.cgroup_limit_bytes())) : "none")
        << "; the " << r.budget_cap() << " cap binds\n";
  }
  row("  headroom        ", static_cast<double>(r.headroom_bytes()));
  out << "\n";
  if (!r.reason().empty()) out << r.reason() << "\n";
  return out.str();
}

std::string verdict_line(const v1::Verdict& v) {
  std::string line = "  " + verdict_heading(v);
  if (!v.summary().empty()) line += ": " + v.summary();
  return line + "\n";
}

std::string mark_text(const v1::MarkRequest::Kind kind, const std::string& phase,
                      const v1::MarkReply& r, bool binary) {
  std::ostringstream out;
  const std::string rss = bytes_text(static_cast<double>(r.reading().rss_bytes()), binary);
  switch (kind) {
    case v1::MarkRequest::PHASE_BEGIN:
      out << "phase " << phase << " began (round " << r.round() << "): RSS " << rss << "\n";
      break;
    case v1::MarkRequest::PHASE_END:
      out << "phase " << phase << " ended (round " << r.round() << "): peak "
          << bytes_text(static_cast<double>(r.phase_peak_bytes()), binary)
          << (r.peak_exact() ? " (exact)" : " (sampled)") << ", "
          << units::format_seconds(r.phase_duration_seconds()) << ", RSS " << rss << "\n";
      break;
    default:
      out << "round " << r.round() << " ended: RSS " << rss << "\n";
  }
  if (!r.warning().empty()) out << "warning: " << r.warning() << "\n";
  for (const v1::Verdict& v : r.verdicts()) out << verdict_line(v);
  return out.str();
}

std::string run_end_text(const std::string& run_id, const v1::RunEndReply& r, bool binary) {
  std::ostringstream out;
  out << "run " << run_id << " ended: RSS "
      << bytes_text(static_cast<double>(r.reading().rss_bytes()), binary) << ", peak "
      << bytes_text(static_cast<double>(r.peak_bytes()), binary) << "\n";
  for (const v1::Verdict& v : r.verdicts()) out << verdict_line(v);
  return out.str();
}

}  // namespace ramguard::cli
