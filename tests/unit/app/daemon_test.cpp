// The Daemon in-process on a fake clock: opening applies the configuration, SIGHUP's reload
// applies the next one through the same path (and keeps the running one when the file is bad),
// one state directory takes one daemon, and run() starts upkeep on its ticker.
#include "app/daemon.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "app/daemon_config.hpp"
#include "unit/app/manual_ticker.hpp"
#include "unit/procfs/test_child.hpp"
#include "unit/store/store_fixtures.hpp"

namespace ramguard::test {
namespace {

using namespace std::chrono_literals;
using ramguard::testing::TestChild;
using ::testing::HasSubstr;

class DaemonTest : public ::testing::Test {
 protected:
  DaemonTest() { flags_.config_path = (dir_.path() / "ramguard.yaml").string(); }

  // The configuration file with these lines under the paths every test needs.
  void write_config(const std::string& lines) {
    std::ofstream(*flags_.config_path)
        << "state_dir: " << (dir_.path() / "state").string()
        << "\ncontrol:\n  socket: " << (dir_.path() / "ctl.sock").string()
        << "\nmetrics:\n  listen: \"127.0.0.1:0\"\n"
        << lines;
  }

  Result<std::unique_ptr<Daemon>> open() {
    auto config = startup_config(flags_);
    if (!config) return config.error();
    return Daemon::open(*config, flags_, {&clock_, &ticker_});
  }

  ramguard::testing::TempDir dir_;
  CommandLine flags_;
  FakeClock clock_;
  ManualTicker ticker_;
};

TEST_F(DaemonTest, ReloadAppliesTheNextFileThroughTheStartUpPathAndKeepsTheLastOnABadOne) {
  write_config("budget: 8GB\nsampling:\n  interval: 2s\n");
  auto daemon = open();
  ASSERT_TRUE(daemon.ok()) << daemon.error().message;
  Daemon& d = **daemon;
  EXPECT_EQ(d.admission().budget_bytes(), 8'000'000'000u);
  EXPECT_EQ(d.sampler().interval(), 2s);
  EXPECT_EQ(d.watches().size(), 0u);

  TestChild child;
  ASSERT_TRUE(child.hold(0));
  write_config("budget: 4GB\nsampling:\n  interval: 5s\nwatch: [" + std::to_string(child.pid()) +
               "]\n");
  d.reload();
  EXPECT_EQ(d.admission().budget_bytes(), 4'000'000'000u);
  EXPECT_EQ(d.sampler().interval(), 5s);
  EXPECT_TRUE(d.watches().watching(child.pid()));
  EXPECT_EQ(d.config().budget_bytes, 4'000'000'000u);

  write_config("budget: lots\n");
  d.reload();
  EXPECT_EQ(d.admission().budget_bytes(), 4'000'000'000u);
  EXPECT_EQ(d.sampler().interval(), 5s);
}

TEST_F(DaemonTest, ASecondDaemonOnTheSameStateDirectoryIsRefusedAndTouchesNothing) {
  write_config("budget: 8GB\n");
  auto first = open();
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = open();
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error().message, HasSubstr("holds the ledger lock"));
  EXPECT_TRUE(std::filesystem::exists(dir_.path() / "ctl.sock"));  // the first one's, still
}

TEST_F(DaemonTest, RunStartsUpkeepOnItsTickerAndStopEndsIt) {
  write_config("budget: 8GB\n");
  auto daemon = open();
  ASSERT_TRUE(daemon.ok()) << daemon.error().message;
  Daemon& d = **daemon;
  EXPECT_FALSE(ticker_.running());  // open() does not tick: requests wait for run()
  bool ticking = false;
  asio::post(d.io(), [&] {
    ticking = ticker_.running();
    ticker_.fire();  // one upkeep pass on the daemon's own parts
    d.stop();
  });
  EXPECT_EQ(d.run(), 0);
  EXPECT_TRUE(ticking);
  EXPECT_FALSE(ticker_.running());
}

}  // namespace
}  // namespace ramguard::test
