// The plugin's rules without a cluster: plugstack.conf arguments, --ramguard-* values, the run's
// labels; and libramguard's start_run attaching to a launcher's run (RAMGUARD_RUN_ATTACH).
#include "step_options.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "ramguard/client.hpp"
#include "step_guard.hpp"
#include "unit/client/fake_server.hpp"

namespace ramguard::slurm {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;

TEST(PluginArgs, DefaultsAreNotRequiredWithBoundedWaits) {
  const auto config = parse_plugin_args({});
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->required);
  EXPECT_TRUE(config->socket_path.empty());
  EXPECT_EQ(config->timeout.count(), 3000);
  EXPECT_EQ(config->verdict_wait.count(), 3000);
}

TEST(PluginArgs, EveryKeyIsRead) {
  const auto config = parse_plugin_args({"socket=/run/rg.sock", "default_plan=fedavg",
                                         "required=yes", "timeout=500ms", "verdict_wait=2s"});
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->socket_path, "/run/rg.sock");
  EXPECT_EQ(config->default_plan, "fedavg");
  EXPECT_TRUE(config->required);
  EXPECT_EQ(config->timeout.count(), 500);
  EXPECT_EQ(config->verdict_wait.count(), 2000);
}

TEST(PluginArgs, BadArgumentsAreNamed) {
  EXPECT_THAT(parse_plugin_args({"required=maybe"}).error().message, HasSubstr("yes or no"));
  EXPECT_THAT(parse_plugin_args({"sock=/x"}).error().message, HasSubstr("unknown key"));
  EXPECT_THAT(parse_plugin_args({"required"}).error().message, HasSubstr("KEY=VALUE"));
  EXPECT_THAT(parse_plugin_args({"timeout=5"}).error().message, HasSubstr("timeout=5"));
  // slurmstepd must never wait on one call for long.
  EXPECT_THAT(parse_plugin_args({"timeout=10m"}).error().message, HasSubstr("1ms to 1m"));
}

TEST(StepOptions, SizesCountsAndNames) {
  StepRequest r;
  EXPECT_FALSE(r.wants_admission());
  ASSERT_TRUE(set_step_option(r, "model", "2.5GB").ok());
  ASSERT_TRUE(set_step_option(r, "plan", "fedavg").ok());
  ASSERT_TRUE(set_step_option(r, "hosts", "4").ok());
  ASSERT_TRUE(set_step_option(r, "rounds", "10").ok());
  ASSERT_TRUE(set_step_option(r, "scope", "tree").ok());
  ASSERT_TRUE(set_step_option(r, "job", "vit-h14").ok());
  EXPECT_EQ(r.model_bytes, 2'500'000'000u);
  EXPECT_EQ(r.plan, "fedavg");
  EXPECT_EQ(r.hosts, 4u);
  EXPECT_EQ(r.rounds, 10u);
  EXPECT_EQ(r.scope, "tree");
  EXPECT_EQ(r.job, "vit-h14");
  EXPECT_TRUE(r.wants_admission());
  ASSERT_TRUE(set_step_option(r, "estimate", "16GiB").ok());
  EXPECT_EQ(r.estimate_bytes, 16ull << 30);
}

TEST(StepOptions, BadValuesNameTheOption) {
  StepRequest r;
  EXPECT_THAT(set_step_option(r, "estimate", "lots").error().message,
              HasSubstr("--ramguard-estimate"));
  EXPECT_THAT(set_step_option(r, "hosts", "-1").error().message, HasSubstr("--ramguard-hosts"));
  EXPECT_THAT(set_step_option(r, "scope", "node").error().message,
              HasSubstr("process, tree or cgroup"));
  EXPECT_THAT(set_step_option(r, "job", "").error().message, HasSubstr("--ramguard-job"));
  EXPECT_FALSE(r.wants_admission());
}

TEST(StepOptions, EnvironmentNames) {
  EXPECT_EQ(option_env_name("estimate"), "SLURM_SPANK_RAMGUARD_ESTIMATE");
  EXPECT_EQ(option_env_name("scope"), "SLURM_SPANK_RAMGUARD_SCOPE");
}

TEST(StepLabels, JobStepUserAndCluster) {
  const StepIdentity id{.job_id = 42, .step_id = "batch", .user = "alice", .cluster = "c1"};
  EXPECT_THAT(step_labels(id),
              ::testing::ElementsAre(Pair("slurm_job_id", "42"), Pair("slurm_step_id", "batch"),
                                     Pair("slurm_user", "alice"), Pair("slurm_cluster", "c1")));
}

TEST(StartGuard, UnreachableDaemonFollowsRequired) {
  PluginConfig config{.socket_path = "/nonexistent/ramguard.sock"};
  const StepIdentity id{.job_id = 1, .step_id = "0", .user = "u", .pid = 1};
  StartOutcome out = start_guard(config, StepRequest{.estimate_bytes = 1}, id);
  EXPECT_EQ(out.decision, StartOutcome::Decision::kUnguarded);
  ASSERT_EQ(out.lines.size(), 1u);
  EXPECT_THAT(out.lines[0], HasSubstr("unguarded"));
  EXPECT_THAT(out.lines[0], HasSubstr("/nonexistent/ramguard.sock"));
  config.required = true;
  out = start_guard(config, StepRequest{.estimate_bytes = 1}, id);
  EXPECT_EQ(out.decision, StartOutcome::Decision::kRefused);
  EXPECT_THAT(out.lines.at(0), HasSubstr("required and unreachable"));
}

v1::Reply answer(const v1::Request& request) {
  v1::Reply reply;
  if (request.has_run_start()) reply.mutable_run_start()->set_run_id("r-own");
  return reply;
}

// libramguard inside a launcher's run: start_run for this process attaches, sends nothing.
TEST(LauncherAttach, StartRunJoinsTheLaunchersRun) {
  test_support::FakeServer server(answer);
  Client client(server.path());
  ::setenv("RAMGUARD_RUN", "r-step", 1);
  ::setenv("RAMGUARD_RUN_ATTACH", "slurm", 1);
  const ramguard::Run attached = client.start_run({.job = "coordinator"});
  // Another process's run is still started: the attach is for this process only.
  const ramguard::Run other = client.start_run({.pid = 1, .job = "other"});
  ::unsetenv("RAMGUARD_RUN_ATTACH");
  const ramguard::Run own = client.start_run({.job = "coordinator"});  // RAMGUARD_RUN alone: exec's
  ::unsetenv("RAMGUARD_RUN");
  EXPECT_EQ(attached.id(), "r-step");
  EXPECT_EQ(other.id(), "r-own");
  EXPECT_EQ(own.id(), "r-own");
  int starts = 0;
  for (const auto& r : server.requests()) starts += r.has_run_start() ? 1 : 0;
  EXPECT_EQ(starts, 2);
}

}  // namespace
}  // namespace ramguard::slurm
