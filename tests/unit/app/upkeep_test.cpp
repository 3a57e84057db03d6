// Upkeep on a fake clock: lease expiry, forgetting ended runs, the ledger's retry after a full
// disk and hourly retention happen when the clock says so, with real parts and a real ledger.
#include "app/upkeep.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include "unit/app/manual_ticker.hpp"
#include "unit/procfs/test_child.hpp"
#include "unit/runs/run_until.hpp"
#include "unit/store/store_fixtures.hpp"

namespace ramguard::test {
namespace {

using namespace std::chrono_literals;
using ramguard::testing::TestChild;

constexpr std::uint64_t kGB = 1'000'000'000;

class UpkeepTest : public ::testing::Test {
 protected:
  UpkeepTest() {
    RunParams params;
    params.ended_retention = 10min;
    registry_.set_params(params);
    registry_.add_observer(&journal_);
    upkeep_.start();
  }

  static std::unique_ptr<MetricsExporter> start_metrics() {
    auto started = MetricsExporter::start(Endpoint{"127.0.0.1", 0});
    EXPECT_TRUE(started.ok());
    return started ? std::move(*started) : nullptr;
  }

  std::size_t stored_reservations() {
    auto rows = store_->load_reservations();
    EXPECT_TRUE(rows.ok());
    return rows ? rows->size() : 0;
  }

  void admit(std::uint64_t bytes, const std::string& job = "upkeep-test") {
    const Decision d = admission_.admit({job, bytes, EstimateSource{}, 0});
    ASSERT_TRUE(d.admitted);
    registry_.sync_reservations();
  }

  void advance_and_tick(std::chrono::nanoseconds d) {
    clock_.advance(d);
    ticker_.fire();
  }

  ramguard::testing::TempDir dir_;
  FakeClock clock_;
  asio::io_context io_;
  ProcFs procfs_;
  ExitWatcher exits_{io_};
  Sampler sampler_{io_, procfs_, clock_, 2s};
  Admission admission_{16 * kGB, 0, 60s, clock_};
  RunRegistry registry_{io_, clock_, sampler_, exits_, admission_, RunParams{}};
  std::unique_ptr<MetricsExporter> metrics_ = start_metrics();
  std::unique_ptr<Store> store_ = ramguard::testing::open_store(dir_.path());
  LedgerJournal journal_{*store_};
  ManualTicker ticker_;
  RetentionConfig retention_;
  Upkeep upkeep_{
      clock_, ticker_, {registry_, sampler_, *metrics_, store_.get(), &journal_}, retention_};
};

TEST_F(UpkeepTest, TicksEverySecondOnItsTicker) {
  EXPECT_TRUE(ticker_.running());
  EXPECT_EQ(ticker_.period(), Upkeep::kPeriod);
  upkeep_.stop();
  EXPECT_FALSE(ticker_.running());
}

TEST_F(UpkeepTest, AnUnclaimedReservationExpiresWhenTheClockPassesItsLease) {
  admit(kGB);
  EXPECT_EQ(stored_reservations(), 1u);
  advance_and_tick(59s);
  EXPECT_EQ(admission_.reserved_bytes(), kGB);
  EXPECT_EQ(stored_reservations(), 1u);
  advance_and_tick(2s);
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_EQ(stored_reservations(), 0u);  // the ledger heard it through the registry
}

TEST_F(UpkeepTest, AnEndedRunIsForgottenWhenTheClockPassesItsRetention) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  StartRunInput in;
  in.pid = child.pid();
  in.job = "upkeep-test";
  auto started = registry_.start(in, Caller{0, 0, true});
  ASSERT_TRUE(started.ok()) << started.error().message;
  const std::string id = (*started)->info.run_id;
  ::kill(child.pid(), SIGKILL);
  ASSERT_TRUE(run_until(
      io_, [&] { return !registry_.find(id)->active(); }, 2000ms));
  advance_and_tick(10min - 1s);
  EXPECT_NE(registry_.find(id), nullptr);
  advance_and_tick(2s);
  EXPECT_EQ(registry_.find(id), nullptr);  // memory only: the ledger keeps it
  EXPECT_TRUE(store_->load_run(id).ok());
}

TEST_F(UpkeepTest, ReservationsAdmittedOnAFullDiskReachTheLedgerOnceSpaceIsBack) {
  ASSERT_TRUE(store_->set_max_db_bytes(1).ok());  // the cap behaves like a full disk
  std::size_t admitted = 0;
  while (store_->writable() && admitted < 500) {
    admit(kGB / 1000, std::string(2000, 'j'));
    ++admitted;
  }
  ASSERT_FALSE(store_->writable());
  EXPECT_LT(stored_reservations(), admitted);
  for (int i = 0; i < 6; ++i) advance_and_tick(1s);  // past the 5 s rewrite: still full
  EXPECT_FALSE(store_->writable());
  EXPECT_TRUE(journal_.behind());
  ASSERT_TRUE(store_->set_max_db_bytes(0).ok());
  advance_and_tick(1s);
  EXPECT_TRUE(store_->writable());
  EXPECT_FALSE(journal_.behind());
  EXPECT_EQ(stored_reservations(), admitted);
}

TEST_F(UpkeepTest, RetentionRunsHourlyOnTheClock) {
  RetentionConfig retention;
  retention.max_age_days = 1;
  upkeep_.set_retention(retention);
  const Instant now = clock_.now();
  ASSERT_TRUE(store_->begin_run(ramguard::testing::sample_ledger("old")).ok());
  ASSERT_TRUE(
      store_->end_run("old", RunState::kEnded, {now.monotonic, now.wall - 48h}, 1, {}).ok());
  advance_and_tick(59min);
  EXPECT_TRUE(store_->load_run("old").ok());
  advance_and_tick(1min);
  EXPECT_FALSE(store_->load_run("old").ok());
}

}  // namespace
}  // namespace ramguard::test
