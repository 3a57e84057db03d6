#include "scan.hpp"

#include <algorithm>
#include <optional>

#include "ramguard/base/closest_word.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/units.hpp"

namespace ramguard::cli {
namespace {

const OptionSpec* find_option(const std::vector<OptionSpec>& specs, std::string_view name) {
  auto it =
      std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& o) { return o.name == name; });
  return it == specs.end() ? nullptr : &*it;
}

}  // namespace

const std::vector<OptionSpec>& global_options() {
  static const std::vector<OptionSpec> options{{"socket", true}, {"timeout", true},
                                               {"json", false},  {"gib", false},
                                               {"help", false},  {"version", false}};
  return options;
}

const std::string* Scanned::get(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? nullptr : &it->second.back();
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates,
                         std::string_view prefix) {
  const std::string_view best = closest_word(word, candidates);
  return best.empty() ? std::string()
                      : " (did you mean '" + std::string(prefix) + std::string(best) + "'?)";
}

Scanned scan(const std::vector<std::string>& args, std::size_t i, std::string_view where_view,
             const std::vector<OptionSpec>& options, bool positionals_start_rest) {
  Scanned out;
  const std::string where(where_view);
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
      const OptionSpec* spec = find_option(options, name);
      if (spec == nullptr) spec = find_option(global_options(), name);
      if (spec == nullptr) {
        std::vector<std::string_view> names;
        for (const auto* list : {&options, &global_options()}) {
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
    if (positionals_start_rest) {
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

std::string phase_name(const std::string& phase) {
  if (!protocol::is_phase_name(phase)) {
    throw UsageError{"invalid phase '" + phase + "': a phase is " + protocol::kPhaseNameRule};
  }
  return phase;
}

}  // namespace ramguard::cli
