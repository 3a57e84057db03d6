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
