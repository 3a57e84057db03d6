// Every way a configuration can be wrong, each with the message it must produce: the key path,
// the value as written and what is allowed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "config/load.hpp"

namespace ramguard {
namespace {

struct BadCase {
  const char* name;
  const char* yaml;
  std::vector<const char*> expected;  // substrings of the message
};

class ConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigErrors, NameKeyValueAndAllowed) {
  const BadCase& c = GetParam();
  auto parsed = parse_config_yaml(c.yaml, "ramguard.yaml");
  ASSERT_FALSE(parsed.ok()) << "accepted:\n" << c.yaml;
  const std::string& message = parsed.error().message;
  EXPECT_THAT(message, ::testing::StartsWith("ramguard.yaml"));
  for (const char* part : c.expected) {
    EXPECT_THAT(message, ::testing::HasSubstr(part)) << "yaml:\n" << c.yaml;
  }
}

const BadCase kBadCases[] = {
    {"UnknownTopKey",
     "budgett: 1GB\n",
     {"ramguard.yaml:1: budgett: unknown key 'budgett'",
      "allowed keys: budget, system_reserve, margin, state_dir"}},
    {"UnknownNestedKey",
     "growth:\n  min_byte: 1GB\n",
     {"ramguard.yaml:2: growth.min_byte: unknown key 'min_byte' in growth",
      "allowed keys: min_bytes, warmup_rounds, fit_rounds"}},
    {"UnknownTcpKey",
     "control: { tcp: { port: 1 } }\n",
     {"control.tcp.port: unknown key", "allowed keys: enabled, listen, token_file"}},
    {"BadSizeUnit",
     "budget: 8GB\ngrowth:\n  min_bytes: 5 GBs\n",
     {"ramguard.yaml:3: growth.min_bytes: invalid size '5 GBs'; expected plain bytes or a number "
      "with kB, MB"}},
    {"ZeroBudget", "budget: 0\n", {"budget: '0' is out of range"}},
    {"RetentionSizeCapTooSmall",
     "store:\n  retention:\n    max_bytes: 100kB\n",
     {"ramguard.yaml:3: store.retention.max_bytes:", "'100kB' is below the 1 MiB minimum",
      "use 0 for no size cap"}},
    {"RetentionAgeOutOfRange",
     "store: { retention: { max_age_days: 40000 } }\n",
     {"store.retention.max_age_days: '40000' is out of range"}},
    {"RetentionRunsNotANumber",
     "store: { retention: { max_runs: lots } }\n",
     {"store.retention.max_runs:", "'lots'"}},
    {"RetentionUnknownKey",
     "store: { retention: { max_days: 3 } }\n",
     {"store.retention.max_days: unknown key", "allowed keys: max_age_days, max_runs, max_bytes"}},
    {"NegativeBudget", "budget: -1GB\n", {"budget:", "'-1GB'"}},
    {"JobNamesUnknown",
     "metrics: { job_names: secret }\n",
     {"metrics.job_names: invalid job_names 'secret'", "plain", "hash", "omit"}},
    {"TrustedUidNotANumber",
     "admission:\n  trusted_uids: [0, root]\n",
     {"admission.trusted_uids[1]: invalid number 'root'", "from 0 to 4294967294"}},
    {"FleetHttps",
     "admission:\n  history:\n    prometheus_url: https://prom:9090\n",
     {"admission.history.prometheus_url:", "https is not supported"}},
    {"FleetTimeoutTooLong",
     "admission:\n  history:\n    timeout: 1m\n",
     {"admission.history.timeout:"}},
    {"FleetWithoutJobNames",
     "metrics:\n  job_names: omit\nadmission:\n  history:\n    prometheus_url: http://p:9090\n",
     {"admission.history.prometheus_url", "needs metrics.job_names plain or hash"}},
    {"BudgetWrongType", "budget: [1, 2]\n", {"budget: expected a size or auto, got a sequence"}},
    {"BudgetEmpty", "budget:\n", {"budget: expected a size or auto, got nothing"}},
    {"MarginNotBelowBudget",
     "budget: 1GB\nmargin: 1GB\n",
     {"margin: 1.00 GB (1000000000 bytes) must be less than budget 1.00 GB"}},
    {"IntervalTooShort",
     "sampling: { interval: 5ms }\n",
     {"sampling.interval: '5ms' is out of range; allowed 10ms to 1h"}},
    {"IntervalTooLong",
     "sampling: { interval: 2h }\n",
     {"sampling.interval: '2h' is out of range; allowed 10ms to 1h"}},
    {"IntervalWithoutUnit",
     "sampling: { interval: 2 }\n",
     {"sampling.interval: invalid duration '2'; expected a number with ms, s, m or h"}},
    {"IntervalAMapping",
     "sampling:\n  interval: { s: 2 }\n",
     {"sampling.interval: expected a duration, got a mapping"}},
    {"SectionAScalar", "sampling: fast\n", {"sampling: expected a mapping of keys, got a scalar"}},
    {"BucketBelowInterval",
     "sampling: { interval: 10s, bucket: 5s }\n",
     {"sampling.bucket: 5s is shorter than sampling.interval 10s"}},
    {"WindowBelowInterval",
     "sampling: { interval: 10s, full_resolution_window: 1s }\n",
     {"sampling.full_resolution_window: 1s is shorter than sampling.interval 10s"}},
    {"WatchPeakRefreshNotADuration",
     "sampling: { watch_peak_refresh: soon }\n",
     {"sampling.watch_peak_refresh"}},
    {"SlowReadNotADuration",
     "sampling: { slow_read: 10 }\n",
     {"sampling.slow_read: invalid duration '10'; expected a number with ms, s, m or h"}},
    {"SlowReadTooLong",
     "sampling: { slow_read: 2h }\n",
     {"sampling.slow_read: '2h' is out of range; allowed 0s to 1h"}},
    {"ZeroBuckets",
     "sampling: { max_buckets: 0 }\n",
     {"sampling.max_buckets: '0' is out of range; expected a whole number from 1"}},
    {"FractionZero",
     "headroom: { warn_fraction: 0 }\n",
     {"headroom.warn_fraction: '0' is out of range; allowed (0, 1]"}},
    {"FractionAboveOne",
     "headroom: { warn_fraction: 1.5 }\n",
     {"headroom.warn_fraction: '1.5' is out of range; allowed (0, 1]"}},
    {"FitR2NotANumber",
     "growth: { min_fit_r2: high }\n",
     {"growth.min_fit_r2: invalid number 'high'"}},
    {"FitRoundsTooFew",
     "growth: { fit_rounds: 3 }\n",
     {"growth.fit_rounds: '3' is out of range; expected a whole number from 4"}},
    {"WarmupNegative",
     "growth: { warmup_rounds: -1 }\n",
     {"growth.warmup_rounds: invalid number '-1'"}},
    {"RunawayZeroDuration",
     "growth: { runaway_min_duration: 0s }\n",
     {"growth.runaway_min_duration: '0s' is out of range"}},
    {"ZeroGrace", "release: { grace: 0s }\n", {"release.grace: '0s' is out of range; allowed 1ms"}},
    {"SlackBadUnit",
     "release: { slack: 1 gigabyte }\n",
     {"release.slack: invalid size '1 gigabyte'"}},
    {"LeaseZero", "admission: { lease: 0ms }\n", {"admission.lease: '0ms' is out of range"}},
    {"CalibrationBelowOne",
     "admission: { calibration_factor: 0.5 }\n",
     {"admission.calibration_factor: '0.5' is out of range; allowed [1, 10]"}},
    {"UseCalibratedNotBool",
     "admission: { use_calibrated: maybe }\n",
     {"admission.use_calibrated: invalid boolean 'maybe'; expected true or false"}},
    {"CoalesceWalWritesNotBool",
     "store: { coalesce_wal_writes: sometimes }\n",
     {"store.coalesce_wal_writes: invalid boolean 'sometimes'; expected true or false"}},
    {"SocketModeNotOctal",
     "control: { socket_mode: \"0999\" }\n",
     {"control.socket_mode: invalid socket mode '0999'", "octal"}},
    {"SocketGroupUnknown",
     "control: { socket_group: no-such-group-rg }\n",
     {"control.socket_group: unknown socket group 'no-such-group-rg'",
      "group name or a numeric GID"}},
    {"SocketGroupGidOutOfRange",
     "control: { socket_group: \"4294967295\" }\n",
     {"control.socket_group: invalid socket group '4294967295'"}},
    {"PeersReadUnknown",
     "control: { peers_read: nobody }\n",
     {"control.peers_read: invalid peers_read 'nobody'", "expected all", "or own"}},
    {"SocketModeTooLarge",
     "control: { socket_mode: \"4777\" }\n",
     {"control.socket_mode: invalid socket mode '4777'", "0000 to 0777"}},
    {"SocketPathTooLong",
     "control: { socket: "
     "/tmp/"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaa.sock }\n",
     {"control.socket: path", "must be shorter than 108 bytes"}},
    {"FrameTooSmall",
     "control: { max_frame: 10 }\n",
     {"control.max_frame: '10' is out of range; allowed 1024 to"}},
    {"ConnectionsZero", "control: { max_connections: 0 }\n", {"control.max_connections: '0'"}},
    {"RunsFractional", "control: { max_runs: 1.5 }\n", {"control.max_runs: invalid number '1.5'"}},
    {"RateZero",
     "control: { max_requests_per_second: 0 }\n",
     {"control.max_requests_per_second: '0' is out of range"}},
    {"TcpWithoutToken",
     "control: { tcp: { enabled: true } }\n",
     {"control.tcp.token_file: required when control.tcp.enabled is true"}},
    {"TcpEnabledNotBool",
     "control: { tcp: { enabled: 2 } }\n",
     {"control.tcp.enabled: invalid boolean '2'"}},
    {"ListenWithoutPort",
     "metrics: { listen: localhost }\n",
     {"metrics.listen: invalid address 'localhost'; expected HOST:PORT"}},
    {"ListenPortTooLarge",
     "metrics: { listen: \"127.0.0.1:70000\" }\n",
     {"metrics.listen: invalid port in address '127.0.0.1:70000'", "port 0-65535"}},
    {"ListenPortNotNumber",
     "metrics: { listen: \"127.0.0.1:http\" }\n",
     {"metrics.listen: invalid port in address '127.0.0.1:http'"}},
    {"TcpListenWithoutHost",
     "control: { tcp: { listen: \":80\" } }\n",
     {"control.tcp.listen: invalid host in address ':80'"}},
    {"RetentionBadUnit",
     "metrics: { run_retention: 15 minutes }\n",
     {"metrics.run_retention: invalid duration '15 minutes'"}},
    {"GapBadEdge",
     "phase_gaps:\n  - { from: aggregation.finish, to: save.begin, max: 1s }\n",
     {"ramguard.yaml:2: phase_gaps[0].from: invalid phase edge 'aggregation.finish'",
      "<phase>.begin or <phase>.end"}},
    {"GapUpperCasePhase",
     "phase_gaps: [{ from: Aggregation.end, to: save.begin, max: 1s }]\n",
     {"phase_gaps[0].from: invalid phase name in 'Aggregation.end'", "a-z, 0-9"}},
    {"GapNoDot",
     "phase_gaps: [{ from: load.end, to: sync, max: 1s }]\n",
     {"phase_gaps[0].to: invalid phase edge 'sync'"}},
    {"GapMissingMax",
     "phase_gaps: [{ from: load.end, to: save.begin }]\n",
     {"phase_gaps[0]: missing key(s): max"}},
    {"GapZeroMax",
     "phase_gaps: [{ from: load.end, to: save.begin, max: 0s }]\n",
     {"phase_gaps[0].max: '0s' is out of range"}},
    {"GapSameMark",
     "phase_gaps: [{ from: load.end, to: load.end, max: 1s }]\n",
     {"phase_gaps[0]: from and to are the same mark 'load.end'"}},
    {"GapUnknownKey",
     "phase_gaps: [{ from: load.end, to: save.begin, max: 1s, min: 0s }]\n",
     {"phase_gaps[0].min: unknown key 'min'", "allowed keys: from, to, max"}},
    {"GapsNotAList",
     "phase_gaps: { from: load.end }\n",
     {"phase_gaps: expected a list, got a mapping"}},
    {"PlanWithoutPhases",
     "plans:\n  p:\n    overhead: 1GB\n",
     {"plans.p.phases: plan 'p' has no phases key"}},
    {"PlanWithEmptyPhases",
     "plans: { p: { phases: {} } }\n",
     {"plans.p.phases: plan 'p' has no phases"}},
    {"PlanEmpty", "plans:\n  p:\n", {"plans.p: plan 'p' is empty"}},
    {"PlanNegativeCopies",
     "plans:\n  p:\n    phases:\n      aggregation: { global: 1, host_updates: -1 }\n",
     {"ramguard.yaml:4: plans.p.phases.aggregation.host_updates: negative count '-1'",
      "hosts, or N*hosts"}},
    {"PlanCopiesWord",
     "plans: { p: { phases: { load: { global: many } } } }\n",
     {"plans.p.phases.load.global: invalid count 'many'"}},
    {"PlanCopiesBadHosts",
     "plans: { p: { phases: { load: { global: 2*host } } } }\n",
     {"plans.p.phases.load.global: invalid count '2*host'"}},
    {"PlanNegativeHosts",
     "plans: { p: { phases: { load: { global: -2*hosts } } } }\n",
     {"plans.p.phases.load.global: negative count '-2*hosts'"}},
    {"PlanBadOverhead",
     "plans: { p: { overhead: lots, phases: { load: { g: 1 } } } }\n",
     {"plans.p.overhead: invalid size 'lots'"}},
    {"PlanBadName",
     "plans: { \"my plan\": { phases: { load: { g: 1 } } } }\n",
     {"plans.my plan: invalid plan name 'my plan'"}},
    // A mark's phase is lower case: a plan phase "Load" could never match one.
    {"PlanBadPhaseName",
     "plans: { p: { phases: { Load: { g: 1 } } } }\n",
     {"plans.p.phases.Load: invalid phase name 'Load'", "a-z, 0-9, '_', '.', '-', as in marks"}},
    {"PlanUnknownKey",
     "plans: { p: { overheads: 1GB, phases: { load: { g: 1 } } } }\n",
     {"plans.p.overheads: unknown key 'overheads'", "allowed keys: overhead, phases"}},
    {"PlanStatesAList",
     "plans: { p: { phases: { load: [1, 2] } } }\n",
     {"plans.p.phases.load: expected a mapping, got a sequence"}},
    {"WatchZero", "watch: [0]\n", {"watch[0]: invalid PID '0'; expected a positive integer"}},
    {"WatchWord", "watch: [1, init]\n", {"watch[1]: invalid PID 'init'"}},
    {"WatchHuge", "watch: [99999999]\n", {"watch[0]: invalid PID '99999999'"}},
    {"WatchScalar", "watch: 123\n", {"watch: expected a list, got a scalar"}},
    {"LogLevelUnknown",
     "log: { level: verbose }\n",
     {"log.level: invalid log level 'verbose'; expected debug, info, warning or error"}},
    {"LogNotAMap", "log: debug\n", {"log: expected a mapping of keys, got a scalar"}},
    {"StateDirAList", "state_dir: [a]\n", {"state_dir: expected a string, got a sequence"}},
    {"DuplicateKey", "budget: 1GB\nbudget: 2GB\n", {"ramguard.yaml:2: budget: duplicate key"}},
    {"TopLevelList", "- budget\n", {"(top level): expected a mapping of keys, got a sequence"}},
    {"TopLevelScalar", "hello\n", {"(top level): expected a mapping of keys, got a scalar"}},
    {"MalformedFlow",
     "budget: 1GB\nsampling: { interval: 2s\n",
     {"ramguard.yaml:", "malformed YAML"}},
    {"MalformedIndent",
     "growth:\n  min_bytes: 1GB\n warmup_rounds: 2\n",
     {"ramguard.yaml:3:", "malformed YAML"}},
    {"TwoDocuments",
     "budget: 1GB\n---\nbudget: 2GB\n",
     {"more than one YAML document; expected one"}},
};

INSTANTIATE_TEST_SUITE_P(AllPaths, ConfigErrors, ::testing::ValuesIn(kBadCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ConfigErrorsCollected, EveryErrorIsReportedNotJustTheFirst) {
  auto parsed = parse_config_yaml(
      "budget: 5 GBs\nsampling: { interval: 1ms }\nlog: { level: loud }\nbogus: 1\n", "multi.yaml");
  ASSERT_FALSE(parsed.ok());
  const std::string& m = parsed.error().message;
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 3) << m;
  EXPECT_THAT(m, ::testing::HasSubstr("multi.yaml:1: budget: invalid size '5 GBs'"));
  EXPECT_THAT(m, ::testing::HasSubstr("multi.yaml:2: sampling.interval: '1ms' is out of range"));
  EXPECT_THAT(m, ::testing::HasSubstr("multi.yaml:3: log.level: invalid log level 'loud'"));
  EXPECT_THAT(m, ::testing::HasSubstr("multi.yaml:4: bogus: unknown key 'bogus'"));
}

TEST(ConfigErrorsCollected, ValidValuesNextToBadOnesAreNotBlamed) {
  auto parsed = parse_config_yaml("budget: 8GB\nmargin: 1GB\nrelease: { grace: -1s }\n", "x.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, ::testing::HasSubstr("release.grace"));
  EXPECT_THAT(parsed.error().message, ::testing::Not(::testing::HasSubstr("budget")));
  EXPECT_THAT(parsed.error().message, ::testing::Not(::testing::HasSubstr("margin")));
}

TEST(ConfigHostileInput, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "budget: " + std::string(100000, '[') + std::string(100000, ']');
  auto parsed = parse_config_yaml(deep, "deep.yaml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error().message, ::testing::StartsWith("deep.yaml"));
}

TEST(ConfigHostileInput, RandomBytesNeverThrowOrCrash) {
  std::mt19937 rng(12345);
  const std::string alphabet = "budget:sampling{}[]-,'\"&*!|>%@`#\n\t 0123456789GBms.\\\x01\xff";
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    const int length = static_cast<int>(rng() % 200);
    for (int j = 0; j < length; ++j) text.push_back(alphabet[rng() % alphabet.size()]);
    auto parsed = parse_config_yaml(text, "random.yaml");
    if (!parsed.ok()) {
      ++rejected;
      EXPECT_FALSE(parsed.error().message.empty());
    }
  }
  EXPECT_GT(rejected, 1000);  // nearly all noise must be refused, not silently accepted
}

TEST(ConfigHostileInput, AnchorsAndAliasesAreReadAsValues) {
  auto parsed = parse_config_yaml("budget: &b 8GB\nrelease: { slack: *b }\n", "a.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->release.slack_bytes, 8'000'000'000u);
}

}  // namespace
}  // namespace ramguard
