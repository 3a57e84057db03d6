#pragma once
// Each subcommand's builder (scanned arguments -> its Args, throwing UsageError) and runner
// (returns the exit status; ClientError propagates to main, which prints it and exits 1).
// The table in subcommands.cpp pairs them with their options and help.

#include <iosfwd>

#include "args.hpp"
#include "ramguard/client.hpp"
#include "scan.hpp"

namespace ramguard::cli {

Client connect(const GlobalOptions& global);

// Runs and marks (cmd_runs.cpp).
HelloArgs build_hello(const Scanned& s);
StartArgs build_start(const Scanned& s);
MarkArgs build_mark(const Scanned& s);
RoundEndArgs build_round_end(const Scanned& s);
EndArgs build_end(const Scanned& s);
int cmd_hello(const GlobalOptions& g, const HelloArgs& a, std::ostream& out, std::ostream& err);
int cmd_start(const GlobalOptions& g, const StartArgs& a, std::ostream& out, std::ostream& err);
int cmd_mark(const GlobalOptions& g, const MarkArgs& a, std::ostream& out, std::ostream& err);
int cmd_round_end(const GlobalOptions& g, const RoundEndArgs& a, std::ostream& out,
                  std::ostream& err);
int cmd_end(const GlobalOptions& g, const EndArgs& a, std::ostream& out, std::ostream& err);
// The recent runs for `runs`: with labels, the newest runs (--limit, else 1000) that carry them.
v1::ListRunsReply list_runs(Client& client, const RunsArgs& a);

// Admission (cmd_admit.cpp). admit's options and reader are exec's too.
const std::vector<OptionSpec>& admit_options();
AdmitArgs admit_args(const Scanned& s, bool require_source);
AdmitOptions to_admit_options(const AdmitArgs& args);
AdmitArgs build_admit(const Scanned& s);
ReleaseArgs build_release(const Scanned& s);
int cmd_admit(const GlobalOptions& g, const AdmitArgs& a, std::ostream& out, std::ostream& err);
int cmd_release(const GlobalOptions& g, const ReleaseArgs& a, std::ostream& out, std::ostream& err);

// exec (cmd_exec.cpp): the command's stdout stays clean; ramguard's messages go to err.
std::vector<OptionSpec> exec_options();
ExecArgs build_exec(const Scanned& s);
int cmd_exec(const GlobalOptions& g, const ExecArgs& a, std::ostream& out, std::ostream& err);

// Views rendered by ramguard::report (cmd_report.cpp).
StatusArgs build_status(const Scanned& s);
RunsArgs build_runs(const Scanned& s);
ReportArgs build_report(const Scanned& s);
CompareArgs build_compare(const Scanned& s);
int cmd_status(const GlobalOptions& g, const StatusArgs& a, std::ostream& out, std::ostream& err);
int cmd_runs(const GlobalOptions& g, const RunsArgs& a, std::ostream& out, std::ostream& err);
int cmd_report(const GlobalOptions& g, const ReportArgs& a, std::ostream& out, std::ostream& err);
int cmd_compare(const GlobalOptions& g, const CompareArgs& a, std::ostream& out, std::ostream& err);

// ui: the run page served as this user until SIGINT/SIGTERM (cmd_ui.cpp); prints its address.
UiArgs build_ui(const Scanned& s);
int cmd_ui(const GlobalOptions& g, const UiArgs& a, std::ostream& out, std::ostream& err);

// Dispatches a parsed invocation to its row's runner (subcommands.cpp).
int run_invocation(const Invocation& invocation, std::ostream& out, std::ostream& err);

}  // namespace ramguard::cli
