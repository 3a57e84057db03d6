// status, runs, report, compare: fetched here, rendered by ramguard::report (client/report).
#include <algorithm>
#include <fstream>
#include <ostream>

#include "commands.hpp"
#include "output.hpp"
#include "report/render.hpp"

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

}  // namespace

int cmd_status(const GlobalOptions& g, const StatusArgs& a, std::ostream& out) {
  Client client = connect(g);
  const v1::StatusReply reply = client.status(a.run_id);
  out << (g.json ? to_json(reply) + "\n" : report::status_text(reply, render_options(g)));
  return kExitOk;
}

int cmd_runs(const GlobalOptions& g, const RunsArgs& a, std::ostream& out) {
  Client client = connect(g);
  const v1::ListRunsReply reply = list_runs(client, a);
  out << (g.json ? to_json(reply) + "\n" : report::runs_table(reply, render_options(g)));
  return kExitOk;
}

int cmd_report(const GlobalOptions& g, const ReportArgs& a, std::ostream& out) {
  Client client = connect(g);
  const bool svg = !a.svg_path.empty();
  const v1::ReportReply reply = client.report(a.run_id, svg);
  if (svg) {
    // The budget line of the chart comes from the daemon's status.
    const std::uint64_t budget = client.status(a.run_id).budget_bytes();
    std::ofstream file(a.svg_path, std::ios::binary | std::ios::trunc);
    file << report::report_svg(reply, render_options(g, budget));
    file.close();
    if (!file) {
      throw ClientError(ClientError::Kind::kUsage, "cannot write SVG file '" + a.svg_path + "'");
    }
  }
  out << (g.json ? report::report_json(reply) : report::report_text(reply, render_options(g)));
  return kExitOk;
}

int cmd_compare(const GlobalOptions& g, const CompareArgs& a, std::ostream& out) {
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
