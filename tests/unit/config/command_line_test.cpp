// ramguardd's flags: both spellings, every bad value naming its flag, and flags over the file.
#include "config/command_line.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/describe.hpp"
#include "config/load.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

Result<CommandLine> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "ramguardd");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(CommandLine, NoArgumentsMeansNoOverrides) {
  auto c = parse({});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, CommandLine{});
  EXPECT_EQ(apply_overrides(default_config(), *c), default_config());
}

TEST(CommandLine, EveryFlagInBothSpellings) {
  for (bool inline_form : {false, true}) {
    std::vector<std::string> words;
    auto add = [&](const char* flag, const char* value) {
      if (inline_form) {
        words.push_back(std::string(flag) + "=" + value);
      } else {
        words.push_back(flag);
        words.push_back(value);
      }
    };
    add("--config", "/etc/ramguard.yaml");
    add("--watch", "42");
    add("--watch", "43");
    add("--interval", "250ms");
    add("--metrics", "0.0.0.0:0");
    add("--socket", "/tmp/s.sock");
    add("--state-dir", "/tmp/state");
    add("--budget", "16GiB");
    add("--log-level", "debug");
    std::vector<const char*> args;
    for (const auto& w : words) args.push_back(w.c_str());
    auto c = parse(args);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->config_path, "/etc/ramguard.yaml");
    EXPECT_EQ(c->watch, (std::vector<pid_t>{42, 43}));
    EXPECT_EQ(c->interval, std::chrono::nanoseconds(250ms));
    EXPECT_EQ(c->metrics, (Endpoint{"0.0.0.0", 0}));
    EXPECT_EQ(c->socket, "/tmp/s.sock");
    EXPECT_EQ(c->state_dir, "/tmp/state");
    EXPECT_EQ(c->budget_bytes, 16ull << 30);
    EXPECT_EQ(c->log_level, log::Level::kDebug);
    EXPECT_FALSE(c->help);
  }
}

TEST(CommandLine, HelpVersionAndCheckConfig) {
  auto c = parse({"--help", "--version", "--check-config", "x.yaml"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->help);
  EXPECT_TRUE(c->version);
  EXPECT_EQ(c->check_config_path, "x.yaml");
  auto h = parse({"-h"});
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->help);
}

struct BadFlags {
  std::vector<const char*> args;
  std::vector<const char*> expected;
};

TEST(CommandLine, BadInputNamesTheFlag) {
  const BadFlags cases[] = {
      {{"--verbose"}, {"unknown flag '--verbose'"}},
      {{"--budget=1GB", "--frobnicate=3"}, {"unknown flag '--frobnicate'"}},
      {{"stray"}, {"unexpected argument 'stray'"}},
      {{"--config"}, {"--config: missing value"}},
      {{"--config", "--watch", "1"}, {"--config: missing value"}},
      {{"--config="}, {"--config: empty path"}},
      {{"--watch", "0"}, {"--watch: invalid PID '0'"}},
      {{"--watch=-5"}, {"--watch: invalid PID '-5'"}},
      {{"--watch", "abc"}, {"--watch: invalid PID 'abc'"}},
      {{"--watch", "12x"}, {"--watch: invalid PID '12x'"}},
      {{"--interval", "5ms"}, {"--interval: '5ms' is out of range; allowed 10ms to 1h"}},
      {{"--interval", "2"}, {"--interval: invalid duration '2'"}},
      {{"--metrics", "9797"}, {"--metrics: invalid address '9797'; expected HOST:PORT"}},
      {{"--metrics=127.0.0.1:99999"}, {"--metrics: invalid port"}},
      {{"--budget", "0"}, {"--budget: '0' is out of range"}},
      {{"--budget", "16 GBs"}, {"--budget: invalid size '16 GBs'"}},
      {{"--log-level", "loud"}, {"--log-level: invalid log level 'loud'"}},
      {{"--help=yes"}, {"--help takes no value"}},
      {{"--config", "a.yaml", "--check-config", "b.yaml"}, {"--config and --check-config"}},
  };
  for (const BadFlags& c : cases) {
    auto parsed = parse(c.args);
    ASSERT_FALSE(parsed.ok()) << c.args[0];
    for (const char* part : c.expected) {
      EXPECT_THAT(parsed.error().message, HasSubstr(part)) << c.args[0];
    }
  }
}

TEST(CommandLine, FlagsWinOverTheFile) {
  auto file = parse_config_yaml(
      "budget: 8GB\nsampling: { interval: 5s }\nwatch: [7, 8]\nstate_dir: /file/state\n"
      "metrics: { listen: \"127.0.0.1:1000\" }\nlog: { level: error }\n",
      "f.yaml");
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto flags = parse({"--interval", "1s", "--watch", "8", "--watch", "9", "--socket", "/s.sock"});
  ASSERT_TRUE(flags.ok());
  const Config c = apply_overrides(*file, *flags);
  EXPECT_EQ(c.sampling.interval, 1s);         // flag
  EXPECT_EQ(c.control.socket, "/s.sock");     // flag
  EXPECT_EQ(c.budget_bytes, 8'000'000'000u);  // file, no flag
  EXPECT_EQ(c.state_dir, "/file/state");      // file, no flag
  EXPECT_EQ(c.metrics.listen, (Endpoint{"127.0.0.1", 1000}));
  EXPECT_EQ(c.log_level, log::Level::kError);
  EXPECT_EQ(c.watch, (std::vector<pid_t>{7, 8, 9}));  // merged, no duplicates
}

TEST(CommandLine, WatchTakesAScopeInTheFlagAndTheFile) {
  auto file = parse_config_yaml("watch: [7, \"tree:8\"]\n", "f.yaml");
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto flags = parse({"--watch", "cgroup:9"});
  ASSERT_TRUE(flags.ok());
  const Config c = apply_overrides(*file, *flags);
  EXPECT_EQ(c.watch, (std::vector<pid_t>{7, 8, 9}));
  EXPECT_EQ(c.watch_scopes, (std::map<pid_t, Scope>{{8, Scope::kTree}, {9, Scope::kCgroup}}));
  EXPECT_THAT(describe_config(c), HasSubstr("watching PIDs: 7, tree:8, cgroup:9"));
  auto bad = parse_config_yaml("watch: [\"pool:8\"]\n", "f.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("unknown scope 'pool'"));
}

TEST(CommandLine, FlagThatBreaksACrossKeyRuleIsCaughtByValidate) {
  auto file = parse_config_yaml("margin: 2GB\n", "f.yaml");
  ASSERT_TRUE(file.ok());
  auto flags = parse({"--budget", "1GB"});
  ASSERT_TRUE(flags.ok());
  Status s = validate_config(apply_overrides(*file, *flags), "command line");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message,
              HasSubstr("margin: 2.00 GB (2000000000 bytes) must be less than budget 1.00 GB"));
}

TEST(CommandLine, UsageListsEveryFlagAndVersionIsTheProjects) {
  const std::string usage = usage_text();
  for (const char* flag : {"--config FILE", "--check-config FILE", "--check-ledger DIR",
                           "--watch PID", "--interval", "--metrics HOST:PORT", "--socket PATH",
                           "--state-dir DIR", "--budget", "--log-level", "--help", "--version"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  EXPECT_EQ(version_text(), std::string("ramguardd ") + RAMGUARD_TEST_VERSION);
}

}  // namespace
}  // namespace ramguard
