// The startup summary, and where the socket and state directory go when left unset.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/describe.hpp"
#include "config/load.hpp"
#include "config/paths.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;

TEST(Describe, DefaultsSummary) {
  const std::string d = describe_config(default_config());
  EXPECT_THAT(d, HasSubstr("budget 16.00 GB (margin 0 B), sampling every 2s"));
  EXPECT_THAT(d,
              HasSubstr("control socket (auto) (mode 0660), TCP off; metrics on 127.0.0.1:9797"));
  EXPECT_THAT(d, HasSubstr("state dir (auto); log level info"));
  EXPECT_THAT(
      d, HasSubstr("plans: fedavg (load, aggregation, synchronization, save; overhead 0.16 GB)"));
  EXPECT_THAT(d, HasSubstr("phase gaps: aggregation.end -> synchronization.begin <= 10s"));
  // The embedded thresholds are in model copies, with the bytes for a run without a model size.
  EXPECT_THAT(d, HasSubstr("growth 0.2 model copies/round (0.51 GB/round for a run without a "
                           "model size), runaway 0.8 model copies/s (0.20 GB/s for a run without "
                           "a model size), release 0.4 model copies (1.00 GB for a run without a "
                           "model size) within 30s, headroom 90%, lease 1m"));
  EXPECT_THAT(d, ::testing::Not(HasSubstr("watching")));
}

TEST(Describe, ReflectsTheConfiguration) {
  auto c = parse_config_yaml(
      "budget: 64GB\nsampling: { interval: 500ms }\nphase_gaps: []\nplans: {}\nwatch: [5]\n"
      "control: { socket: /tmp/x.sock, tcp: { enabled: true, token_file: /t } }\n",
      "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const std::string d = describe_config(*c);
  EXPECT_THAT(d, HasSubstr("budget 64.00 GB"));
  EXPECT_THAT(d, HasSubstr("sampling every 500ms"));
  EXPECT_THAT(d, HasSubstr("control socket /tmp/x.sock (mode 0660), TCP on 127.0.0.1:9798"));
  EXPECT_THAT(d, HasSubstr("plans: none"));
  EXPECT_THAT(d, HasSubstr("phase gaps: none"));
  EXPECT_THAT(d, HasSubstr("watching PIDs: 5"));
}

TEST(Describe, ShowsThresholdsInModelCopiesWithTheirBytesFallback) {
  auto c = parse_config_yaml(
      "growth: { min_model_copies: 0.2, runaway_bytes_per_second: 1GB,"
      " runaway_model_copies_per_second: 0.8 }\nrelease: { slack_model_copies: 0.4 }\n",
      "d.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const std::string d = describe_config(*c);
  EXPECT_THAT(d, HasSubstr("growth 0.2 model copies/round (0.51 GB/round for a run without a "
                           "model size)"));
  EXPECT_THAT(d, HasSubstr("runaway 1.00 GB/s, release"));  // given in bytes too: bytes win
  EXPECT_THAT(d, HasSubstr("release 0.4 model copies (1.00 GB for a run without a model size)"));
}

// What --check-config prints against the running daemon's <state_dir>/running-config.
TEST(Describe, DifferencesFromTheRunningSettingsAreListedKeyByKey) {
  const Config running = default_config();
  auto next = parse_config_yaml("budget: 8GB\nmetrics: { job_names: plain }\n", "t");
  ASSERT_TRUE(next.ok());
  const auto diff = config_differences(settings_text(running), settings_text(*next));
  ASSERT_EQ(diff.size(), 3u) << diff.size();
  EXPECT_EQ(diff[0], "budget: 16.00 GB -> 8.00 GB");
  EXPECT_EQ(diff[1],
            "admission.max_reserved_per_user: 75% of the budget (12.00 GB) -> 75% of the budget "
            "(6.00 GB)");
  EXPECT_EQ(diff[2], "metrics.job_names: hash -> plain");
  EXPECT_TRUE(config_differences(settings_text(running), settings_text(running)).empty());
}

TEST(Paths, SocketResolutionOrder) {
  Config c = default_config();
  RuntimeEnv root{0, std::nullopt, "/run/user/0", std::nullopt, "/root"};
  EXPECT_EQ(resolve_socket_path(c, root), "/run/ramguard/ramguard.sock");
  RuntimeEnv user{1000, std::nullopt, "/run/user/1000", std::nullopt, "/home/u"};
  EXPECT_EQ(resolve_socket_path(c, user), "/run/user/1000/ramguard.sock");
  user.xdg_runtime_dir.reset();
  EXPECT_EQ(resolve_socket_path(c, user), "/tmp/ramguard-1000.sock");
  user.ramguard_socket = "/env.sock";
  root.ramguard_socket = "/env.sock";
  EXPECT_EQ(resolve_socket_path(c, user), "/env.sock");
  EXPECT_EQ(resolve_socket_path(c, root), "/env.sock");
  c.control.socket = "/configured.sock";  // configuration (or --socket) wins over the variable
  EXPECT_EQ(resolve_socket_path(c, user), "/configured.sock");
}

TEST(Paths, StateDirResolutionOrder) {
  Config c = default_config();
  EXPECT_EQ(resolve_state_dir(c, RuntimeEnv{0, {}, {}, "/x", "/root"}), "/var/lib/ramguard");
  EXPECT_EQ(resolve_state_dir(c, RuntimeEnv{1000, {}, {}, "/xdg", "/home/u"}), "/xdg/ramguard");
  EXPECT_EQ(resolve_state_dir(c, RuntimeEnv{1000, {}, {}, {}, "/home/u"}),
            "/home/u/.local/state/ramguard");
  EXPECT_EQ(resolve_state_dir(c, RuntimeEnv{1000, {}, {}, {}, {}}), "/tmp/ramguard-1000-state");
  c.state_dir = "/srv/rg";
  EXPECT_EQ(resolve_state_dir(c, RuntimeEnv{0, {}, {}, {}, {}}), "/srv/rg");
}

TEST(Paths, ResolvedConfigAndCurrentEnvironment) {
  const Config resolved = with_resolved_paths(default_config(), RuntimeEnv{0, {}, {}, {}, {}});
  EXPECT_EQ(resolved.control.socket, "/run/ramguard/ramguard.sock");
  EXPECT_EQ(resolved.state_dir, "/var/lib/ramguard");
  EXPECT_THAT(describe_config(resolved), HasSubstr("control socket /run/ramguard/ramguard.sock"));
  ::setenv("RAMGUARD_SOCKET", "/tmp/from-env.sock", 1);
  EXPECT_EQ(RuntimeEnv::current().ramguard_socket, "/tmp/from-env.sock");
  ::setenv("RAMGUARD_SOCKET", "", 1);
  EXPECT_FALSE(RuntimeEnv::current().ramguard_socket.has_value());  // empty is unset
  ::unsetenv("RAMGUARD_SOCKET");
}

}  // namespace
}  // namespace ramguard
