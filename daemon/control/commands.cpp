#include "control/commands.hpp"

#include <array>

namespace ramguard::control {
namespace {

using C = v1::Request;
using P = CommandSpec::Prepare;

constexpr std::array kTable = {
    CommandSpec{C::kHello},
    CommandSpec{C::kRunStart},
    CommandSpec{C::kMark, false, P::kCensusPlacement},
    CommandSpec{C::kRunEnd},
    CommandSpec{C::kAdmit, false, P::kAdmission},
    CommandSpec{C::kRelease},
    CommandSpec{C::kStatus, true},
    CommandSpec{C::kReport, true, P::kStoredReads},
    CommandSpec{C::kCompare, true, P::kStoredReads},
    CommandSpec{C::kListRuns, true},
};

}  // namespace

std::span<const CommandSpec> command_table() {
  return kTable;
}

const CommandSpec* command_spec(v1::Request::CommandCase command) {
  for (const CommandSpec& spec : kTable) {
    if (spec.command == command) return &spec;
  }
  return nullptr;
}

const std::string& command_names() {
  static const std::string names = [] {
    std::string out;
    for (const CommandSpec& spec : kTable) {
      const auto* field = v1::Request::descriptor()->FindFieldByNumber(spec.command);
      if (!out.empty()) out += ", ";
      out += field != nullptr ? field->json_name() : "?";
    }
    return out;
  }();
  return names;
}

}  // namespace ramguard::control
