// `budget: auto`: MemTotal of a fixture meminfo less the system reserve, from the file, from
// --budget auto, and the errors that name what is wrong.
#include "config/auto_budget.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/command_line.hpp"
#include "config/describe.hpp"
#include "config/load.hpp"
#include "temp_dir.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;

// A proc root with a meminfo of MemTotal 24 GiB (25.77 GB).
class AutoBudget : public ::testing::Test {
 protected:
  AutoBudget() {
    proc_.write("meminfo",
                "MemTotal:       25165824 kB\nMemFree:        20000000 kB\n"
                "MemAvailable:   22000000 kB\n");
  }
  testing::TempDir proc_;
};

TEST_F(AutoBudget, IsMemTotalLessTheReserveAndSaysSo) {
  auto config = parse_config_yaml("budget: auto\nsystem_reserve: 2GB\nmargin: 500MB\n", "f");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->budget_auto);
  auto resolved = with_auto_budget(*config, proc_.path());
  ASSERT_TRUE(resolved.ok()) << resolved.error().message;
  EXPECT_EQ(resolved->auto_total_bytes, 25165824ULL * 1024);
  EXPECT_EQ(resolved->budget_bytes, 25165824ULL * 1024 - 2'000'000'000ULL);
  EXPECT_THAT(describe_config(*resolved),
              HasSubstr("budget 23.77 GB (auto: MemTotal 25.77 GB less system reserve 2.00 GB) "
                        "(margin 0.50 GB)"));
  EXPECT_TRUE(validate_config(*resolved, "f").ok());
}

TEST_F(AutoBudget, TheDefaultReserveIsOneGigabyteAndASizeStaysASize) {
  auto config = parse_config_yaml("budget: auto\n", "f");
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto resolved = with_auto_budget(*config, proc_.path());
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->budget_bytes, 25165824ULL * 1024 - 1'000'000'000ULL);

  auto sized = parse_config_yaml("budget: 12GB\n", "f");
  ASSERT_TRUE(sized.ok());
  auto kept = with_auto_budget(*sized, proc_.path());
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->budget_auto);
  EXPECT_EQ(kept->budget_bytes, 12'000'000'000ULL);
}

TEST_F(AutoBudget, TheFlagWinsOverTheFileBothWays) {
  const char* auto_args[] = {"ramguardd", "--budget", "auto"};
  auto flags = parse_command_line(3, auto_args);
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  auto config = apply_overrides(*parse_config_yaml("budget: 12GB\n", "f"), *flags);
  EXPECT_TRUE(config.budget_auto);
  EXPECT_EQ(with_auto_budget(config, proc_.path())->budget_bytes,
            25165824ULL * 1024 - 1'000'000'000ULL);

  const char* sized_args[] = {"ramguardd", "--budget", "8GB"};
  flags = parse_command_line(3, sized_args);
  ASSERT_TRUE(flags.ok());
  config = apply_overrides(*parse_config_yaml("budget: auto\n", "f"), *flags);
  EXPECT_FALSE(config.budget_auto);
  EXPECT_EQ(config.budget_bytes, 8'000'000'000ULL);
}

TEST_F(AutoBudget, ErrorsNameTheProblem) {
  auto bad = parse_config_yaml("budget: plenty\n", "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("budget: invalid size 'plenty'"));
  EXPECT_THAT(bad.error().message, HasSubstr("or auto"));

  auto config = parse_config_yaml("budget: auto\nsystem_reserve: 30GB\n", "f");
  ASSERT_TRUE(config.ok());
  auto resolved = with_auto_budget(*config, proc_.path());
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.error().message,
              HasSubstr("system_reserve 30.00 GB leaves nothing of MemTotal 25.77 GB"));

  testing::TempDir empty;  // no meminfo
  auto missing = with_auto_budget(*config, empty.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error().message, HasSubstr("budget auto: "));
  EXPECT_THAT(missing.error().message, HasSubstr((empty.path() / "meminfo").string()));

  // The margin is checked against the resolved budget, not the 16 GB default.
  auto margin = parse_config_yaml("budget: auto\nmargin: 20GB\n", "f");
  ASSERT_TRUE(margin.ok()) << margin.error().message;
  auto small = with_auto_budget(*margin, proc_.path());
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(validate_config(*small, "f").ok());
  auto big = parse_config_yaml("budget: auto\nmargin: 25GB\n", "f");
  ASSERT_TRUE(big.ok());
  EXPECT_THAT(validate_config(*with_auto_budget(*big, proc_.path()), "f").error().message,
              HasSubstr("margin"));
}

}  // namespace
}  // namespace ramguard
