#pragma once
// The subcommand table: one row per subcommand with its options, help, builder and runner.
// parse_args, `ramguard help` and run_invocation are derived from it, so adding a subcommand
// is one row here plus its builder and runner (commands.hpp).

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string_view>
#include <vector>

#include "args.hpp"
#include "scan.hpp"

namespace ramguard::cli {

struct Subcommand {
  std::string_view name{};
  std::vector<OptionSpec> options{};
  std::string_view synopsis{};          // the overview's left column
  std::string_view summary{};           // the overview's right column
  std::string_view help{};              // `ramguard help NAME`
  bool positionals_start_rest = false;  // exec: the first positional starts the command
  std::function<Command(const Scanned&)> build{};
  std::function<int(const GlobalOptions&, const Command&, std::ostream& out, std::ostream& err)>
      run{};
  std::size_t command_index = 0;  // the alternative of Command that build returns
};

const std::vector<Subcommand>& subcommands();
const Subcommand* find_subcommand(std::string_view name);

}  // namespace ramguard::cli
