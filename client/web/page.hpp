#pragma once
// The run page: its data as JSON (bounded whatever the run's length), the HTML shell the CLI
// serves, and the one-file offline export. Pure functions over protocol replies, like
// client/report, whose facts they reuse; no I/O.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::web {

// What one run's page holds at most, so a run of 100,000 marks renders in bounded time and size.
struct PageLimits {
  std::size_t samples = 1200;    // buckets of the RSS trace; each keeps its min and max
  std::size_t phases = 600;      // each phase name's largest peaks, then the newest
  std::size_t boundaries = 400;  // round ends: the first, the last, the highest floors
  std::size_t verdicts = 400;    // every standing warning or failure, then the newest
};

// What bounded_report left out.
struct Omitted {
  std::size_t samples = 0;
  std::size_t phases = 0;
  std::size_t boundaries = 0;
  std::size_t verdicts = 0;
};

// A copy of the report within `limits`: samples merged into buckets (min of mins, max of maxes,
// the last reading), the phases and round ends that matter most, in their original order.
v1::ReportReply bounded_report(const v1::ReportReply& reply, const PageLimits& limits,
                               Omitted& omitted);

struct PageContext {
  std::uint64_t budget_bytes = 0;   // from the daemon's status
  std::uint32_t refresh_ms = 2000;  // how often a live page asks again
  std::int64_t saved_unix_ms = 0;   // the export's time; 0 when served
};

// One run: {"report": <report_json of the bounded report>, "view": {budget, refresh, release
// limit, growth slope and projection (from the growth verdict), omitted counts}}.
std::string run_json(const v1::ReportReply& reply, const PageContext& context,
                     const PageLimits& limits = {});

// The list: active runs first, then the most recent, each with its worst verdict, peak, floor
// trend and state. A listing carries no floors: the trend (first -> newest round end) comes
// from `floors`, a comparison of the runs listed first, where given.
std::string runs_json(const v1::ListRunsReply& reply, const PageContext& context,
                      const v1::CompareReply& floors = {});

// The runs whose floor trend the list shows: the first `limit` in the list's order.
std::vector<std::string> runs_for_floors(const v1::ListRunsReply& reply, std::size_t limit);

// The comparison: the compare table's JSON (client/report).
std::string compare_json(const v1::CompareReply& reply);

// The page's own assets, embedded at build time from client/web/assets.
std::string_view app_js();
std::string_view app_css();

// The served page's HTML shell: loads <base>app.css and <base>app.js. `base` is the token's
// path ("/<token>/"), made of [0-9a-f/] only.
std::string shell_html(std::string_view base);

// The Content-Security-Policy of everything the CLI serves.
std::string_view served_csp();

// One run as a single self-contained HTML file: the script and stylesheet inline, allowed by
// their SHA-256 in the page's Content-Security-Policy; the data as inert JSON. Opens offline.
std::string export_html(const v1::ReportReply& reply, const PageContext& context,
                        const PageLimits& limits = {});

// JSON text made safe inside an HTML <script> element: '<' as \u003c (only inside strings).
std::string script_safe_json(std::string_view json);

}  // namespace ramguard::web
