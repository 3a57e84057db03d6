// What the configuration accepts is what the detectors can use: the smallest value of every
// detector key passes both checks, and the one check refuses what the detectors cannot use.
#include "runs/params_from_config.hpp"

#include <gtest/gtest.h>

#include "verdicts/params.hpp"

namespace ramguard {
namespace {

Result<Config> parse(const std::string& yaml) {
  return parse_config_yaml(yaml, "test.yaml");
}

TEST(ParamsFromConfig, TheSmallestValueOfEveryDetectorKeyIsUsable) {
  auto config = parse(R"(
budget: 1
margin: 0
growth:
  min_bytes: 1
  warmup_rounds: 0
  fit_rounds: 4
  min_fit_r2: 0.000001
  settle: 0s
  runaway_bytes_per_second: 1
  runaway_min_duration: 100ms
release:
  slack: 0
  grace: 1ms
headroom:
  warn_fraction: 0.000001
admission:
  calibration_factor: 1
phase_gaps:
  - { from: a.end, to: b.begin, max: 1ms }
)");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(validate_params(run_params(*config).detectors).ok());
  const auto checked = validate_for_daemon(*config, "test.yaml");
  EXPECT_TRUE(checked.ok()) << (checked.ok() ? "" : checked.error().message);
}

TEST(ParamsFromConfig, ThresholdsInModelCopiesReachTheDetectorsAndBytesWinWhereBothAreGiven) {
  auto copies = parse(R"(
growth: { min_model_copies: 0.2, runaway_model_copies_per_second: 0.8 }
release: { slack_model_copies: 0.4 }
)");
  ASSERT_TRUE(copies.ok()) << copies.error().message;
  const DetectorParams d = run_params(*copies).detectors;
  EXPECT_DOUBLE_EQ(d.growth_min_model_copies, 0.2);
  EXPECT_DOUBLE_EQ(d.runaway_model_copies_per_second, 0.8);
  EXPECT_DOUBLE_EQ(d.release_slack_model_copies, 0.4);
  EXPECT_TRUE(validate_for_daemon(*copies, "test.yaml").ok());

  // Resolved for a 0.25 GB model: 50 MB per round, 200 MB/s, 100 MB; the band follows.
  const DetectorParams r = resolve_model_copies(d, 250'000'000);
  EXPECT_EQ(r.growth_min_bytes, 50'000'000u);
  EXPECT_EQ(r.plateau_band_bytes, 25'000'000u);
  EXPECT_DOUBLE_EQ(r.runaway_bytes_per_second, 200e6);
  EXPECT_EQ(r.release_slack_bytes, 100'000'000u);
  // No model size: the configured bytes (the defaults here).
  const DetectorParams unknown = resolve_model_copies(d, 0);
  EXPECT_EQ(unknown.growth_min_bytes, 512'000'000u);
  EXPECT_EQ(unknown.release_slack_bytes, 1'000'000'000u);

  // Both given: the bytes win, whatever the order of the keys.
  auto both = parse(R"(
growth: { min_model_copies: 0.2, min_bytes: 64MB }
release: { slack: 2GB, slack_model_copies: 0.4 }
)");
  ASSERT_TRUE(both.ok()) << both.error().message;
  const DetectorParams b = resolve_model_copies(run_params(*both).detectors, 250'000'000);
  EXPECT_EQ(b.growth_min_bytes, 64'000'000u);
  EXPECT_EQ(b.release_slack_bytes, 2'000'000'000u);
  EXPECT_DOUBLE_EQ(b.runaway_bytes_per_second, 200e6);  // the default bytes: no copies given
}

// Scenario L: a run that declares its model and a configuration that gives no byte threshold
// is judged in model copies by the embedded defaults; a run without a model keeps the bytes.
TEST(ParamsFromConfig, TheEmbeddedDefaultsAreInModelCopiesAndBytesGivenReplaceThem) {
  const DetectorParams d = run_params(default_config()).detectors;
  EXPECT_TRUE(uses_model_copies(d));
  const DetectorParams small = resolve_model_copies(d, 200'000'000);
  EXPECT_EQ(small.growth_min_bytes, 40'000'000u);  // half a copy (100 MB) per round warns
  EXPECT_EQ(small.plateau_band_bytes, 20'000'000u);
  EXPECT_DOUBLE_EQ(small.runaway_bytes_per_second, 160e6);
  EXPECT_EQ(small.release_slack_bytes, 80'000'000u);  // 0.3 GB held fails the release
  const DetectorParams none = resolve_model_copies(d, 0);
  EXPECT_EQ(none.growth_min_bytes, 512'000'000u);
  EXPECT_DOUBLE_EQ(none.runaway_bytes_per_second, 200e6);
  EXPECT_EQ(none.release_slack_bytes, 1'000'000'000u);
  EXPECT_EQ(describe_thresholds(d, 200'000'000),
            "growth 40.0 MB/round (0.2 model copies/round), runaway 0.16 GB/s (0.8 model "
            "copies/s) for 10.00 s, release slack 80.0 MB (0.4 model copies) within 30.00 s");
  EXPECT_NE(describe_thresholds(d, 0).find("the run declared no model size"), std::string::npos)
      << describe_thresholds(d, 0);

  // A byte threshold in the file replaces that threshold's copies, and only that one.
  auto bytes = parse("growth: { min_bytes: 64MB }\n");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  const DetectorParams b = resolve_model_copies(run_params(*bytes).detectors, 200'000'000);
  EXPECT_EQ(b.growth_min_bytes, 64'000'000u);
  EXPECT_EQ(b.release_slack_bytes, 80'000'000u);
}

TEST(ParamsFromConfig, AModelCopiesValueOutOfRangeIsRefusedNamingTheKey) {
  for (const char* yaml :
       {"growth: { min_model_copies: 0 }\n", "growth: { min_model_copies: -1 }\n",
        "growth: { runaway_model_copies_per_second: 1e9 }\n",
        "release: { slack_model_copies: many }\n"}) {
    auto c = parse(yaml);
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_NE(c.error().message.find("model_copies"), std::string::npos) << c.error().message;
  }
}

TEST(ParamsFromConfig, TheDefaultsAreUsable) {
  EXPECT_TRUE(validate_for_daemon(default_config(), "defaults").ok());
}

TEST(ParamsFromConfig, FitRoundsBelowWhatALeakNeedsIsRefusedNamingTheKey) {
  // Three floors cannot hold the three growing steps of a leak: refused, never silently off.
  auto three = parse("growth: { fit_rounds: 3 }\n");
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().message.find("growth.fit_rounds"), std::string::npos)
      << three.error().message;
  // A configuration built in code goes through the same check.
  Config c = default_config();
  c.growth.fit_rounds = 3;
  const auto checked = validate_for_daemon(c, "flags");
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(checked.error().message.find("fit_rounds"), std::string::npos)
      << checked.error().message;
  c.growth.fit_rounds = 4;
  EXPECT_TRUE(validate_for_daemon(c, "flags").ok());
}

}  // namespace
}  // namespace ramguard
