// status, runs, report, compare: fetched here, rendered by ramguard::report (client/report).
#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <ostream>

#include "commands.hpp"
#include "output.hpp"
#include "report/render.hpp"
#include "web/page.hpp"

namespace ramguard::cli {
namespace {

report::RenderOptions render_options(const GlobalOptions& g, std::uint64_t budget_bytes = 0) {
  report::RenderOptions options;
  options.binary_units = g.binary_units;
  options.budget_bytes = budget_bytes;
  return options;
}

report::TableFormat table_format(CompareFormat format) {
  switch (format) {
    case CompareFormat::kMarkdown:
      return report::TableFormat::kMarkdown;
    case CompareFormat::kCsv:
      return report::TableFormat::kCsv;
    case CompareFormat::kJson:
      return report::TableFormat::kJson;
    case CompareFormat::kText:
      break;
  }
  return report::TableFormat::kText;
}

void write_file(const std::string& path, const char* what, const std::string& content) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << content;
  file.close();
  if (!file) {
    throw ClientError(ClientError::Kind::kUsage,
                      "cannot write " + std::string(what) + " file '" + path + "'");
  }
}

}  // namespace

StatusArgs build_status(const Scanned& s) {
  expect_positionals(s, "status", 0, 1, "");
  return StatusArgs{s.positionals.empty() ? "" : s.positionals[0]};
}

RunsArgs build_runs(const Scanned& s) {
  expect_positionals(s, "runs", 0, 0, "");
  return RunsArgs{u32_option(s, "limit"), label_options(s)};
}

ReportArgs build_report(const Scanned& s) {
  expect_positionals(s, "report", 1, 1, "RUN");
  return ReportArgs{s.positionals[0], text_option(s, "svg"), text_option(s, "html")};
}

CompareArgs build_compare(const Scanned& s) {
  if (!s.rest.empty()) throw UsageError{"ramguard compare takes no command after --"};
  CompareArgs a;
  a.run_ids = s.positionals;
  a.labels = label_options(s);
  a.job = text_option(s, "job");
  // The job is not a label, but people write it as one: --label job=NAME means --job NAME.
  if (const auto job = a.labels.find("job"); job != a.labels.end()) {
    if (!a.job.empty() && a.job != job->second) {
      throw UsageError{"--label job=" + job->second + " contradicts --job " + a.job};
    }
    a.job = job->second;
    a.labels.erase(job);
  }
  if (a.run_ids.empty() && a.labels.empty() && a.job.empty()) {
    throw UsageError{"ramguard compare needs run ids, --job NAME or --label KEY=VALUE"};
  }
  if (const std::string* format = s.get("format")) {
    static const std::array<std::pair<std::string_view, CompareFormat>, 4> kFormats{{
        {"text", CompareFormat::kText},
        {"markdown", CompareFormat::kMarkdown},
        {"csv", CompareFormat::kCsv},
        {"json", CompareFormat::kJson},
    }};
    auto it = std::find_if(kFormats.begin(), kFormats.end(),
                           [&](const auto& f) { return f.first == *format; });
    if (it == kFormats.end()) {
      throw UsageError{"--format '" + *format + "': expected text, markdown, json or csv"};
    }
    a.format = it->second;
  }
  if (s.has("json")) {
    if (s.has("format") && a.format != CompareFormat::kJson) {
      throw UsageError{"--json contradicts --format " + *s.get("format")};
    }
    a.format = CompareFormat::kJson;
  }
  return a;
}

int cmd_status(const GlobalOptions& g, const StatusArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  const v1::StatusReply reply = client.status(a.run_id);
  out << (g.json ? to_json(reply) + "\n" : report::status_text(reply, render_options(g)));
  return kExitOk;
}

int cmd_runs(const GlobalOptions& g, const RunsArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  const v1::ListRunsReply reply = list_runs(client, a);
  out << (g.json ? to_json(reply) + "\n" : report::runs_table(reply, render_options(g)));
  return kExitOk;
}

int cmd_report(const GlobalOptions& g, const ReportArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  const bool svg = !a.svg_path.empty(), html = !a.html_path.empty();
  const v1::ReportReply reply = client.report(a.run_id, svg || html);
  // The budget line of the chart comes from the daemon's status.
  const std::uint64_t budget = svg || html ? client.status(a.run_id).budget_bytes() : 0;
  if (svg) write_file(a.svg_path, "SVG", report::report_svg(reply, render_options(g, budget)));
  if (html) {
    web::PageContext context;
    context.budget_bytes = budget;
    context.saved_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
    write_file(a.html_path, "HTML", web::export_html(reply, context));
  }
  out << (g.json ? report::report_json(reply) : report::report_text(reply, render_options(g)));
  return kExitOk;
}

int cmd_compare(const GlobalOptions& g, const CompareArgs& a, std::ostream& out, std::ostream&) {
  Client client = connect(g);
  v1::CompareReply reply;
  if (a.job.empty()) {
    reply = client.compare(a.run_ids, a.labels);
  } else if (!a.labels.empty()) {
    // The daemon matches labels; the job is filtered here.
    reply = client.compare(a.run_ids, a.labels);
    auto& rows = *reply.mutable_rows();
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const v1::CompareRow& r) { return r.job() != a.job; }),
               rows.end());
  } else {
    // The job is not a label: its runs come from the ledger's listing (the newest 1,000).
    std::vector<std::string> ids = a.run_ids;
    const v1::ListRunsReply listed = client.list_runs(1000);
    for (const v1::RunStatus& run : listed.runs()) {
      if (run.job() == a.job) ids.push_back(run.run_id());
    }
    if (ids.size() > a.run_ids.size()) reply = client.compare(ids, {});
  }
  if (reply.rows().empty()) {
    std::string what;
    for (const std::string& id : a.run_ids) what += " " + id;
    if (!a.job.empty()) what += " --job " + a.job;
    for (const auto& [key, value] : a.labels) what += " --label " + key + "=" + value;
    // Exit 1 like any answer that is not there, with the query in the message.
    throw ClientError(ClientError::Kind::kServer,
                      "compare: no runs match" + what + " (see `ramguard runs` for recent runs)",
                      v1::Error::NOT_FOUND);
  }
  out << report::compare_table(reply, table_format(a.format), render_options(g));
  return kExitOk;
}

}  // namespace ramguard::cli
