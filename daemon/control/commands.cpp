#include "control/commands.hpp"

#include <array>

#include "control/dispatcher.hpp"

namespace ramguard::control {

std::span<const CommandSpec> command_table() {
  using C = v1::Request;
  using D = Dispatcher;
  using P = CommandSpec::Prepare;
  static constexpr std::array kTable = {
      CommandSpec{C::kHello, &D::hello},
      CommandSpec{C::kRunStart, &D::run_start},
      CommandSpec{C::kMark, &D::mark, false, P::kCensusPlacement},
      CommandSpec{C::kRunEnd, &D::run_end},
      CommandSpec{C::kAdmit, &D::admit, false, P::kAdmission},
      CommandSpec{C::kRelease, &D::release},
      CommandSpec{C::kStatus, &D::status, true},
      CommandSpec{C::kReport, &D::report, true, P::kStoredReads},
      CommandSpec{C::kCompare, &D::compare, true, P::kStoredReads},
      CommandSpec{C::kListRuns, &D::list_runs, true},
  };
  return kTable;
}

const CommandSpec* command_spec(v1::Request::CommandCase command) {
  for (const CommandSpec& spec : command_table()) {
    if (spec.command == command) return &spec;
  }
  return nullptr;
}

}  // namespace ramguard::control
