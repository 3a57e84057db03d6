// describe_exit: which exits count as OOM kills, and the words used. Table-driven, pure.
#include "sampling/exit_info.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

struct Case {
  const char* name;
  ExitInfo info;
  OomEvidence oom;
  bool oom_killed;
  const char* detail_part;
};

ExitInfo child_exit(int code) {
  return ExitInfo{true, code, 0, false, false, ""};
}
ExitInfo child_signal(int sig, bool core = false) {
  return ExitInfo{true, 0, sig, core, false, ""};
}
OomEvidence rose() {
  return OomEvidence{1, 2, "/cg/memory.oom_control", ""};
}
OomEvidence flat() {
  return OomEvidence{1, 1, "/cg/memory.oom_control", ""};
}

class DescribeExit : public ::testing::TestWithParam<Case> {};
TEST_P(DescribeExit, Says) {
  ExitInfo info = GetParam().info;
  describe_exit(info, 77, GetParam().oom);
  EXPECT_EQ(info.oom_killed, GetParam().oom_killed) << info.detail;
  EXPECT_NE(info.detail.find(GetParam().detail_part), std::string::npos) << info.detail;
  EXPECT_EQ(info.detail.rfind("process 77", 0), 0u) << info.detail;
}
INSTANTIATE_TEST_SUITE_P(
    Table, DescribeExit,
    ::testing::Values(
        Case{"code", child_exit(3), flat(), false, "exited with code 3"},
        Case{"sigkill_no_rise", child_signal(SIGKILL), flat(), false, "killed by SIGKILL (9)"},
        Case{"sigkill_rise", child_signal(SIGKILL), rose(), true,
             "OOM kill: /cg/memory.oom_control oom_kill 1 -> 2"},
        Case{"exit_with_rise", child_exit(0), rose(), false, "an OOM kill in its cgroup"},
        Case{"core", child_signal(SIGSEGV, true), flat(), false, "SIGSEGV (11), core dumped"},
        Case{"non_child", ExitInfo{}, flat(), false, "exit status is unknown"},
        Case{"non_child_rise", ExitInfo{}, rose(), true, "OOM kill"},
        Case{"no_cgroup", child_signal(SIGKILL), OomEvidence{{}, {}, "", "no memory cgroup listed"},
             false, "OOM kills cannot be told: no memory cgroup listed"}),
    [](const auto& tp) { return std::string(tp.param.name); });

}  // namespace
}  // namespace ramguard
