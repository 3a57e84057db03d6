// The embedded defaults are the numbers of daemon/README.md, the example file says the same,
// and every key of a complete file lands in the right field.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/load.hpp"

namespace ramguard {
namespace {

using namespace std::chrono_literals;

TEST(ConfigDefaults, MatchDesignNumbers) {
  const Config c = default_config();
  EXPECT_EQ(c.budget_bytes, 16'000'000'000u);
  EXPECT_EQ(c.margin_bytes, 0u);
  EXPECT_EQ(c.sampling.interval, 2s);
  EXPECT_EQ(c.release.slack_bytes, 1'000'000'000u);
  EXPECT_EQ(c.release.grace, 30s);
  EXPECT_EQ(c.growth.min_bytes, 512'000'000u);
  EXPECT_EQ(c.admission.lease, 60s);
  EXPECT_DOUBLE_EQ(c.headroom.warn_fraction, 0.9);
  EXPECT_EQ(c.metrics.listen.host, "127.0.0.1");
  EXPECT_EQ(c.control.socket_mode, 0660u);
  EXPECT_EQ(c.control.peers_read, PeersRead::kOwn);  // private by default
  EXPECT_EQ(c.control.max_frame_bytes, 64u * 1024);
  EXPECT_FALSE(c.control.tcp.enabled);
  EXPECT_TRUE(c.control.socket.empty());  // resolved at startup, see paths.hpp
  EXPECT_EQ(c.log_level, log::Level::kInfo);
  EXPECT_TRUE(c.watch.empty());
  // The per-run and ledger bounds README.md states.
  EXPECT_EQ(c.sampling.max_buckets, 1440u);
  EXPECT_EQ(c.sampling.peak_refresh, 10s);
  EXPECT_EQ(c.sampling.watch_peak_refresh, 60s);
  EXPECT_EQ(c.sampling.slow_read, 10ms);
  EXPECT_EQ(c.store.retention.max_age_days, 90u);
  EXPECT_EQ(c.store.retention.max_runs, 10'000u);
  EXPECT_EQ(c.store.retention.max_bytes, 1ull << 30);
  // Safe for one node (docs/security.md): caps on, job names hashed on /metrics.
  EXPECT_EQ(user_reserve_cap_bytes(c.admission, c.budget_bytes), 12'000'000'000u);
  EXPECT_EQ(c.admission.max_active_runs_per_user, 32u);
  EXPECT_EQ(c.metrics.job_names, JobNames::kHash);
}

TEST(ConfigDefaults, TheReservationCapIsAShareOfTheBudgetOrASize) {
  auto share = parse_config_yaml("budget: 4GB\nadmission: { max_reserved_per_user: 50% }\n", "t");
  ASSERT_TRUE(share.ok()) << share.error().message;
  EXPECT_EQ(user_reserve_cap_bytes(share->admission, share->budget_bytes), 2'000'000'000u);
  auto bytes = parse_config_yaml("admission: { max_reserved_per_user: 3GB }\n", "t");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  EXPECT_EQ(user_reserve_cap_bytes(bytes->admission, bytes->budget_bytes), 3'000'000'000u);
  auto off = parse_config_yaml("admission: { max_reserved_per_user: 0 }\n", "t");
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(user_reserve_cap_bytes(off->admission, off->budget_bytes), 0u);
  auto bad = parse_config_yaml("admission: { max_reserved_per_user: 150% }\n", "t");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("expected 0% to 100%"), std::string::npos);
}

TEST(ConfigDefaults, FedavgPlanAndPhaseGap) {
  const Config c = default_config();
  ASSERT_EQ(c.plans.count("fedavg"), 1u);
  const MemoryPlan& plan = c.plans.at("fedavg");
  EXPECT_EQ(plan.name, "fedavg");
  EXPECT_EQ(plan.overhead_bytes, 160'000'000u);
  ASSERT_EQ(plan.phases.size(), 4u);
  EXPECT_EQ(plan.phases[0].phase, "load");
  EXPECT_EQ(plan.phases[1].phase, "aggregation");
  EXPECT_EQ(plan.phases[2].phase, "synchronization");
  EXPECT_EQ(plan.phases[3].phase, "save");
  // 2.5 GB model, two hosts -> aggregation holds 4 copies + 0.16 GB = 10.16 GB.
  double aggregation_copies = 0;
  for (const PlanState& s : plan.phases[1].states)
    aggregation_copies += s.per_host ? s.copies * 2 : s.copies;
  EXPECT_DOUBLE_EQ(aggregation_copies * 2.5e9 + static_cast<double>(plan.overhead_bytes), 10.16e9);
  // Synchronization holds the state, its serialized bytes and a resize's copy of them.
  double synchronization_copies = 0;
  for (const PlanState& s : plan.phases[2].states) synchronization_copies += s.copies;
  EXPECT_DOUBLE_EQ(synchronization_copies, 3);
  ASSERT_EQ(c.phase_gaps.size(), 1u);
  EXPECT_EQ(c.phase_gaps[0].name(), "aggregation.end -> synchronization.begin");
  EXPECT_EQ(c.phase_gaps[0].max, 10s);
}

TEST(ConfigDefaults, EmptyDocumentIsTheDefaults) {
  for (const char* text : {"", "\n", "# only a comment\n", "---\n", "~\n"}) {
    auto c = parse_config_yaml(text, "empty.yaml");
    ASSERT_TRUE(c.ok()) << text << ": " << c.error().message;
    EXPECT_EQ(*c, default_config()) << text;
  }
}

TEST(ConfigDefaults, ExampleFileParsesToTheDefaults) {
  const auto path = std::string(RAMGUARD_SOURCE_DIR) + "/deploy/ramguard.example.yaml";
  auto c = load_config_file(path);
  ASSERT_TRUE(c.ok()) << c.error().message;
  // The example documents every key with its default value.
  EXPECT_EQ(*c, default_config());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  for (const char* key : {"budget:",
                          "margin:",
                          "state_dir:",
                          "sampling:",
                          "interval:",
                          "full_resolution_window:",
                          "bucket:",
                          "max_buckets:",
                          "peak_refresh:",
                          "watch_peak_refresh:",
                          "slow_read:",
                          "metrics:",
                          "run_retention:",
                          "socket:",
                          "socket_mode:",
                          "socket_group:",
                          "peers_read:",
                          "max_frame:",
                          "max_connections:",
                          "max_runs:",
                          "max_marks_per_run:",
                          "max_requests_per_second:",
                          "max_unread_output:",
                          "unread_output_timeout:",
                          "idle_timeout:",
                          "max_connections_per_uid:",
                          "reserved_connections:",
                          "socket_check_interval:",
                          "tcp:",
                          "token_file:",
                          "growth:",
                          "min_bytes:",
                          "warmup_rounds:",
                          "fit_rounds:",
                          "min_fit_r2:",
                          "settle:",
                          "runaway_bytes_per_second:",
                          "runaway_min_duration:",
                          "release:",
                          "slack:",
                          "grace:",
                          "headroom:",
                          "warn_fraction:",
                          "admission:",
                          "lease:",
                          "use_calibrated:",
                          "calibration_factor:",
                          "store:",
                          "retention:",
                          "max_age_days:",
                          "max_bytes:",
                          "coalesce_wal_writes:",
                          "phase_gaps:",
                          "plans:",
                          "overhead:",
                          "phases:",
                          "watch:",
                          "log:",
                          "level:"}) {
    EXPECT_NE(text.str().find(key), std::string::npos) << "example lacks " << key;
  }
}

TEST(ConfigParse, EveryKeyLandsInItsField) {
  const char* text = R"(
budget: 16GiB
margin: 500MB
state_dir: /srv/ramguard
sampling: { interval: 500ms, full_resolution_window: 5m, bucket: 30s, max_buckets: 100,
            watch_peak_refresh: 5s, slow_read: 50ms }
metrics: { listen: "[::1]:0", run_retention: 1h }
control:
  socket: /tmp/rg.sock
  socket_mode: 0600
  socket_group: nogroup
  peers_read: all
  max_frame: 1MiB
  max_connections: 8
  max_runs: 9
  max_marks_per_run: 10
  max_requests_per_second: 11
  tcp: { enabled: yes, listen: "0.0.0.0:7000", token_file: /etc/ramguard/token }
growth: { min_bytes: 256MB, warmup_rounds: 2, fit_rounds: 6, min_fit_r2: 0.9, settle: 1500ms,
          runaway_bytes_per_second: 100MB, runaway_min_duration: 20s }
release: { slack: 2GB, grace: 1m }
headroom: { warn_fraction: 1 }
admission: { lease: 2m, use_calibrated: true, calibration_factor: 1.25 }
store: { retention: { max_age_days: 7, max_runs: 0, max_bytes: 64MiB } }
phase_gaps:
  - { from: aggregation.end, to: synchronization.begin, max: 5s }
  - { from: load.begin, to: load.end, max: 2m }
plans:
  ddp:
    overhead: 0
    phases:
      train: { weights: 1, grads: 0.5, replicas: 2*hosts }
watch: [12, 34]
log: { level: warning }
)";
  auto parsed = parse_config_yaml(text, "full.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const Config& c = *parsed;
  EXPECT_EQ(c.budget_bytes, 16ull << 30);
  EXPECT_EQ(c.margin_bytes, 500'000'000u);
  EXPECT_EQ(c.state_dir, "/srv/ramguard");
  EXPECT_EQ(c.sampling.interval, 500ms);
  EXPECT_EQ(c.sampling.full_resolution_window, 5min);
  EXPECT_EQ(c.sampling.bucket, 30s);
  EXPECT_EQ(c.sampling.max_buckets, 100u);
  EXPECT_EQ(c.sampling.watch_peak_refresh, 5s);
  EXPECT_EQ(c.sampling.slow_read, 50ms);
  EXPECT_EQ(c.metrics.listen, (Endpoint{"::1", 0}));
  EXPECT_EQ(c.metrics.run_retention, 1h);
  EXPECT_EQ(c.control.socket, "/tmp/rg.sock");
  EXPECT_EQ(c.control.socket_mode, 0600u);
  EXPECT_EQ(c.control.socket_group, "nogroup");
  EXPECT_EQ(c.control.peers_read, PeersRead::kAll);
  EXPECT_EQ(c.control.max_frame_bytes, 1u << 20);
  EXPECT_EQ(c.control.max_connections, 8u);
  EXPECT_EQ(c.control.max_runs, 9u);
  EXPECT_EQ(c.control.max_marks_per_run, 10u);
  EXPECT_EQ(c.control.max_requests_per_second, 11u);
  EXPECT_TRUE(c.control.tcp.enabled);
  EXPECT_EQ(c.control.tcp.listen, (Endpoint{"0.0.0.0", 7000}));
  EXPECT_EQ(c.control.tcp.token_file, "/etc/ramguard/token");
  EXPECT_EQ(c.growth.min_bytes, 256'000'000u);
  EXPECT_EQ(c.growth.warmup_rounds, 2u);
  EXPECT_EQ(c.growth.fit_rounds, 6u);
  EXPECT_DOUBLE_EQ(c.growth.min_fit_r2, 0.9);
  EXPECT_EQ(c.growth.settle, 1500ms);
  EXPECT_EQ(c.growth.runaway_bytes_per_second, 100'000'000u);
  EXPECT_EQ(c.growth.runaway_min_duration, 20s);
  EXPECT_EQ(c.release.slack_bytes, 2'000'000'000u);
  EXPECT_EQ(c.release.grace, 1min);
  EXPECT_DOUBLE_EQ(c.headroom.warn_fraction, 1.0);
  EXPECT_EQ(c.admission.lease, 2min);
  EXPECT_TRUE(c.admission.use_calibrated);
  EXPECT_DOUBLE_EQ(c.admission.calibration_factor, 1.25);
  EXPECT_EQ(c.store.retention.max_age_days, 7u);
  EXPECT_EQ(c.store.retention.max_runs, 0u);
  EXPECT_EQ(c.store.retention.max_bytes, 64u << 20);
  ASSERT_EQ(c.phase_gaps.size(), 2u);
  EXPECT_EQ(c.phase_gaps[1].from, (PhaseEdge{"load", PhaseEdge::Edge::kBegin}));
  EXPECT_EQ(c.phase_gaps[1].to, (PhaseEdge{"load", PhaseEdge::Edge::kEnd}));
  EXPECT_EQ(c.phase_gaps[1].max, 2min);
  // A `plans:` key replaces the default plans.
  ASSERT_EQ(c.plans.size(), 1u);
  const MemoryPlan& ddp = c.plans.at("ddp");
  EXPECT_EQ(ddp.overhead_bytes, 0u);
  ASSERT_EQ(ddp.phases.size(), 1u);
  ASSERT_EQ(ddp.phases[0].states.size(), 3u);
  EXPECT_EQ(ddp.phases[0].states[1], (PlanState{"grads", 0.5, false}));
  EXPECT_EQ(ddp.phases[0].states[2], (PlanState{"replicas", 2, true}));
  EXPECT_EQ(c.watch, (std::vector<pid_t>{12, 34}));
  EXPECT_EQ(c.log_level, log::Level::kWarning);
}

TEST(ConfigParse, PresentListsReplaceDefaultsAbsentOnesKeepThem) {
  auto none = parse_config_yaml("phase_gaps: []\n", "x.yaml");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->phase_gaps.empty());
  EXPECT_EQ(none->plans, default_config().plans);

  auto plans_only = parse_config_yaml("budget: 8GB\n", "x.yaml");
  ASSERT_TRUE(plans_only.ok());
  EXPECT_EQ(plans_only->budget_bytes, 8'000'000'000u);
  EXPECT_EQ(plans_only->plans, default_config().plans);
  EXPECT_EQ(plans_only->phase_gaps, default_config().phase_gaps);
}

TEST(ConfigParse, PlanPhasesKeepFileOrder) {
  auto c = parse_config_yaml(
      "plans:\n  p:\n    phases:\n      zeta: { a: 1 }\n      alpha: { b: hosts }\n      mid: {}\n",
      "x.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& phases = c->plans.at("p").phases;
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_EQ(phases[0].phase, "zeta");
  EXPECT_EQ(phases[1].phase, "alpha");
  EXPECT_EQ(phases[2].phase, "mid");
  EXPECT_TRUE(phases[2].states.empty());
}

}  // namespace
}  // namespace ramguard
