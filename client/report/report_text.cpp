// The run report as readable text, plus the status overview and the list of recent runs.
#include <algorithm>
#include <cmath>

#include "ramguard/base/verdict_rank.hpp"
#include "report/census_section.hpp"
#include "report/format.hpp"
#include "report/plan_table.hpp"
#include "report/render.hpp"
#include "report/run_facts.hpp"
#include "report/table.hpp"

namespace ramguard::report {
namespace {

std::string bytes(std::uint64_t b, const RenderOptions& o) {
  return format_bytes(static_cast<double>(b), o.binary_units);
}

std::string signed_bytes(double b, const RenderOptions& o) {
  return (b >= 0 ? "+" : "-") + format_bytes(std::fabs(b), o.binary_units);
}

// The memory that counts (what the verdicts judge): anon + shmem + swap.
std::uint64_t counted(const v1::Reading& r) {
  return r.anon_bytes() + r.shmem_bytes() + r.swap_bytes();
}

// "RSS 14.10 GB (anon 13.90 GB, page cache 0.20 GB, shmem 0 B, swap 0 B; counted 13.90 GB)":
// page cache is shown and never judged; the names are the verdicts' own.
std::string reading_line(const v1::Reading& r, const RenderOptions& o) {
  std::string line = "RSS " + bytes(r.rss_bytes(), o) + " (anon " + bytes(r.anon_bytes(), o) +
                     ", page cache " + bytes(r.file_bytes(), o);
  line += ", shmem " + bytes(r.shmem_bytes(), o);
  line += ", swap " + bytes(r.swap_bytes(), o) + "; counted " + bytes(counted(r), o) + ")";
  if (r.at_unix_ms() > 0) line += " at " + format_unix_ms(r.at_unix_ms());
  return line;
}

std::string field(const std::string& name, const std::string& value) {
  std::string padded = name + ":";
  padded.resize(std::max<std::size_t>(padded.size() + 1, 16), ' ');
  return padded + escape_text(value) + "\n";
}

void phases_section(const v1::RunStatus& run, const RenderOptions& o, std::string& out) {
  if (run.phases().empty()) {
    out += "\nPhases: none marked\n";
    return;
  }
  Table t;
  t.add_column("round", Align::kRight);
  t.add_column("phase");
  t.add_column("begin", Align::kRight);
  t.add_column("duration", Align::kRight);
  t.add_column("peak", Align::kRight);
  t.add_column("peak source");
  for (const v1::PhaseStat& p : run.phases()) {
    t.add_row({std::to_string(p.round()), p.phase(), "+" + format_seconds(p.begin_seconds()),
               format_seconds(p.duration_seconds()), bytes(p.peak_bytes(), o),
               p.peak_exact() ? "exact (high-water mark)" : "sampled"});
  }
  out +=
      "\nPhases (exact peaks from the kernel high-water mark where marked exact)\n" + t.text("  ");
  if (run.earlier_phases() == 0) return;
  // A status lists the newest phases; the earlier ones come as totals by name.
  out += "  " + std::to_string(run.earlier_phases()) + " earlier phases, showing the last " +
         std::to_string(run.phases_size()) + " (ramguard report lists them all)\n";
  if (run.earlier_phase_totals().empty()) return;
  Table totals;
  totals.add_column("phase");
  totals.add_column("count", Align::kRight);
  totals.add_column("largest peak", Align::kRight);
  totals.add_column("total time", Align::kRight);
  for (const v1::PhaseTotals& p : run.earlier_phase_totals()) {
    totals.add_row({p.phase(), std::to_string(p.count()), bytes(p.max_peak_bytes(), o),
                    format_seconds(p.total_seconds())});
  }
  out += "\nEarlier phases by name\n" + totals.text("  ");
}

void boundaries_section(const v1::RunStatus& run, const RenderOptions& o, std::string& out) {
  if (run.boundaries().empty()) {
    out += "\nRound boundaries: none\n";
    return;
  }
  Table t;
  t.add_column("round", Align::kRight);
  t.add_column("RSS", Align::kRight);
  t.add_column("floor", Align::kRight);
  t.add_column("change", Align::kRight);
  t.add_column("counted", Align::kRight);
  t.add_column("anon", Align::kRight);
  t.add_column("page cache", Align::kRight);
  t.add_column("shmem", Align::kRight);
  t.add_column("swap", Align::kRight);
  // Allocator facts from the client: what the application holds, what the allocator keeps.
  bool allocator = false;
  bool pss = false;  // tree-scope runs: shared pages counted once
  for (const v1::BoundaryReading& b : run.boundaries()) {
    allocator |= b.has_allocator();
    pss |= b.reading().pss_bytes() > 0;
  }
  if (pss) t.add_column("tree PSS", Align::kRight);
  if (allocator) {
    t.add_column("app holds", Align::kRight);
    t.add_column("alloc keeps free", Align::kRight);
  }
  const v1::BoundaryReading* prev = nullptr;
  for (const v1::BoundaryReading& b : run.boundaries()) {
    const v1::Reading& r = b.reading();
    const std::string change = prev == nullptr
                                   ? "-"
                                   : signed_bytes(static_cast<double>(b.floor_bytes()) -
                                                      static_cast<double>(prev->floor_bytes()),
                                                  o);
    std::vector<std::string> row{std::to_string(b.round()), bytes(r.rss_bytes(), o),
                                 bytes(b.floor_bytes(), o), change,
                                 bytes(counted(r), o),      bytes(r.anon_bytes(), o),
                                 bytes(r.file_bytes(), o),  bytes(r.shmem_bytes(), o),
                                 bytes(r.swap_bytes(), o)};
    if (pss) row.push_back(r.pss_bytes() > 0 ? bytes(r.pss_bytes(), o) : "-");
    if (allocator) {
      row.push_back(b.has_allocator() ? bytes(b.allocator().allocated_bytes(), o) : "-");
      row.push_back(b.has_allocator() ? bytes(b.allocator().retained_bytes(), o) : "-");
    }
    t.add_row(std::move(row));
    prev = &b;
  }
  out +=
      "\nRound boundaries (floor: settled RSS after the round-end mark; counted: anon + shmem + "
      "swap at the mark, the memory the verdicts judge; page cache is shown, never judged" +
      std::string(allocator ? "; free memory the allocator keeps is not growth either" : "") +
      ")\n" + t.text("  ");
}

void gaps_section(const v1::RunStatus& run, std::string& out) {
  const auto gaps = phase_gaps(run);
  std::vector<const v1::Verdict*> configured;
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() == "phase_gap") configured.push_back(&v);
  }
  if (gaps.empty() && configured.empty()) return;
  out += "\nPhase gaps\n";
  if (!gaps.empty()) {
    Table t;
    t.add_column("round", Align::kRight);
    t.add_column("from (end)");
    t.add_column("to (begin)");
    t.add_column("gap", Align::kRight);
    for (const PhaseGap& g : gaps) {
      t.add_row({std::to_string(g.round), g.from_phase, g.to_phase, format_seconds(g.seconds)});
    }
    out += t.text("  ");
  }
  for (const v1::Verdict* v : configured) {
    out += "  target: round " + std::to_string(v->round()) + ", " +
           (v->passed() ? "within target" : "EXCEEDED") + ": " + escape_text(v->summary()) + "\n";
  }
}

void release_section(const v1::RunStatus& run, const RenderOptions& o, std::string& out) {
  const v1::Verdict* release = find_verdict(run, "release");
  out += "\nRelease after the run\n";
  if (release == nullptr) {
    out += run.state() == "active" ? "  run still active\n" : "  no release verdict yet\n";
    return;
  }
  out += "  " + verdict_heading(*release) + ": " + escape_text(release->summary()) + "\n";
  for (const auto& [name, value] : sorted_figures(*release)) {
    out += "  " + escape_text(name) + ": " + format_figure(name, value, o.binary_units) + "\n";
  }
}

void verdicts_section(const v1::RunStatus& run, const RenderOptions& o, std::string& out) {
  if (run.verdicts().empty()) {
    out += "\nVerdicts: none\n";
    return;
  }
  Table t;
  t.add_column("severity");
  t.add_column("kind");
  t.add_column("result");
  t.add_column("round", Align::kRight);
  t.add_column("phase");
  t.add_column("summary");
  for (const v1::Verdict& v : run.verdicts()) {
    const std::string result = verdict_result(v);
    t.add_row({severity_name(v.severity()), v.kind(), result,
               v.round() ? std::to_string(v.round()) : "-", v.phase().empty() ? "-" : v.phase(),
               v.summary()});
  }
  out += "\nVerdicts\n" + t.text("  ");
  // Every number a summary states, under its name (the release's are in its own section).
  std::string figures;
  for (const v1::Verdict& v : run.verdicts()) {
    if (v.kind() == "release" || v.figures().empty()) continue;
    figures += "  " + escape_text(v.kind()) +
               (v.round() ? " round " + std::to_string(v.round()) : "") + ":";
    for (const auto& [name, value] : sorted_figures(v)) {
      figures += " " + escape_text(name) + " " + format_figure(name, value, o.binary_units) + ";";
    }
    figures.back() = '\n';
  }
  if (!figures.empty()) out += "\nVerdict figures\n" + figures;
  if (run.earlier_verdicts() == 0) return;
  out += "  " + std::to_string(run.earlier_verdicts()) + " earlier verdicts, showing the last " +
         std::to_string(run.verdicts_size());
  if (run.has_worst_earlier_verdict()) {
    const v1::Verdict& v = run.worst_earlier_verdict();
    out += std::string("; the worst of them: ") + severity_name(v.severity()) + " " +
           escape_text(v.kind()) + " (" + escape_text(v.summary()) + ")";
  }
  out += "\n";
}

}  // namespace

std::string report_text(const v1::ReportReply& reply, const RenderOptions& o) {
  const v1::RunStatus& run = reply.run();
  std::string out = "ramguard run report\n\n";
  out += field("Run", run.run_id());
  out += field("Job", run.job());
  out += field("Labels", run.labels().empty() ? "-" : labels_string(run.labels()));
  out += field("State", run.state());
  out += field("PID", std::to_string(run.pid()));
  // A cgroup run measures every process of the cgroup; its usage counts page cache too.
  if (run.scope() == "tree") {
    out += field("Scope",
                 "tree: the process and its descendants (RSS summed per process; the "
                 "peak is the sum of their high-water marks, an upper bound)");
  }
  if (run.scope() == "cgroup") {
    out += field("Scope", "cgroup " + run.cgroup_dir() +
                              " (every process in it; usage includes page cache)");
  }
  out += field("Started", format_unix_ms(run.started_unix_ms()));
  if (run.ended_unix_ms() > 0) {
    out += field("Ended", format_unix_ms(run.ended_unix_ms()));
    if (run.started_unix_ms() > 0) {
      out += field(
          "Duration",
          format_seconds(static_cast<double>(run.ended_unix_ms() - run.started_unix_ms()) / 1e3));
    }
  }
  std::string rounds = std::to_string(rounds_seen(run));
  if (run.declared_rounds() > 0) rounds += " of " + std::to_string(run.declared_rounds());
  // Round numbers come from the client; the ledger may hold fewer round ends (a full disk,
  // skipped numbers). Say both rather than claim rounds that are not there.
  if (static_cast<std::uint32_t>(run.boundaries_size()) < rounds_seen(run)) {
    rounds += " (round ends held: " + std::to_string(run.boundaries_size()) + ")";
  }
  out += field("Rounds", rounds);
  if (run.hosts() > 0) out += field("Hosts", std::to_string(run.hosts()));
  if (run.model_bytes() > 0) out += field("Model", bytes(run.model_bytes(), o) + " per copy");
  out += "\n";
  out += field("Baseline", reading_line(run.baseline(), o));
  out += field("Peak", "counted " + bytes(run.peak_bytes(), o) +
                           (run.peak_exact() ? " (exact: kernel high-water mark)"
                                             : " (sampled: short spikes between samples may be "
                                               "missed)"));
  if (run.model_bytes() > 0 && run.peak_bytes() > 0) {
    out += field("Peak copies", format_fixed(static_cast<double>(run.peak_bytes()) /
                                                 static_cast<double>(run.model_bytes()),
                                             1) +
                                    " model copies");
  }
  if (run.has_last()) out += field("Last reading", reading_line(run.last(), o));
  if (run.estimate_bytes() > 0) {
    const double ratio = estimate_ratio(run);
    out +=
        field("Estimate", bytes(run.estimate_bytes(), o) + "; peak/estimate ratio " +
                              format_fixed(ratio, 2) +
                              (ratio > 1 ? " (peak ABOVE estimate)" : " (peak within estimate)"));
  } else {
    out += field("Estimate", "none (no admitted estimate)");
  }
  if (const v1::Verdict* accuracy = find_verdict(run, "estimate_accuracy")) {
    if (auto s = accuracy->figures().find("suggested_bytes"); s != accuracy->figures().end()) {
      out += field("Next estimate",
                   "suggested estimate " + bytes(static_cast<std::uint64_t>(s->second), o));
    }
    out += field("Estimate note", accuracy->summary());
  }
  phases_section(run, o, out);
  out += plan_table_text(run, o.binary_units);
  boundaries_section(run, o, out);
  gaps_section(run, out);
  census_text_section(run, o.binary_units, out);
  release_section(run, o, out);
  verdicts_section(run, o, out);
  if (!reply.samples().empty()) {
    out += "\nSamples: " + std::to_string(reply.samples_size()) + " points\n";
  }
  return out;
}

std::string runs_table(const v1::ListRunsReply& reply, const RenderOptions& o) {
  if (reply.runs().empty()) return "no runs\n";
  Table t;
  t.add_column("run");
  t.add_column("job");
  t.add_column("labels");
  t.add_column("state");
  t.add_column("started");
  t.add_column("rounds", Align::kRight);
  t.add_column("peak", Align::kRight);
  t.add_column("worst verdict");
  for (const v1::RunStatus& run : reply.runs()) {
    t.add_row({run.run_id(), run.job(), labels_string(run.labels()), run.state(),
               format_unix_ms(run.started_unix_ms()), std::to_string(rounds_seen(run)),
               bytes(run.peak_bytes(), o), verdict_label(worst_verdict(run.verdicts()))});
  }
  return t.text();
}

std::string status_text(const v1::StatusReply& reply, const RenderOptions& o) {
  std::string out;
  const double usable =
      static_cast<double>(reply.budget_bytes()) - static_cast<double>(reply.margin_bytes());
  out += field("Budget", bytes(reply.budget_bytes(), o) + " (margin " +
                             bytes(reply.margin_bytes(), o) + ", usable " +
                             format_bytes(usable, o.binary_units) + ")");
  out += field("Reserved", bytes(reply.reserved_bytes(), o) + " in " +
                               std::to_string(reply.reservations_size()) + " reservation(s)");
  if (!reply.store_available()) {
    out += field("Store", "UNAVAILABLE (verdicts kept in memory only)");
  } else if (!reply.store_writable()) {
    // Degraded: readable, but nothing new reaches the disk until a write succeeds again.
    out +=
        field("Store", "NOT WRITABLE (" + reply.store_state() + "); new marks kept in memory only");
  } else {
    out += field("Store", "available");
  }
  if (!reply.reservations().empty()) {
    Table t;
    t.add_column("reservation");
    t.add_column("job");
    t.add_column("bytes", Align::kRight);
    t.add_column("run");
    t.add_column("expires in", Align::kRight);
    for (const v1::Reservation& r : reply.reservations()) {
      t.add_row({r.reservation_id(), r.job(), bytes(r.bytes(), o),
                 r.run_id().empty() ? "(unclaimed)" : r.run_id(),
                 r.run_id().empty() ? format_seconds(r.expires_in_seconds()) : "-"});
    }
    out += "\nReservations\n" + t.text("  ");
  }
  if (reply.runs().empty()) {
    out += "\nRuns: none active\n";
    return out;
  }
  Table t;
  t.add_column("run");
  t.add_column("job");
  t.add_column("labels");
  t.add_column("pid", Align::kRight);
  t.add_column("state");
  t.add_column("round", Align::kRight);
  t.add_column("phase");
  t.add_column("RSS", Align::kRight);
  t.add_column("peak", Align::kRight);
  t.add_column("worst verdict");
  for (const v1::RunStatus& run : reply.runs()) {
    t.add_row({run.run_id(), run.job(), labels_string(run.labels()), std::to_string(run.pid()),
               run.state(), std::to_string(run.round()),
               run.current_phase().empty() ? "-" : run.current_phase(),
               bytes(run.last().rss_bytes(), o),
               bytes(run.peak_bytes(), o) + (run.peak_exact() ? "" : " (sampled)"),
               verdict_label(worst_verdict(run.verdicts()))});
  }
  out += "\nRuns\n" + t.text("  ");
  for (const v1::RunStatus& run : reply.runs()) {
    const std::string census = census_status_line(run, o.binary_units);
    if (!census.empty()) out += "  " + run.run_id() + " " + census + "\n";
  }
  return out;
}

}  // namespace ramguard::report
