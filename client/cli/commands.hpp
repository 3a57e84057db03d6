#pragma once
// The subcommands. Each returns the process exit status; ClientError propagates to main, which
// prints it and exits 1.

#include <iosfwd>

#include "args.hpp"
#include "ramguard/client.hpp"

namespace ramguard::cli {

Client connect(const GlobalOptions& global);
AdmitOptions to_admit_options(const AdmitArgs& args);

// Runs and marks (cmd_runs.cpp).
int cmd_hello(const GlobalOptions& g, std::ostream& out);
int cmd_start(const GlobalOptions& g, const StartArgs& a, std::ostream& out);
int cmd_mark(const GlobalOptions& g, const MarkArgs& a, std::ostream& out);
int cmd_round_end(const GlobalOptions& g, const RoundEndArgs& a, std::ostream& out);
int cmd_end(const GlobalOptions& g, const EndArgs& a, std::ostream& out);
// The recent runs for `runs`: with labels, the newest runs (--limit, else 1000) that carry them.
v1::ListRunsReply list_runs(Client& client, const RunsArgs& a);

// Admission (cmd_admit.cpp).
int cmd_admit(const GlobalOptions& g, const AdmitArgs& a, std::ostream& out);
int cmd_release(const GlobalOptions& g, const ReleaseArgs& a, std::ostream& out);

// exec (cmd_exec.cpp): the command's stdout stays clean; ramguard's messages go to err.
int cmd_exec(const GlobalOptions& g, const ExecArgs& a, std::ostream& err);

// Views rendered by ramguard::report (cmd_report.cpp).
int cmd_status(const GlobalOptions& g, const StatusArgs& a, std::ostream& out);
int cmd_runs(const GlobalOptions& g, const RunsArgs& a, std::ostream& out);
int cmd_report(const GlobalOptions& g, const ReportArgs& a, std::ostream& out);
int cmd_compare(const GlobalOptions& g, const CompareArgs& a, std::ostream& out);

// ui: the run page served as this user until SIGINT/SIGTERM (cmd_ui.cpp); prints its address.
int cmd_ui(const GlobalOptions& g, const UiArgs& a, std::ostream& out, std::ostream& err);

// Dispatches a parsed invocation.
int run_invocation(const Invocation& invocation, std::ostream& out, std::ostream& err);

}  // namespace ramguard::cli
