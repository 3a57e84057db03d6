#include "args.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "ramguard/base/closest_word.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/units.hpp"

namespace ramguard::cli {
namespace {

// Thrown inside this file only; parse_args turns it into ParseOutcome::error.
struct UsageError {
  std::string message;
};

struct OptionSpec {
  std::string_view name;
  bool takes_value;
  bool repeatable = false;
};

struct CommandSpec {
  std::string_view name;
  std::vector<OptionSpec> options;
};

const std::vector<OptionSpec> kGlobalOptions{{"socket", true}, {"timeout", true},
                                             {"json", false},  {"gib", false},
                                             {"help", false},  {"version", false}};

const std::vector<OptionSpec> kAdmitOptions{{"job", true},
                                            {"estimate", true},
                                            {"model-bytes", true},
                                            {"params", true},
                                            {"bytes-per-param", true},
                                            {"plan", true},
                                            {"hosts", true},
                                            {"pid", true},
                                            {"use-calibrated", false},
                                            {"scope", true}};

std::vector<OptionSpec> exec_options() {
  std::vector<OptionSpec> options = kAdmitOptions;
  std::erase_if(options, [](const OptionSpec& o) { return o.name == "pid"; });
  options.push_back({"label", true, true});
  options.push_back({"rounds", true});
  options.push_back({"allocator", true});
  options.push_back({"cgroup", true});
  return options;
}

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs{
      {"help", {}},
      {"hello", {}},
      {"admit", kAdmitOptions},
      {"start",
       {{"pid", true},
        {"self", false},
        {"job", true},
        {"label", true, true},
        {"model-bytes", true},
        {"rounds", true},
        {"hosts", true},
        {"reservation", true},
        {"scope", true},
        {"cgroup", true}}},
      {"mark", {{"round", true}}},
      {"round-end", {{"round", true}}},
      {"end", {}},
      {"release", {}},
      {"status", {}},
      {"exec", exec_options()},
      {"runs", {{"limit", true}, {"label", true, true}}},
      {"report", {{"svg", true}, {"html", true}}},
      {"ui", {{"listen", true}, {"refresh", true}}},
      {"compare", {{"label", true, true}, {"job", true}, {"format", true}}},
  };
  return specs;
}

// Options by name (without "--"), positionals in order, and the command after "--" for exec.
struct Scanned {
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::vector<std::string> positionals;
  std::vector<std::string> rest;
  bool has(std::string_view name) const { return values.find(name) != values.end(); }
  const std::string* get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second.back();
  }
};

// " (did you mean 'X'?)" for the closest candidate within a third of the word, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates,
                         std::string_view prefix = {}) {
  const std::string_view best = closest_word(word, candidates);
  return best.empty() ? std::string()
                      : " (did you mean '" + std::string(prefix) + std::string(best) + "'?)";
}

const OptionSpec* find_option(const std::vector<OptionSpec>& specs, std::string_view name) {
  auto it =
      std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& o) { return o.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

// Scans args[i..]; global options are accepted anywhere before "--". For exec the first
// positional starts the command, as with env(1).
Scanned scan(const std::vector<std::string>& args, std::size_t i, const CommandSpec& command) {
  Scanned out;
  const std::string where =
      command.name.empty() ? std::string("ramguard") : "ramguard " + std::string(command.name);
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return out;
    }
    if (arg == "-h") {
      out.values["help"].push_back("");
      continue;
    }
    if (arg.size() > 2 && arg.starts_with("--")) {
      std::string name = arg.substr(2);
      std::optional<std::string> inline_value;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name.resize(eq);
      }
      const OptionSpec* spec = find_option(command.options, name);
      if (spec == nullptr) spec = find_option(kGlobalOptions, name);
      if (spec == nullptr) {
        std::vector<std::string_view> names;
        for (const auto* list : {&command.options, &kGlobalOptions}) {
          for (const OptionSpec& o : *list) names.push_back(o.name);
        }
        throw UsageError{"unknown option '--" + name + "' for " + where +
                         did_you_mean(name, names, "--")};
      }
      std::string value;
      if (spec->takes_value) {
        if (inline_value) {
          value = *inline_value;
        } else if (i + 1 < args.size()) {
          value = args[++i];
        } else {
          throw UsageError{"option --" + name + " of " + where + " needs a value"};
        }
      } else if (inline_value) {
        throw UsageError{"option --" + name + " of " + where + " takes no value"};
      }
      auto& slot = out.values[name];
      if (!slot.empty() && !spec->repeatable) {
        throw UsageError{"option --" + name + " given twice for " + where};
      }
      slot.push_back(std::move(value));
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-')
      throw UsageError{"unknown option '" + arg + "' for " + where};
    if (command.name == "exec") {
      out.rest.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      return out;
    }
    out.positionals.push_back(arg);
  }
  return out;
}

std::uint64_t size_option(const Scanned& s, std::string_view name) {
  const std::string* text = s.get(name);
  if (text == nullptr) return 0;
  auto parsed = units::parse_size(*text);
  if (!parsed) throw UsageError{"--" + std::string(name) + ": " + parsed.error};
  return *parsed.value;
}

std::uint64_t count_option(const Scanned& s, std::string_view name, std::uint64_t max) {
  const std::string* text = s.get(name);
  if (text == nullptr) return 0;
  auto parsed = units::parse_count(*text, max);
  if (!parsed) throw UsageError{"--" + std::string(name) + ": " + parsed.error};
  return *parsed.value;
}

std::uint32_t u32_option(const Scanned& s, std::string_view name) {
  return static_cast<std::uint32_t>(
      count_option(s, name, std::numeric_limits<std::uint32_t>::max()));
}

std::string text_option(const Scanned& s, std::string_view name) {
  const std::string* text = s.get(name);
  if (text == nullptr) return {};
  if (text->empty()) throw UsageError{"--" + std::string(name) + " must not be empty"};
  return *text;
}

// ui --listen HOST:PORT (IPv4; PORT 0 or omitted: any free port) --refresh DURATION.
UiArgs ui_args(const Scanned& s) {
  UiArgs a;
  if (const std::string* listen = s.get("listen")) {
    const std::size_t colon = listen->rfind(':');
    const std::string host = colon == std::string::npos ? *listen : listen->substr(0, colon);
    if (host.empty())
      throw UsageError{"--listen '" + *listen + "' needs a host, e.g. 127.0.0.1:8080"};
    a.host = host;
    if (colon != std::string::npos) {
      auto port = units::parse_count(listen->substr(colon + 1), 65535);
      if (!port) throw UsageError{"--listen '" + *listen + "': port: " + port.error};
      a.port = static_cast<std::uint16_t>(*port.value);
    }
  }
  if (const std::string* refresh = s.get("refresh")) {
    auto parsed = units::parse_duration(*refresh);
    if (!parsed) throw UsageError{"--refresh: " + parsed.error};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*parsed.value).count();
    if (ms < 500 || ms > 3'600'000) {
      throw UsageError{"--refresh '" + *refresh + "' must be between 500ms and 1h"};
    }
    a.refresh_ms = static_cast<std::uint32_t>(ms);
  }
  return a;
}

// --scope process|cgroup; --cgroup alone implies cgroup.
std::string scope_option(const Scanned& s) {
  std::string scope = text_option(s, "scope");
  if (scope.empty() && s.has("cgroup")) scope = "cgroup";
  if (!scope.empty() && scope != "process" && scope != "tree" && scope != "cgroup") {
    throw UsageError{"--scope '" + scope + "' is not known; use process, tree or cgroup"};
  }
  if (scope != "cgroup" && !scope.empty() && s.has("cgroup")) {
    throw UsageError{"--cgroup needs --scope cgroup, not " + scope};
  }
  return scope;
}

Labels label_options(const Scanned& s) {
  Labels labels;
  auto it = s.values.find(std::string_view("label"));
  if (it == s.values.end()) return labels;
  for (const std::string& text : it->second) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError{"--label '" + text + "': expected KEY=VALUE with a non-empty KEY"};
    }
    if (!labels.emplace(text.substr(0, eq), text.substr(eq + 1)).second) {
      throw UsageError{"--label: key '" + text.substr(0, eq) + "' given twice"};
    }
  }
  return labels;
}

void expect_positionals(const Scanned& s, std::string_view command, std::size_t min,
                        std::size_t max, std::string_view names) {
  if (s.positionals.size() < min) {
    throw UsageError{"ramguard " + std::string(command) + " needs " + std::string(names)};
  }
  if (s.positionals.size() > max) {
    throw UsageError{"unexpected argument '" + s.positionals[max] + "' for ramguard " +
                     std::string(command)};
  }
  if (!s.rest.empty())
    throw UsageError{"ramguard " + std::string(command) + " takes no command after --"};
}

// The same rule the daemon applies to phase names.
std::string phase_name(const std::string& phase) {
  if (!protocol::is_phase_name(phase)) {
    throw UsageError{"invalid phase '" + phase + "': a phase is " + protocol::kPhaseNameRule};
  }
  return phase;
}

AdmitArgs admit_args(const Scanned& s, bool require_source) {
  AdmitArgs a;
  a.job = text_option(s, "job");
  a.estimate_bytes = size_option(s, "estimate");
  a.model_bytes = size_option(s, "model-bytes");
  a.parameter_count = count_option(s, "params", std::numeric_limits<std::uint64_t>::max());
  if (const std::string* bpp = s.get("bytes-per-param")) {
    const auto [end, ec] =
        std::from_chars(bpp->data(), bpp->data() + bpp->size(), a.bytes_per_parameter);
    if (ec != std::errc() || end != bpp->data() + bpp->size() ||
        !std::isfinite(a.bytes_per_parameter) || a.bytes_per_parameter <= 0) {
      throw UsageError{"--bytes-per-param '" + *bpp + "': expected a positive number, e.g. 4"};
    }
  }
  a.plan = text_option(s, "plan");
  a.hosts = u32_option(s, "hosts");
  a.pid = u32_option(s, "pid");
  a.use_calibrated = s.has("use-calibrated");
  a.scope = scope_option(s);

  const bool has_params = s.has("params") || s.has("bytes-per-param");
  const bool has_model = s.has("model-bytes") || has_params;
  if (s.has("params") != s.has("bytes-per-param")) {
    throw UsageError{"--params and --bytes-per-param go together"};
  }
  if (s.has("model-bytes") && has_params) {
    throw UsageError{
        "give the model as --model-bytes or as --params with --bytes-per-param, not both"};
  }
  if (s.has("estimate") && (has_model || s.has("plan"))) {
    throw UsageError{"give either --estimate or a model with --plan, not both"};
  }
  if (has_model != s.has("plan")) {
    throw UsageError{has_model ? "a model size needs --plan NAME to turn it into an estimate"
                               : "--plan needs the model: --model-bytes SIZE or --params N "
                                 "--bytes-per-param B"};
  }
  if (a.use_calibrated && a.job.empty()) throw UsageError{"--use-calibrated needs --job"};
  if (require_source && !s.has("estimate") && !has_model && !a.use_calibrated) {
    throw UsageError{
        "ramguard admit needs an estimate: --estimate SIZE, or --plan NAME with "
        "--model-bytes SIZE (or --params N --bytes-per-param B), or --use-calibrated"};
  }
  return a;
}

Command build(std::string_view name, const Scanned& s) {
  if (name == "help") return HelpArgs{s.positionals.empty() ? "" : s.positionals.front()};
  if (name == "hello") {
    expect_positionals(s, name, 0, 0, "");
    return HelloArgs{};
  }
  if (name == "admit") {
    expect_positionals(s, name, 0, 0, "");
    return admit_args(s, true);
  }
  if (name == "start") {
    expect_positionals(s, name, 0, 0, "");
    StartArgs a;
    a.pid = u32_option(s, "pid");
    a.job = text_option(s, "job");
    a.labels = label_options(s);
    a.model_bytes = size_option(s, "model-bytes");
    a.rounds = u32_option(s, "rounds");
    a.hosts = u32_option(s, "hosts");
    a.reservation_id = text_option(s, "reservation");
    a.scope = scope_option(s);
    a.cgroup_path = text_option(s, "cgroup");
    // Without a PID the daemon would guard the process that asks: this CLI, which exits at once.
    if (s.has("pid") && s.has("self")) throw UsageError{"--pid and --self exclude each other"};
    if (a.pid == 0 && !s.has("self")) {
      throw UsageError{
          "ramguard start needs --pid PID, the coordinator's process (this command exits at "
          "once, so guarding it would end the run as 'exited'); --self guards the calling "
          "process anyway"};
    }
    return a;
  }
  if (name == "mark") {
    expect_positionals(s, name, 3, 3, "RUN begin|end PHASE");
    const std::string& kind = s.positionals[1];
    if (kind != "begin" && kind != "end") {
      throw UsageError{"ramguard mark: '" + kind + "' is neither begin nor end"};
    }
    return MarkArgs{s.positionals[0], kind == "begin", phase_name(s.positionals[2]),
                    u32_option(s, "round")};
  }
  if (name == "round-end") {
    expect_positionals(s, name, 1, 1, "RUN");
    return RoundEndArgs{s.positionals[0], u32_option(s, "round")};
  }
  if (name == "end") {
    expect_positionals(s, name, 1, 1, "RUN");
    return EndArgs{s.positionals[0]};
  }
  if (name == "release") {
    expect_positionals(s, name, 1, 1, "RESERVATION");
    return ReleaseArgs{s.positionals[0]};
  }
  if (name == "status") {
    expect_positionals(s, name, 0, 1, "");
    return StatusArgs{s.positionals.empty() ? "" : s.positionals[0]};
  }
  if (name == "exec") {
    ExecArgs a;
    a.admit = admit_args(s, false);
    a.admission = s.has("estimate") || s.has("plan") || a.admit.use_calibrated;
    a.labels = label_options(s);
    a.rounds = u32_option(s, "rounds");
    if (const std::string* allocator = s.get("allocator")) {
      if (*allocator != "jemalloc" && *allocator != "glibc-tuned" && *allocator != "glibc") {
        throw UsageError{"ramguard exec --allocator '" + *allocator +
                         "' is not known; use jemalloc, glibc-tuned or glibc"};
      }
      a.allocator = *allocator;
      // The allocator is a label, so `ramguard compare --label job=...` shows them side by side.
      const auto given = a.labels.find("allocator");
      if (given != a.labels.end() && given->second != a.allocator) {
        throw UsageError{"ramguard exec: --label allocator=" + given->second +
                         " contradicts --allocator " + a.allocator};
      }
      a.labels["allocator"] = a.allocator;
    }
    a.scope = scope_option(s);
    a.cgroup_path = text_option(s, "cgroup");
    a.command = s.rest;
    if (a.command.empty())
      throw UsageError{"ramguard exec needs a command: ramguard exec [OPTIONS] -- CMD ARGS..."};
    return a;
  }
  if (name == "runs") {
    expect_positionals(s, name, 0, 0, "");
    return RunsArgs{u32_option(s, "limit"), label_options(s)};
  }
  if (name == "report") {
    expect_positionals(s, name, 1, 1, "RUN");
    return ReportArgs{s.positionals[0], text_option(s, "svg"), text_option(s, "html")};
  }
  if (name == "ui") {
    expect_positionals(s, name, 0, 0, "");
    return ui_args(s);
  }
  // compare
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

void apply_globals(const Scanned& s, GlobalOptions& global) {
  if (const std::string* socket = s.get("socket")) {
    if (socket->empty()) throw UsageError{"--socket must not be empty"};
    global.socket_path = *socket;
  }
  if (const std::string* timeout = s.get("timeout")) {
    auto parsed = units::parse_duration(*timeout);
    if (!parsed) throw UsageError{"--timeout: " + parsed.error};
    if (parsed.value->count() <= 0)
      throw UsageError{"--timeout '" + *timeout + "' must be positive"};
    // Rounded up: a positive timeout below a millisecond must not become zero.
    global.timeout = std::chrono::ceil<std::chrono::milliseconds>(*parsed.value);
  }
  if (s.has("json")) global.json = true;
  if (s.has("gib")) global.binary_units = true;
}

}  // namespace

ParseOutcome parse_args(const std::vector<std::string>& args) {
  try {
    Invocation invocation;
    // Global options before the subcommand.
    static const CommandSpec kNone{"", {}};
    std::size_t i = 0;
    std::vector<std::string> leading;
    while (i < args.size() && args[i].starts_with("-") && args[i] != "--") {
      leading.push_back(args[i]);
      const bool takes_value = (args[i] == "--socket" || args[i] == "--timeout");
      if (takes_value && i + 1 < args.size()) leading.push_back(args[++i]);
      ++i;
    }
    const Scanned globals = scan(leading, 0, kNone);
    apply_globals(globals, invocation.global);
    if (globals.has("version")) return {Invocation{invocation.global, VersionArgs{}}, {}};
    if (i >= args.size()) {
      if (globals.has("help")) return {Invocation{invocation.global, HelpArgs{}}, {}};
      throw UsageError{"missing subcommand (see ramguard --help)"};
    }
    const std::string& name = args[i];
    const auto& specs = command_specs();
    auto spec = std::find_if(specs.begin(), specs.end(),
                             [&](const CommandSpec& c) { return c.name == name; });
    if (spec == specs.end()) {
      std::vector<std::string_view> names;
      for (const CommandSpec& c : specs) names.push_back(c.name);
      // Words people type for the commands that exist.
      std::string hint = did_you_mean(name, names);
      if (hint.empty() && (edit_distance(name, "list") <= 1 || name == "ls" || name == "history")) {
        hint = " (did you mean 'runs'?)";
      }
      if (hint.empty() && (name == "show" || name == "info")) hint = " (did you mean 'report'?)";
      throw UsageError{"unknown subcommand '" + name + "'" + hint + " (see ramguard --help)"};
    }
    const Scanned scanned = scan(args, i + 1, *spec);
    if (scanned.has("version")) return {Invocation{invocation.global, VersionArgs{}}, {}};
    if (scanned.has("help") || globals.has("help")) {
      return {Invocation{invocation.global, HelpArgs{name}}, {}};
    }
    apply_globals(scanned, invocation.global);
    invocation.command = build(spec->name, scanned);
    return {std::move(invocation), {}};
  } catch (const UsageError& e) {
    return {std::nullopt, e.message};
  }
}

}  // namespace ramguard::cli
