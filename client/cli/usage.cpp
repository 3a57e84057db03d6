// Help text of the ramguard CLI.
#include <map>

#include "args.hpp"

namespace ramguard::cli {
namespace {

constexpr const char* kOverview =
    R"(usage: ramguard [--socket PATH] [--timeout DURATION] [--json] [--gib] COMMAND ...
       ramguard --version

Talks to ramguardd, the RAM guard of a training coordinator.

commands:
  hello                          check the daemon answers; show its version and budget
  admit ESTIMATE-OPTIONS         ask whether a Load fits the budget (exit 0 admitted, 3 refused)
  start --pid PID [OPTIONS]      start a run on a process; prints the run id
  mark RUN begin|end PHASE       mark a phase boundary (load, aggregation, synchronization, save)
  round-end RUN [--round N]      mark the end of a round
  end RUN                        end a run
  release RESERVATION            give back an admitted reservation
  status [RUN]                   budget, reservations and runs
  exec [OPTIONS] -- CMD ARGS...  admit, run CMD under a run, exit with CMD's status
  runs [--limit N] [--label K=V]...  recent runs (with all the labels given)
  report RUN [--svg FILE] [--html FILE]  a run's report (--json, --gib)
  ui [--listen HOST:PORT]        the run page in a browser, served as you (loopback)
  compare RUN... | --job NAME | --label K=V...  runs side by side [--format FORMAT]

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

const std::map<std::string, std::string>& topics() {
  static const std::map<std::string, std::string> kTopics{
      {"hello", "usage: ramguard hello\n"},
      {"admit",
       "usage: ramguard admit [--job NAME] (--estimate SIZE | --plan NAME (--model-bytes SIZE |\n"
       "                      --params N --bytes-per-param B) | --use-calibrated)\n"
       "                      [--hosts N] [--pid PID] [--scope process|tree|cgroup]\n"
       "Prints every term of baseline + reserved + estimate <= budget - margin.\n"
       "Exit 0 when admitted (prints the reservation id), 3 when refused.\n"},
      {"start",
       "usage: ramguard start (--pid PID | --self) [--job NAME] [--label KEY=VALUE]...\n"
       "                      [--model-bytes SIZE] [--rounds N] [--hosts N] [--reservation ID]\n"
       "                      [--scope process|tree|cgroup] [--cgroup PATH]\n"
       "Prints the run id. --pid names the coordinator's process; --self guards the process\n"
       "that runs this command, which exits at once (so the run ends 'exited').\n"
       "--scope tree measures the PID and its descendants (peak: the sum of their high-water\n"
       "marks, an upper bound); --scope cgroup the PID's memory cgroup (every process in it,\n"
       "exact peak); --cgroup PATH names another one (root only).\n"},
      {"mark", "usage: ramguard mark RUN begin|end PHASE [--round N]\n"},
      {"round-end", "usage: ramguard round-end RUN [--round N]\n"},
      {"end", "usage: ramguard end RUN\n"},
      {"release", "usage: ramguard release RESERVATION\n"},
      {"status", "usage: ramguard status [RUN]\n"},
      {"exec",
       "usage: ramguard exec [--job NAME] [--estimate SIZE | --plan NAME --model-bytes SIZE]\n"
       "                     [--hosts N] [--use-calibrated] [--label KEY=VALUE]... [--rounds N]\n"
       "                     [--allocator jemalloc|glibc-tuned|glibc]\n"
       "                     [--scope process|tree|cgroup] [--cgroup PATH] -- CMD ARGS...\n"
       "Admits (when an estimate is given; exit 3 without running CMD if refused), starts CMD\n"
       "with RAMGUARD_SOCKET and RAMGUARD_RUN set, runs it under a run claiming the reservation,\n"
       "ends the run when CMD exits and exits with CMD's status (128+N if killed by signal N).\n"
       "At the end it prints a summary on stderr: how CMD ended, its peak (from wait4's\n"
       "ru_maxrss, and marked so, when CMD ended before the daemon read it), the worst verdict\n"
       "and the release, or where to read it once judged (ramguard report RUN).\n"
       "--allocator starts CMD with Debian's jemalloc preloaded (jemalloc), with glibc's\n"
       "MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_TRIM_THRESHOLD_=134217728\n"
       "(glibc-tuned) or unchanged (glibc), and labels the run allocator=NAME for compare.\n"},
      {"runs",
       "usage: ramguard runs [--limit N] [--label KEY=VALUE]...\n"
       "With --label, the newest runs (--limit, else 1000) that carry every label given,\n"
       "e.g. --label slurm_job_id=42 for a Slurm job's steps.\n"},
      {"report",
       "usage: ramguard report RUN [--json] [--svg FILE] [--html FILE] [--gib]\n"
       "--html writes the run page as one self-contained file that opens offline.\n"},
      {"ui",
       "usage: ramguard ui [--listen HOST:PORT] [--refresh DURATION]\n"
       "Serves the run page (runs, each run live, compare) as you: it asks the daemon with\n"
       "your credentials, so it shows what you may read. Prints the address, which holds a\n"
       "random token; without it the server answers 404. --listen defaults to 127.0.0.1 on\n"
       "a free port; --refresh (default 2s) is how often a live page asks again.\n"
       "Stops on SIGINT or SIGTERM.\n"},
      {"compare",
       "usage: ramguard compare [RUN...] [--job NAME] [--label KEY=VALUE]...\n"
       "                        [--format text|markdown|json|csv] [--gib]\n"
       "Runs side by side: the runs named, the runs of a job (--job NAME, also written\n"
       "--label job=NAME), the runs whose labels match (with --job: of that job only).\n"
       "Exit 1 when no run matches.\n"},
  };
  return kTopics;
}

}  // namespace

std::string version_text() {
  return std::string("ramguard ") + RAMGUARD_VERSION;
}

std::string usage_text(const std::string& topic) {
  auto it = topics().find(topic);
  return it == topics().end() ? kOverview : it->second;
}

}  // namespace ramguard::cli
