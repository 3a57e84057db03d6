#pragma once
// How one subcommand's arguments are read: its options (declared in its row of the subcommand
// table) are scanned into values and positionals, then typed readers turn them into values or
// throw UsageError naming the bad argument. parse_args turns UsageError into the message.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"

namespace ramguard::cli {

struct UsageError {
  std::string message;
};

struct OptionSpec {
  std::string_view name;  // without "--"
  bool takes_value;
  bool repeatable = false;
};

// The options every subcommand accepts (anywhere before "--").
const std::vector<OptionSpec>& global_options();

// Options by name, positionals in order, and the command after "--" (or, with
// positionals_start_rest, from the first positional on, as env(1) does).
struct Scanned {
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  std::vector<std::string> positionals;
  std::vector<std::string> rest;
  bool has(std::string_view name) const { return values.find(name) != values.end(); }
  const std::string* get(std::string_view name) const;
};

// Scans args[i..] against options and the global options; where names the command in messages.
Scanned scan(const std::vector<std::string>& args, std::size_t i, std::string_view where,
             const std::vector<OptionSpec>& options, bool positionals_start_rest = false);

// " (did you mean 'X'?)" for the closest candidate within a third of the word, else "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates,
                         std::string_view prefix = {});

// Typed readers: 0 or "" when the option is absent.
std::uint64_t size_option(const Scanned& s, std::string_view name);
std::uint64_t count_option(const Scanned& s, std::string_view name, std::uint64_t max);
std::uint32_t u32_option(const Scanned& s, std::string_view name);
std::string text_option(const Scanned& s, std::string_view name);
// --scope process|tree|cgroup; --cgroup alone implies cgroup.
std::string scope_option(const Scanned& s);
// Every --label KEY=VALUE, keys unique.
Labels label_options(const Scanned& s);
// The same rule the daemon applies to phase names.
std::string phase_name(const std::string& phase);
// Between min and max positionals (names them when too few) and nothing after "--".
void expect_positionals(const Scanned& s, std::string_view command, std::size_t min,
                        std::size_t max, std::string_view names);

}  // namespace ramguard::cli
