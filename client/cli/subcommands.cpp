#include "subcommands.hpp"

#include <algorithm>
#include <ostream>
#include <variant>

#include "commands.hpp"

namespace ramguard::cli {
namespace {

template <class Args>
Subcommand row(Subcommand base, Args (*build)(const Scanned&),
               int (*run)(const GlobalOptions&, const Args&, std::ostream&, std::ostream&)) {
  base.build = [build](const Scanned& s) -> Command { return build(s); };
  base.run = [run](const GlobalOptions& g, const Command& c, std::ostream& out, std::ostream& err) {
    return run(g, std::get<Args>(c), out, err);
  };
  base.command_index = Command(std::in_place_type<Args>).index();
  return base;
}

HelpArgs build_help(const Scanned& s) {
  return HelpArgs{s.positionals.empty() ? "" : s.positionals.front()};
}
int cmd_help(const GlobalOptions&, const HelpArgs& a, std::ostream& out, std::ostream&) {
  out << usage_text(a.topic);
  return kExitOk;
}
VersionArgs build_version(const Scanned& s) {
  expect_positionals(s, "version", 0, 0, "");
  return {};
}
int cmd_version(const GlobalOptions&, const VersionArgs&, std::ostream& out, std::ostream&) {
  out << version_text() << "\n";
  return kExitOk;
}

constexpr std::string_view kOverviewHead =
    R"(usage: ramguard [--socket PATH] [--timeout DURATION] [--json] [--gib] COMMAND ...
       ramguard --version

Talks to ramguardd, the RAM guard of a training coordinator.

commands:
)";

constexpr std::string_view kOverviewTail = R"(
global options (anywhere before --):
  --socket PATH       control socket (default: $RAMGUARD_SOCKET, /run/ramguard/ramguard.sock
                      for root, $XDG_RUNTIME_DIR/ramguard.sock, /tmp/ramguard-UID.sock)
  --timeout DURATION  per request, e.g. 5s or 500ms (default 5s)
  --json              print the daemon's reply as JSON
  --gib               binary units (GiB) instead of decimal GB
  --version           print the CLI's version and exit

Sizes: plain bytes or a number with kB MB GB TB (powers of 1000) or KiB MiB GiB TiB (1024);
Kubernetes forms k M G T and Ki Mi Gi Ti are the same units.
Exit status: 0 success, 1 daemon error or unreachable, 2 usage error, 3 admission refused;
exec exits with the command's status (128+N when killed by signal N).
See ramguard help COMMAND for a command's options.
)";

}  // namespace

const std::vector<Subcommand>& subcommands() {
  static const std::vector<Subcommand> table{
      row({.name = "hello",
           .synopsis = "hello",
           .summary = "check the daemon answers; show its version and budget",
           .help = R"(usage: ramguard hello
)"},
          build_hello, cmd_hello),
      row({.name = "admit",
           .options = admit_options(),
           .synopsis = "admit ESTIMATE-OPTIONS",
           .summary = "ask whether a Load fits the budget (exit 0 admitted, 3 refused)",
           .help =
               R"(usage: ramguard admit [--job NAME] (--estimate SIZE | --plan NAME (--model-bytes SIZE |
                      --params N --bytes-per-param B) | --use-calibrated)
                      [--hosts N] [--pid PID] [--scope process|tree|cgroup]
Prints every term of baseline + reserved + estimate <= budget - margin.
Exit 0 when admitted (prints the reservation id), 3 when refused.
)"},
          build_admit, cmd_admit),
      row({.name = "start",
           .options = {{"pid", true},
                       {"self", false},
                       {"job", true},
                       {"label", true, true},
                       {"model-bytes", true},
                       {"rounds", true},
                       {"hosts", true},
                       {"reservation", true},
                       {"scope", true},
                       {"cgroup", true}},
           .synopsis = "start --pid PID [OPTIONS]",
           .summary = "start a run on a process; prints the run id",
           .help = R"(usage: ramguard start (--pid PID | --self) [--job NAME] [--label KEY=VALUE]...
                      [--model-bytes SIZE] [--rounds N] [--hosts N] [--reservation ID]
                      [--scope process|tree|cgroup] [--cgroup PATH]
Prints the run id. --pid names the coordinator's process; --self guards the process
that runs this command, which exits at once (so the run ends 'exited').
--scope tree measures the PID and its descendants (peak: the sum of their high-water
marks, an upper bound); --scope cgroup the PID's memory cgroup (every process in it,
exact peak); --cgroup PATH names another one (root only).
)"},
          build_start, cmd_start),
      row({.name = "mark",
           .options = {{"round", true}},
           .synopsis = "mark RUN begin|end PHASE",
           .summary = "mark a phase boundary (load, aggregation, synchronization, save)",
           .help = R"(usage: ramguard mark RUN begin|end PHASE [--round N]
)"},
          build_mark, cmd_mark),
      row({.name = "round-end",
           .options = {{"round", true}},
           .synopsis = "round-end RUN [--round N]",
           .summary = "mark the end of a round",
           .help = R"(usage: ramguard round-end RUN [--round N]
)"},
          build_round_end, cmd_round_end),
      row({.name = "end",
           .synopsis = "end RUN",
           .summary = "end a run",
           .help = R"(usage: ramguard end RUN
)"},
          build_end, cmd_end),
      row({.name = "release",
           .synopsis = "release RESERVATION",
           .summary = "give back an admitted reservation",
           .help = R"(usage: ramguard release RESERVATION
)"},
          build_release, cmd_release),
      row({.name = "status",
           .synopsis = "status [RUN]",
           .summary = "budget, reservations and runs",
           .help = R"(usage: ramguard status [RUN]
)"},
          build_status, cmd_status),
      row({.name = "exec",
           .options = exec_options(),
           .synopsis = "exec [OPTIONS] -- CMD ARGS...",
           .summary = "admit, run CMD under a run, exit with CMD's status",
           .help =
               R"(usage: ramguard exec [--job NAME] [--estimate SIZE | --plan NAME --model-bytes SIZE]
                     [--hosts N] [--use-calibrated] [--label KEY=VALUE]... [--rounds N]
                     [--allocator jemalloc|glibc-tuned|glibc]
                     [--scope process|tree|cgroup] [--cgroup PATH] -- CMD ARGS...
Admits (when an estimate is given; exit 3 without running CMD if refused), starts CMD
with RAMGUARD_SOCKET and RAMGUARD_RUN set, runs it under a run claiming the reservation,
ends the run when CMD exits and exits with CMD's status (128+N if killed by signal N).
At the end it prints a summary on stderr: how CMD ended, its peak (from wait4's
ru_maxrss, and marked so, when CMD ended before the daemon read it), the worst verdict
and the release, or where to read it once judged (ramguard report RUN).
--allocator starts CMD with Debian's jemalloc preloaded (jemalloc), with glibc's
MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_TRIM_THRESHOLD_=134217728
(glibc-tuned) or unchanged (glibc), and labels the run allocator=NAME for compare.
)",
           .positionals_start_rest = true},
          build_exec, cmd_exec),
      row({.name = "runs",
           .options = {{"limit", true}, {"label", true, true}},
           .synopsis = "runs [--limit N] [--label K=V]...",
           .summary = "recent runs (with all the labels given)",
           .help = R"(usage: ramguard runs [--limit N] [--label KEY=VALUE]...
With --label, the newest runs (--limit, else 1000) that carry every label given,
e.g. --label slurm_job_id=42 for a Slurm job's steps.
)"},
          build_runs, cmd_runs),
      row({.name = "report",
           .options = {{"svg", true}, {"html", true}},
           .synopsis = "report RUN [--svg FILE] [--html FILE]",
           .summary = "a run's report (--json, --gib)",
           .help = R"(usage: ramguard report RUN [--json] [--svg FILE] [--html FILE] [--gib]
--html writes the run page as one self-contained file that opens offline.
)"},
          build_report, cmd_report),
      row({.name = "ui",
           .options = {{"listen", true}, {"refresh", true}},
           .synopsis = "ui [--listen HOST:PORT]",
           .summary = "the run page in a browser, served as you (loopback)",
           .help = R"(usage: ramguard ui [--listen HOST:PORT] [--refresh DURATION]
Serves the run page (runs, each run live, compare) as you: it asks the daemon with
your credentials, so it shows what you may read. Prints the address, which holds a
random token; without it the server answers 404. --listen defaults to 127.0.0.1 on
a free port; --refresh (default 2s) is how often a live page asks again.
Stops on SIGINT or SIGTERM.
)"},
          build_ui, cmd_ui),
      row({.name = "compare",
           .options = {{"label", true, true}, {"job", true}, {"format", true}},
           .synopsis = "compare RUN... | --job NAME | --label K=V...",
           .summary = "runs side by side [--format FORMAT]",
           .help = R"(usage: ramguard compare [RUN...] [--job NAME] [--label KEY=VALUE]...
                        [--format text|markdown|json|csv] [--gib]
Runs side by side: the runs named, the runs of a job (--job NAME, also written
--label job=NAME), the runs whose labels match (with --job: of that job only).
Exit 1 when no run matches.
)"},
          build_compare, cmd_compare),
      row({.name = "help",
           .synopsis = "help [COMMAND]",
           .summary = "this text, or one command's options",
           .help = R"(usage: ramguard help [COMMAND]
)"},
          build_help, cmd_help),
      row({.name = "version",
           .synopsis = "version",
           .summary = "print the CLI's version (also --version)",
           .help = R"(usage: ramguard version
)"},
          build_version, cmd_version),
  };
  return table;
}

const Subcommand* find_subcommand(std::string_view name) {
  const auto& table = subcommands();
  auto it =
      std::find_if(table.begin(), table.end(), [&](const Subcommand& c) { return c.name == name; });
  return it == table.end() ? nullptr : &*it;
}

std::string version_text() {
  return std::string("ramguard ") + RAMGUARD_VERSION;
}

std::string usage_text(const std::string& topic) {
  if (const Subcommand* sub = find_subcommand(topic)) return std::string(sub->help);
  std::string text(kOverviewHead);
  for (const Subcommand& sub : subcommands()) {
    std::string line = "  " + std::string(sub.synopsis);
    line.resize(std::max<std::size_t>(33, line.size() + 2), ' ');
    text += line + std::string(sub.summary) + "\n";
  }
  return text + std::string(kOverviewTail);
}

int run_invocation(const Invocation& invocation, std::ostream& out, std::ostream& err) {
  for (const Subcommand& sub : subcommands()) {
    if (sub.command_index == invocation.command.index()) {
      return sub.run(invocation.global, invocation.command, out, err);
    }
  }
  return kExitUsage;  // unreachable: every alternative of Command has its row
}

}  // namespace ramguard::cli
