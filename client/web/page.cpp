#include "web/page.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <vector>

#include "report/format.hpp"
#include "report/json_writer.hpp"
#include "report/render.hpp"
#include "report/run_facts.hpp"
#include "web/sha256.hpp"

namespace ramguard::web {
namespace {

using report::JsonWriter;

void bound_samples(v1::ReportReply& out, std::size_t limit, Omitted& omitted) {
  const int n = out.samples_size();
  if (limit == 0 || static_cast<std::size_t>(n) <= limit) return;
  const std::size_t per = (static_cast<std::size_t>(n) + limit - 1) / limit;
  google::protobuf::RepeatedPtrField<v1::SamplePoint> merged;
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); i += per) {
    const std::size_t end = std::min(static_cast<std::size_t>(n), i + per);
    v1::SamplePoint bucket = out.samples(static_cast<int>(end - 1));  // the last reading
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (std::size_t j = i; j < end; ++j) {
      const v1::SamplePoint& s = out.samples(static_cast<int>(j));
      lo = std::min(lo, s.min_rss_bytes() > 0 ? s.min_rss_bytes() : s.rss_bytes());
      hi = std::max({hi, s.max_rss_bytes(), s.rss_bytes()});
    }
    bucket.set_min_rss_bytes(lo);
    bucket.set_max_rss_bytes(hi);
    *merged.Add() = std::move(bucket);
  }
  omitted.samples = static_cast<std::size_t>(n) - static_cast<std::size_t>(merged.size());
  *out.mutable_samples() = std::move(merged);
}

// Keeps the elements whose index is marked, in order.
template <typename T>
void keep_marked(google::protobuf::RepeatedPtrField<T>& list, const std::vector<bool>& keep) {
  google::protobuf::RepeatedPtrField<T> kept;
  for (int i = 0; i < list.size(); ++i) {
    if (keep[static_cast<std::size_t>(i)]) *kept.Add() = std::move(*list.Mutable(i));
  }
  list = std::move(kept);
}

std::size_t count_marked(const std::vector<bool>& keep) {
  return static_cast<std::size_t>(std::count(keep.begin(), keep.end(), true));
}

// Marks the newest unmarked entries until `limit` are marked.
void fill_newest(std::vector<bool>& keep, std::size_t limit) {
  std::size_t marked = count_marked(keep);
  for (std::size_t i = keep.size(); i-- > 0 && marked < limit;) {
    if (!keep[i]) keep[i] = true, ++marked;
  }
}

void bound_phases(v1::RunStatus& run, std::size_t limit, Omitted& omitted) {
  const std::size_t n = static_cast<std::size_t>(run.phases_size());
  if (limit == 0 || n <= limit) return;
  // Each phase name's largest peaks take up to half the room; the newest phases the rest.
  std::map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < n; ++i) by_name[run.phases(static_cast<int>(i)).phase()].push_back(i);
  const std::size_t per_name = std::max<std::size_t>(1, limit / 2 / by_name.size());
  std::vector<bool> keep(n, false);
  for (auto& [name, indices] : by_name) {
    std::stable_sort(indices.begin(), indices.end(), [&](std::size_t a, std::size_t b) {
      return run.phases(static_cast<int>(a)).peak_bytes() >
             run.phases(static_cast<int>(b)).peak_bytes();
    });
    for (std::size_t k = 0; k < std::min(per_name, indices.size()); ++k) keep[indices[k]] = true;
  }
  fill_newest(keep, limit);
  omitted.phases = n - count_marked(keep);
  keep_marked(*run.mutable_phases(), keep);
}

void bound_boundaries(v1::RunStatus& run, std::size_t limit, Omitted& omitted) {
  const std::size_t n = static_cast<std::size_t>(run.boundaries_size());
  if (limit < 3 || n <= limit) return;
  std::vector<bool> keep(n, false);
  std::size_t highest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (run.boundaries(static_cast<int>(i)).floor_bytes() >
        run.boundaries(static_cast<int>(highest)).floor_bytes()) {
      highest = i;
    }
  }
  keep[0] = keep[n - 1] = keep[highest] = true;
  const std::size_t room = limit - 3;
  for (std::size_t k = 0; k < room; ++k)
    keep[(k * (n - 1)) / std::max<std::size_t>(1, room)] = true;
  omitted.boundaries = n - count_marked(keep);
  keep_marked(*run.mutable_boundaries(), keep);
}

void bound_verdicts(v1::RunStatus& run, std::size_t limit, Omitted& omitted) {
  const std::size_t n = static_cast<std::size_t>(run.verdicts_size());
  if (limit == 0 || n <= limit) return;
  std::vector<bool> keep(n, false);
  std::size_t marked = 0;
  for (std::size_t i = n; i-- > 0 && marked < limit / 2;) {
    const v1::Verdict& v = run.verdicts(static_cast<int>(i));
    if (!v.passed() && !v.cleared() && v.severity() != v1::INFO) keep[i] = true, ++marked;
  }
  fill_newest(keep, limit);
  omitted.verdicts = n - count_marked(keep);
  keep_marked(*run.mutable_verdicts(), keep);
}

// The growth detector's slope and projection where it gave them; else the least-squares slope
// of the listed floors over their rounds (no projection without a budget).
struct Growth {
  bool known = false;
  double slope_bytes_per_round = 0;
  double projected_round = 0;  // 0: not in sight
};

Growth growth(const v1::RunStatus& run, std::uint64_t budget_bytes) {
  Growth g;
  for (const v1::Verdict& v : run.verdicts()) {
    const double slope = report::figure(v, {"slope_bytes_per_round"}, -1e300);
    if (slope <= -1e300) continue;
    g.known = true;
    g.slope_bytes_per_round = slope;
    g.projected_round = std::max(0.0, report::figure(v, {"projected_round"}, 0));
  }
  if (g.known) {
    // The detector names its projection only when the budget is near; the page always does.
    if (g.projected_round == 0 && g.slope_bytes_per_round > 0 && run.boundaries_size() > 0) {
      const v1::BoundaryReading& last = run.boundaries(run.boundaries_size() - 1);
      if (budget_bytes > last.floor_bytes()) {
        g.projected_round = last.round() + static_cast<double>(budget_bytes - last.floor_bytes()) /
                                               g.slope_bytes_per_round;
      }
    }
    return g;
  }
  if (run.boundaries_size() < 2) return g;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const v1::BoundaryReading& b : run.boundaries()) {
    const double x = b.round(), y = static_cast<double>(b.floor_bytes());
    n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double denom = n * sxx - sx * sx;
  if (denom <= 0) return g;
  g.known = true;
  g.slope_bytes_per_round = (n * sxy - sx * sy) / denom;
  const v1::BoundaryReading& last = run.boundaries(run.boundaries_size() - 1);
  if (g.slope_bytes_per_round > 0 && budget_bytes > last.floor_bytes()) {
    g.projected_round = last.round() + static_cast<double>(budget_bytes - last.floor_bytes()) /
                                           g.slope_bytes_per_round;
  }
  return g;
}

// report_json ends with a newline; the page embeds it as a value.
std::string trimmed(std::string json) {
  while (!json.empty() && (json.back() == '\n' || json.back() == ' ')) json.pop_back();
  return json;
}

const v1::Verdict* worst_listed(const v1::RunStatus& run) {
  const v1::Verdict* worst = report::worst_verdict(run.verdicts());
  if (run.earlier_verdicts() == 0 || !run.has_worst_earlier_verdict()) return worst;
  google::protobuf::RepeatedPtrField<v1::Verdict> both;
  if (worst != nullptr) *both.Add() = *worst;
  *both.Add() = run.worst_earlier_verdict();
  const v1::Verdict* chosen = report::worst_verdict(both);
  return chosen == nullptr || (worst != nullptr && chosen->kind() == worst->kind() &&
                               chosen->at_unix_ms() == worst->at_unix_ms())
             ? worst
             : &run.worst_earlier_verdict();
}

void verdict_brief(JsonWriter& w, const v1::Verdict* v) {
  if (v == nullptr) {
    w.null();
    return;
  }
  w.begin_object()
      .field("kind", v->kind())
      .field("severity", report::severity_name(v->severity()))
      .field("passed", v->passed())
      .field("cleared", v->cleared())
      .field("summary", v->summary())
      .end_object();
}

constexpr std::string_view kServedCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace

v1::ReportReply bounded_report(const v1::ReportReply& reply, const PageLimits& limits,
                               Omitted& omitted) {
  v1::ReportReply out = reply;
  omitted = {};
  bound_samples(out, limits.samples, omitted);
  bound_phases(*out.mutable_run(), limits.phases, omitted);
  bound_boundaries(*out.mutable_run(), limits.boundaries, omitted);
  bound_verdicts(*out.mutable_run(), limits.verdicts, omitted);
  return out;
}

std::string run_json(const v1::ReportReply& reply, const PageContext& context,
                     const PageLimits& limits) {
  Omitted omitted;
  const v1::ReportReply bounded = bounded_report(reply, limits, omitted);
  const v1::RunStatus& run = reply.run();
  const Growth g = growth(run, context.budget_bytes);
  JsonWriter w;
  w.begin_object()
      .field("schema", "ramguard.page.run/1")
      .field("saved_unix_ms", context.saved_unix_ms);
  w.key("view").begin_object();
  w.field("budget_bytes", context.budget_bytes).field("refresh_ms", context.refresh_ms);
  w.field("reservation_bytes", static_cast<std::uint64_t>(run.reservation_bytes()));
  w.key("release_limit_bytes");
  const v1::Verdict* release = report::find_verdict(run, "release");
  const double limit = release != nullptr ? report::figure(*release, {"limit_bytes"}, 0) : 0;
  limit > 0 ? void(w.value(limit)) : void(w.null());
  w.key("slope_bytes_per_round");
  g.known ? void(w.value(g.slope_bytes_per_round)) : void(w.null());
  w.field("projected_round", g.projected_round);
  // The phases the daemon's report summarises instead of listing (the oldest), by name.
  w.field("earlier_phases", static_cast<std::uint32_t>(run.earlier_phases()));
  w.key("earlier_phase_totals").begin_array();
  for (const v1::PhaseTotals& t : run.earlier_phase_totals()) {
    w.begin_object()
        .field("phase", t.phase())
        .field("count", static_cast<std::uint64_t>(t.count()))
        .field("max_peak_bytes", static_cast<std::uint64_t>(t.max_peak_bytes()))
        .field("total_seconds", t.total_seconds())
        .end_object();
  }
  w.end_array();
  w.key("omitted")
      .begin_object()
      .field("samples", static_cast<std::uint64_t>(omitted.samples))
      .field("phases", static_cast<std::uint64_t>(omitted.phases))
      .field("boundaries", static_cast<std::uint64_t>(omitted.boundaries))
      .field("verdicts", static_cast<std::uint64_t>(omitted.verdicts))
      .end_object();
  w.end_object();
  // The report's own JSON, as `ramguard report --json` prints it (client/report).
  w.key("report").json(trimmed(report::report_json(bounded)));
  w.end_object();
  return w.str();
}

// Active runs first, then the most recent.
static std::vector<const v1::RunStatus*> list_order(const v1::ListRunsReply& reply) {
  std::vector<const v1::RunStatus*> runs;
  for (const v1::RunStatus& r : reply.runs()) runs.push_back(&r);
  std::stable_sort(runs.begin(), runs.end(), [](const auto* a, const auto* b) {
    const bool active_a = a->state() == "active", active_b = b->state() == "active";
    if (active_a != active_b) return active_a;
    return a->started_unix_ms() > b->started_unix_ms();
  });
  return runs;
}

std::vector<std::string> runs_for_floors(const v1::ListRunsReply& reply, std::size_t limit) {
  std::vector<std::string> ids;
  for (const v1::RunStatus* run : list_order(reply)) {
    if (ids.size() == limit) break;
    ids.push_back(run->run_id());
  }
  return ids;
}

std::string runs_json(const v1::ListRunsReply& reply, const PageContext& context,
                      const v1::CompareReply& floors) {
  const std::vector<const v1::RunStatus*> runs = list_order(reply);
  JsonWriter w;
  w.begin_object()
      .field("schema", "ramguard.page.runs/1")
      .field("budget_bytes", context.budget_bytes)
      .field("refresh_ms", context.refresh_ms);
  w.key("runs").begin_array();
  for (const v1::RunStatus* run : runs) {
    w.begin_object().field("run_id", run->run_id()).field("job", run->job());
    w.key("labels").begin_object();
    for (const auto& [key, value] : report::sorted_labels(run->labels())) w.field(key, value);
    w.end_object();
    // The trend from the first round end to the newest, from the comparison where it has the
    // run, else from what the listing holds (nothing, for the daemon's summaries).
    std::uint64_t floor_count =
        run->earlier_boundaries().count() + static_cast<std::uint64_t>(run->boundaries_size());
    std::uint64_t first = 0, last = 0;
    if (run->earlier_boundaries().count() > 0)
      first = run->earlier_boundaries().first_floor_bytes();
    if (run->boundaries_size() > 0) {
      if (first == 0) first = run->boundaries(0).floor_bytes();
      last = run->boundaries(run->boundaries_size() - 1).floor_bytes();
    }
    for (const v1::CompareRow& row : floors.rows()) {
      if (row.run_id() != run->run_id() || row.last_floor_bytes() == 0) continue;
      first = row.first_floor_bytes();
      last = row.last_floor_bytes();
      floor_count = std::max<std::uint64_t>(floor_count, 1);
    }
    const std::uint64_t floors_known = floor_count;
    w.field("state", run->state())
        .field("current_phase", run->current_phase())
        .field("rounds", report::rounds_seen(*run))
        .field("peak_bytes", static_cast<std::uint64_t>(run->peak_bytes()))
        .field("peak_exact", run->peak_exact())
        .field("estimate_bytes", static_cast<std::uint64_t>(run->estimate_bytes()))
        .field("floors", floors_known)
        .field("first_floor_bytes", first)
        .field("last_floor_bytes", last)
        .field("started_unix_ms", static_cast<std::int64_t>(run->started_unix_ms()))
        .field("ended_unix_ms", static_cast<std::int64_t>(run->ended_unix_ms()));
    w.key("worst");
    verdict_brief(w, worst_listed(*run));
    w.end_object();
  }
  w.end_array().end_object();
  return w.str();
}

std::string compare_json(const v1::CompareReply& reply) {
  return report::compare_table(reply, report::TableFormat::kJson, report::RenderOptions{});
}

std::string_view served_csp() {
  return kServedCsp;
}

std::string shell_html(std::string_view base) {
  const std::string b(base);
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<meta name=\"referrer\" content=\"no-referrer\">"
         "<title>ramguard</title><link rel=\"stylesheet\" href=\"" +
         b + "app.css\"></head>\n<body data-base=\"" + b +
         "\"><header class=\"top\"><a class=\"brand\" href=\"" + b + "\">ramguard</a><a href=\"" +
         b +
         "\">runs</a><span class=\"live\" id=\"rg-live\"></span></header>"
         "<main id=\"rg-main\"><p>Loading...</p><noscript>This page needs JavaScript; "
         "<code>ramguard report RUN</code> prints the same as text.</noscript></main>"
         "<script src=\"" +
         b + "app.js\"></script></body></html>\n";
}

std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    // Outside strings JSON has no angle brackets, so this changes only string contents.
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string export_html(const v1::ReportReply& reply, const PageContext& context,
                        const PageLimits& limits) {
  const std::string_view js = app_js(), css = app_css();
  const std::string csp = "default-src 'none'; script-src 'sha256-" + sha256_base64(js) +
                          "'; style-src 'sha256-" + sha256_base64(css) +
                          "'; img-src data:; base-uri 'none'; form-action 'none'";
  std::string title = report::escape_xml(report::sanitize_utf8(reply.run().job()));
  std::string out;
  out.reserve(js.size() + css.size() + 4096);
  out +=
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
      csp +
      "\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>ramguard: " +
      title + "</title><style>";
  out += css;
  out +=
      "</style></head>\n<body><header class=\"top\"><span class=\"brand\">ramguard</span>"
      "<span class=\"live\" id=\"rg-live\"></span></header><main id=\"rg-main\"></main>\n"
      "<script type=\"application/json\" id=\"rg-data\">";
  out += script_safe_json(trimmed(run_json(reply, context, limits)));
  out += "</script>\n<script>";
  out += js;
  out += "</script></body></html>\n";
  return out;
}

}  // namespace ramguard::web
