// From a parsed invocation to the subcommand.
#include <ostream>
#include <type_traits>

#include "commands.hpp"

namespace ramguard::cli {

int run_invocation(const Invocation& invocation, std::ostream& out, std::ostream& err) {
  const GlobalOptions& g = invocation.global;
  return std::visit(
      [&](const auto& a) -> int {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, HelpArgs>) {
          out << usage_text(a.topic);
          return kExitOk;
        } else if constexpr (std::is_same_v<T, VersionArgs>) {
          out << version_text() << "\n";
          return kExitOk;
        } else if constexpr (std::is_same_v<T, HelloArgs>) {
          return cmd_hello(g, out);
        } else if constexpr (std::is_same_v<T, AdmitArgs>) {
          return cmd_admit(g, a, out);
        } else if constexpr (std::is_same_v<T, StartArgs>) {
          return cmd_start(g, a, out);
        } else if constexpr (std::is_same_v<T, MarkArgs>) {
          return cmd_mark(g, a, out);
        } else if constexpr (std::is_same_v<T, RoundEndArgs>) {
          return cmd_round_end(g, a, out);
        } else if constexpr (std::is_same_v<T, EndArgs>) {
          return cmd_end(g, a, out);
        } else if constexpr (std::is_same_v<T, ReleaseArgs>) {
          return cmd_release(g, a, out);
        } else if constexpr (std::is_same_v<T, StatusArgs>) {
          return cmd_status(g, a, out);
        } else if constexpr (std::is_same_v<T, ExecArgs>) {
          return cmd_exec(g, a, err);
        } else if constexpr (std::is_same_v<T, RunsArgs>) {
          return cmd_runs(g, a, out);
        } else if constexpr (std::is_same_v<T, ReportArgs>) {
          return cmd_report(g, a, out);
        } else if constexpr (std::is_same_v<T, UiArgs>) {
          return cmd_ui(g, a, out, err);
        } else {
          static_assert(std::is_same_v<T, CompareArgs>);
          return cmd_compare(g, a, out);
        }
      },
      invocation.command);
}

}  // namespace ramguard::cli
