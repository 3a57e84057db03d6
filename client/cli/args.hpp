#pragma once
// The ramguard command line as values: parse_args turns argv into an Invocation or an error
// message that names the bad argument. Pure (no I/O), so every bad input is unit-tested.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ramguard::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // daemon error or unreachable
inline constexpr int kExitUsage = 2;
inline constexpr int kExitRefused = 3;  // admission refused

struct GlobalOptions {
  std::string socket_path;  // empty: RAMGUARD_SOCKET or the default path
  std::chrono::milliseconds timeout{5000};
  bool json = false;          // print the reply as JSON
  bool binary_units = false;  // --gib: GiB instead of decimal GB
};

using Labels = std::map<std::string, std::string>;

struct HelpArgs {
  std::string topic;  // a subcommand, or empty
};
struct VersionArgs {};
struct HelloArgs {};
struct AdmitArgs {
  std::string job;
  std::uint64_t estimate_bytes = 0;
  std::uint64_t model_bytes = 0;
  std::uint64_t parameter_count = 0;
  double bytes_per_parameter = 0;
  std::string plan;
  std::uint32_t hosts = 0;
  std::uint32_t pid = 0;
  bool use_calibrated = false;
  std::string scope;  // the baseline of the coming run: process, tree or cgroup
};
struct StartArgs {
  std::uint32_t pid = 0;  // 0 only with --self: the daemon guards the calling process
  std::string job;
  Labels labels;
  std::uint64_t model_bytes = 0;
  std::uint32_t rounds = 0;
  std::uint32_t hosts = 0;
  std::string reservation_id;
  std::string scope;  // --scope process|cgroup
  std::string cgroup_path;
};
struct MarkArgs {
  std::string run_id;
  bool begin = true;
  std::string phase;
  std::uint32_t round = 0;
};
struct RoundEndArgs {
  std::string run_id;
  std::uint32_t round = 0;
};
struct EndArgs {
  std::string run_id;
};
struct ReleaseArgs {
  std::string reservation_id;
};
struct StatusArgs {
  std::string run_id;
};
struct ExecArgs {
  bool admission = false;  // an estimate source was given: admit before starting the command
  AdmitArgs admit;         // job, estimate/model/plan, hosts
  Labels labels;
  std::uint32_t rounds = 0;
  std::string allocator;  // "", jemalloc, glibc-tuned or glibc (checked by the parser)
  std::string scope;
  std::string cgroup_path;
  std::vector<std::string> command;
};
struct RunsArgs {
  std::uint32_t limit = 0;
  Labels labels;  // only runs carrying all of these (e.g. slurm_job_id=42)
};
struct ReportArgs {
  std::string run_id;
  std::string svg_path;
  std::string html_path;  // --html FILE: the run page as one self-contained file
};
// ui: the run page, served by the CLI as the user who runs it.
struct UiArgs {
  std::string host = "127.0.0.1";   // loopback unless --listen says otherwise
  std::uint16_t port = 0;           // 0: any free port
  std::uint32_t refresh_ms = 2000;  // how often a live page asks again (--refresh)
};
enum class CompareFormat { kText, kMarkdown, kCsv, kJson };
struct CompareArgs {
  std::vector<std::string> run_ids;
  Labels labels;
  std::string job;  // --job NAME (or --label job=NAME): the runs of that job
  CompareFormat format = CompareFormat::kText;
};

using Command = std::variant<HelpArgs, VersionArgs, HelloArgs, AdmitArgs, StartArgs, MarkArgs,
                             RoundEndArgs, EndArgs, ReleaseArgs, StatusArgs, ExecArgs, RunsArgs,
                             ReportArgs, CompareArgs, UiArgs>;

struct Invocation {
  GlobalOptions global;
  Command command;
};

struct ParseOutcome {
  std::optional<Invocation> invocation;
  std::string error;  // set when invocation is empty
};

// args excludes argv[0].
ParseOutcome parse_args(const std::vector<std::string>& args);

// The help text: all subcommands, or one subcommand's options.
std::string usage_text(const std::string& topic = {});

// "ramguard VERSION", the project version this CLI was built from.
std::string version_text();

}  // namespace ramguard::cli
