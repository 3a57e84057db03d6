// status, runs, report, compare when ramguard::report (client/report) is not built: the
// daemon's reply as JSON, so the commands still work for scripts.
#include <ostream>

#include "commands.hpp"
#include "output.hpp"

namespace ramguard::cli {

int cmd_status(const GlobalOptions& g, const StatusArgs& a, std::ostream& out) {
  out << to_json(connect(g).status(a.run_id)) << "\n";
  return kExitOk;
}

int cmd_runs(const GlobalOptions& g, const RunsArgs& a, std::ostream& out) {
  Client client = connect(g);
  out << to_json(list_runs(client, a)) << "\n";
  return kExitOk;
}

int cmd_report(const GlobalOptions& g, const ReportArgs& a, std::ostream& out) {
  if (!a.svg_path.empty() || !a.html_path.empty()) {
    throw ClientError(ClientError::Kind::kUsage,
                      "--svg and --html need the report renderer, not built");
  }
  out << to_json(connect(g).report(a.run_id)) << "\n";
  return kExitOk;
}

int cmd_compare(const GlobalOptions& g, const CompareArgs& a, std::ostream& out) {
  out << to_json(connect(g).compare(a.run_ids, a.labels)) << "\n";
  return kExitOk;
}

int cmd_ui(const GlobalOptions&, const UiArgs&, std::ostream&, std::ostream&) {
  throw ClientError(ClientError::Kind::kUsage, "ui needs the report renderer, not built");
}

}  // namespace ramguard::cli
