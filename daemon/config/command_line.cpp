#include "config/command_line.hpp"

#include <algorithm>
#include <functional>
#include <string_view>

#include "config/limits.hpp"
#include "config/values.hpp"
#include "ramguard/base/units.hpp"

#ifndef RAMGUARD_VERSION
#define RAMGUARD_VERSION "unknown"
#endif

namespace ramguard {
namespace {

using Apply = std::function<Status(std::string_view value, CommandLine& out)>;

struct Flag {
  std::string_view name;
  Apply apply;  // null for flags without a value
};

// Wraps a value parser: the error is "--flag: <parser's message>" from the caller.
template <typename T, typename Parse, typename Store>
Apply with(Parse parse, Store store) {
  return [parse, store](std::string_view value, CommandLine& out) -> Status {
    auto parsed = parse(value);
    if (!parsed.ok()) return parsed.error();
    store(out, static_cast<T>(*parsed));
    return ok_status();
  };
}

Result<std::string> non_empty(std::string_view v) {
  if (v.empty()) return Error{"empty path"};
  return std::string(v);
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> kFlags = {
      {"--config",
       with<std::string>(non_empty, [](CommandLine& c, std::string v) { c.config_path = v; })},
      {"--check-config",
       with<std::string>(non_empty,
                         [](CommandLine& c, std::string v) { c.check_config_path = v; })},
      {"--check-ledger",
       with<std::string>(non_empty, [](CommandLine& c, std::string v) { c.check_ledger_dir = v; })},
      {"--watch", with<WatchItem>(parse_watch_item,
                                  [](CommandLine& c, WatchItem v) {
                                    c.watch.push_back(v.pid);
                                    if (v.scope != Scope::kProcess) {
                                      c.watch_scopes[v.pid] = v.scope;
                                    }
                                  })},
      {"--interval", with<std::chrono::nanoseconds>(
                         [](std::string_view v) {
                           return parse_duration_in(v, limits::kMinInterval, limits::kMaxInterval);
                         },
                         [](CommandLine& c, std::chrono::nanoseconds v) { c.interval = v; })},
      {"--metrics",
       with<Endpoint>(parse_endpoint, [](CommandLine& c, Endpoint v) { c.metrics = v; })},
      {"--socket",
       with<std::string>(non_empty, [](CommandLine& c, std::string v) { c.socket = v; })},
      {"--state-dir",
       with<std::string>(non_empty, [](CommandLine& c, std::string v) { c.state_dir = v; })},
      {"--budget", with<std::uint64_t>(
                       [](std::string_view v) -> Result<std::uint64_t> {
                         if (v == "auto") return std::uint64_t{0};  // 0: resolved later
                         auto size = parse_size_in(v, 1, static_cast<std::uint64_t>(INT64_MAX));
                         if (!size) return Error{size.error().message + "; or auto"};
                         return size;
                       },
                       [](CommandLine& c, std::uint64_t v) {
                         c.budget_auto = v == 0;
                         c.budget_bytes = v;
                       })},
      {"--log-level",
       with<log::Level>(parse_log_level, [](CommandLine& c, log::Level v) { c.log_level = v; })},
      {"--help", nullptr},
      {"--version", nullptr},
  };
  return kFlags;
}

}  // namespace

Result<CommandLine> parse_command_line(int argc, const char* const* argv) {
  CommandLine out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i] != nullptr ? argv[i] : "";
    if (arg == "-h") arg = "--help";
    std::string_view name = arg;
    std::optional<std::string_view> inline_value;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const auto& all = flags();
    const auto flag =
        std::find_if(all.begin(), all.end(), [&](const Flag& f) { return f.name == name; });
    if (flag == all.end()) {
      if (!arg.starts_with("-")) {
        return Error{"unexpected argument '" + std::string(arg) + "'; see --help"};
      }
      return Error{"unknown flag '" + std::string(name) + "'; see --help for the flags"};
    }
    if (!flag->apply) {
      if (inline_value) return Error{std::string(name) + " takes no value"};
      (name == "--help" ? out.help : out.version) = true;
      continue;
    }
    std::string_view value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < argc && argv[i + 1] != nullptr &&
               !std::string_view(argv[i + 1]).starts_with("--")) {
      value = argv[++i];
    } else {
      return Error{std::string(name) + ": missing value; see --help"};
    }
    if (Status s = flag->apply(value, out); !s.ok()) {
      return Error{std::string(name) + ": " + s.error().message};
    }
  }
  if (out.config_path && out.check_config_path && *out.config_path != *out.check_config_path) {
    return Error{"--config and --check-config name different files; give one"};
  }
  return out;
}

Config apply_overrides(Config config, const CommandLine& flags) {
  if (flags.interval) config.sampling.interval = *flags.interval;
  if (flags.metrics) config.metrics.listen = *flags.metrics;
  if (flags.socket) config.control.socket = *flags.socket;
  if (flags.state_dir) config.state_dir = *flags.state_dir;
  if (flags.budget_bytes) {
    config.budget_auto = flags.budget_auto;
    if (!flags.budget_auto) config.budget_bytes = *flags.budget_bytes;
  }
  if (flags.log_level) config.log_level = *flags.log_level;
  for (pid_t pid : flags.watch) {
    if (std::find(config.watch.begin(), config.watch.end(), pid) == config.watch.end()) {
      config.watch.push_back(pid);
    }
  }
  for (const auto& [pid, scope] : flags.watch_scopes) config.watch_scopes[pid] = scope;
  return config;
}

std::string usage_text() {
  return R"(Usage: ramguardd [FLAGS]

Guards a training coordinator's memory: samples it, gates Loads against a budget, and says
whether the run leaked between rounds and released memory afterwards. Without flags it runs
on embedded defaults (budget 16GB, interval 2s, metrics on 127.0.0.1:9797).

Flags (--flag VALUE or --flag=VALUE; flags win over the configuration file):
  --config FILE          YAML configuration (see deploy/ramguard.example.yaml)
  --check-config FILE    validate FILE, print every problem, exit 0 if valid, 1 if not
  --check-ledger DIR     check the ledger in state directory DIR (the daemon must be stopped);
                         an unusable one is moved aside and salvaged into a fresh ledger, as
                         at startup; prints a summary, exit 0 if DIR has a usable ledger and
                         nothing was lost, 2 if rows were lost (or are not known), 1 if no
                         usable ledger
  --watch PID            watch this process from startup (repeatable); tree:PID watches
                         it and its descendants, cgroup:PID its memory cgroup
  --interval DURATION    sampling interval, 10ms to 1h (default 2s)
  --metrics HOST:PORT    Prometheus listener (default 127.0.0.1:9797; port 0 picks one)
  --socket PATH          control socket (default: $RAMGUARD_SOCKET, else
                         /run/ramguard/ramguard.sock as root, else
                         $XDG_RUNTIME_DIR/ramguard.sock, else /tmp/ramguard-UID.sock)
  --state-dir DIR        run ledger directory (default /var/lib/ramguard as root, else
                         $XDG_STATE_HOME/ramguard or ~/.local/state/ramguard)
  --budget SIZE|auto     memory budget, e.g. 16GB (16e9 bytes) or 16GiB (default 16GB);
                         auto: MemTotal less system_reserve (1GB unless configured)
  --log-level LEVEL      debug, info, warning or error (default info)
  -h, --help             this text
  --version              print the version

Sizes: plain bytes or a number with kB MB GB TB (powers of 1000) or KiB MiB GiB TiB;
Kubernetes forms k M G T and Ki Mi Gi Ti are the same units.
Durations: a number with ms, s, m or h.
Signals: SIGTERM stops cleanly; SIGHUP reloads the configuration file (a bad file keeps the
running configuration and logs why).
)";
}

std::string version_text() {
  return std::string("ramguardd ") + RAMGUARD_VERSION;
}

}  // namespace ramguard
