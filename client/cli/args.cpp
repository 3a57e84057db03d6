#include "args.hpp"

#include "ramguard/base/closest_word.hpp"
#include "ramguard/units.hpp"
#include "scan.hpp"
#include "subcommands.hpp"

namespace ramguard::cli {
namespace {

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
    std::size_t i = 0;
    std::vector<std::string> leading;
    while (i < args.size() && args[i].starts_with("-") && args[i] != "--") {
      leading.push_back(args[i]);
      const bool takes_value = (args[i] == "--socket" || args[i] == "--timeout");
      if (takes_value && i + 1 < args.size()) leading.push_back(args[++i]);
      ++i;
    }
    const Scanned globals = scan(leading, 0, "ramguard", {});
    apply_globals(globals, invocation.global);
    if (globals.has("version")) return {Invocation{invocation.global, VersionArgs{}}, {}};
    if (i >= args.size()) {
      if (globals.has("help")) return {Invocation{invocation.global, HelpArgs{}}, {}};
      throw UsageError{"missing subcommand (see ramguard --help)"};
    }
    const std::string& name = args[i];
    const Subcommand* sub = find_subcommand(name);
    if (sub == nullptr) {
      std::vector<std::string_view> names;
      for (const Subcommand& c : subcommands()) names.push_back(c.name);
      // Words people type for the commands that exist.
      std::string hint = did_you_mean(name, names);
      if (hint.empty() && (edit_distance(name, "list") <= 1 || name == "ls" || name == "history")) {
        hint = " (did you mean 'runs'?)";
      }
      if (hint.empty() && (name == "show" || name == "info")) hint = " (did you mean 'report'?)";
      throw UsageError{"unknown subcommand '" + name + "'" + hint + " (see ramguard --help)"};
    }
    const Scanned scanned =
        scan(args, i + 1, "ramguard " + name, sub->options, sub->positionals_start_rest);
    if (scanned.has("version")) return {Invocation{invocation.global, VersionArgs{}}, {}};
    if (scanned.has("help") || globals.has("help")) {
      return {Invocation{invocation.global, HelpArgs{name}}, {}};
    }
    apply_globals(scanned, invocation.global);
    invocation.command = sub->build(scanned);
    return {std::move(invocation), {}};
  } catch (const UsageError& e) {
    return {std::nullopt, e.message};
  }
}

}  // namespace ramguard::cli
