#pragma once
// Human and machine renderings of the daemon's replies: the run report (text, JSON, SVG), the
// side-by-side comparison of runs, the list of recent runs and the status overview.
// Pure functions over protocol messages: no I/O, no exceptions; hostile strings are escaped.

#include <cstdint>
#include <string>

#include "ramguard.pb.h"

namespace ramguard::report {

struct RenderOptions {
  bool binary_units = false;       // GiB instead of decimal GB
  std::uint64_t budget_bytes = 0;  // drawn in the SVG when known (from status or hello); 0: none
};

enum class TableFormat { kText, kMarkdown, kCsv, kJson };

// The run as a readable table: identity, baseline, peak (exact or sampled), phases per round,
// boundary readings and floors, release, verdicts, phase gaps, estimate against peak.
std::string report_text(const v1::ReportReply& reply, const RenderOptions& options);

// Stable JSON (fixed key order, sorted labels, raw bytes and seconds) described by
// client/report/report.schema.json.
std::string report_json(const v1::ReportReply& reply);

// A self-contained SVG timeline: RSS samples, phase bands, round boundaries, budget and estimate
// lines, verdict markers with titles.
std::string report_svg(const v1::ReportReply& reply, const RenderOptions& options);

// One row per run: peak RAM, RSS between rounds (first -> last floor), RSS after completion,
// plus verdicts, worst phase gap and estimate ratio.
std::string compare_table(const v1::CompareReply& reply, TableFormat format,
                          const RenderOptions& options);

// Recent runs: run, job, labels, state, rounds, peak and worst verdict.
std::string runs_table(const v1::ListRunsReply& reply, const RenderOptions& options);

// Budget, reservations and active runs.
std::string status_text(const v1::StatusReply& reply, const RenderOptions& options);

}  // namespace ramguard::report
