// Honest degraded states against the real daemon: a ledger that cannot be written (a
// read-only bind mount, a full tmpfs) is still read at startup, says so in `status` and in
// ramguard_store_writable, logs one line instead of one per mark, and never makes admission
// forget a reservation; one undecodable run does not cost the others their recovery.
// Needs root (mount); every mount is undone in TearDown.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;
constexpr const char* kConfig = "budget: 16GB\n";

class DegradedLedger : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("degraded"); }
  void TearDown() override {
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::filesystem::path read_only_view(const std::filesystem::path& source) {
    const auto target = dir_ / "ro";
    std::filesystem::create_directories(target);
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      throw std::runtime_error(std::string("bind mount: ") + std::strerror(errno));
    }
    mounts_.push_back(target);
    if (::mount(nullptr, target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
      throw std::runtime_error(std::string("read-only remount: ") + std::strerror(errno));
    }
    return target;
  }

  std::filesystem::path small_tmpfs(const std::string& size) {
    const auto target = dir_ / "tmpfs";
    std::filesystem::create_directories(target);
    const std::string options = "size=" + size + ",mode=0755";
    if (::mount("tmpfs", target.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      throw std::runtime_error(std::string("tmpfs mount: ") + std::strerror(errno));
    }
    mounts_.push_back(target);
    return target;
  }

  std::unique_ptr<Daemon> daemon_on(const std::filesystem::path& state) {
    Daemon::Options o;
    o.config_yaml = kConfig;
    o.state_dir = state;
    return Daemon::start(o);
  }

  void expect_read_only_restored(bool kill9);

  std::filesystem::path dir_;
  std::vector<std::filesystem::path> mounts_;
};

v1::Reply call_status(const Daemon& d, const std::string& run_id = "") {
  v1::Request r;
  r.mutable_status()->set_run_id(run_id);
  return d.call(r);
}

v1::Reply admit(const Daemon& d, std::uint64_t bytes) {
  v1::Request r;
  r.mutable_admit()->set_estimate_bytes(bytes);
  return d.call(r);
}

v1::Reply start_run(const Daemon& d, pid_t pid) {
  v1::Request r;
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  return d.call(r);
}

v1::Reply mark_round(const Daemon& d, const std::string& run_id) {
  v1::Request r;
  r.mutable_mark()->set_run_id(run_id);
  r.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  return d.call(r);
}

std::size_t count_lines(const Daemon& d, const std::string& needle) {
  std::size_t n = 0;
  for (const auto& line : d.log_lines()) n += line.find(needle) != std::string::npos ? 1 : 0;
  return n;
}

// A live run and an unclaimed 1 GB reservation in `state`, left behind by a daemon that
// stopped (SIGTERM: WAL checkpointed away) or died (kill -9: WAL and -shm stay).
struct Left {
  std::string run_id;
  std::string rsv;
};
Left leave_run_and_reservation(const std::filesystem::path& state, const MemChild& child,
                               bool kill9) {
  Daemon::Options o;
  o.config_yaml = kConfig;
  o.state_dir = state;
  auto d = Daemon::start(o);
  const v1::Reply started = start_run(*d, child.pid());
  if (!started.has_run_start()) throw std::runtime_error(started.DebugString());
  for (int i = 0; i < 3; ++i) (void)mark_round(*d, started.run_start().run_id());
  const v1::Reply admitted = admit(*d, kGB);
  if (!admitted.admit().admitted()) throw std::runtime_error(admitted.DebugString());
  if (kill9) {
    d->kill_hard();
  } else {
    d->signal_and_wait(SIGTERM);
  }
  return {started.run_start().run_id(), admitted.admit().reservation_id()};
}

void DegradedLedger::expect_read_only_restored(bool kill9) {
  MemChild child;
  const auto state = dir_ / "state";
  const Left left = leave_run_and_reservation(state, child, kill9);
  auto d = daemon_on(read_only_view(state));

  const v1::Reply s = call_status(*d);
  EXPECT_TRUE(s.status().store_available()) << s.DebugString();
  EXPECT_FALSE(s.status().store_writable()) << s.DebugString();
  EXPECT_EQ(s.status().store_state().rfind("read-only: ", 0), 0u) << s.status().store_state();
  // The live run answers (it was NOT_FOUND) and the reservation still counts.
  const v1::Reply run = call_status(*d, left.run_id);
  ASSERT_EQ(run.status().runs_size(), 1) << run.DebugString();
  EXPECT_EQ(run.status().runs(0).state(), "active");
  EXPECT_EQ(run.status().runs(0).boundaries_size(), 3);
  ASSERT_EQ(s.status().reservations_size(), 1) << s.DebugString();
  EXPECT_EQ(s.status().reservations(0).reservation_id(), left.rsv);
  EXPECT_EQ(s.status().reserved_bytes(), kGB);
  // 15.5 GB more fits 16 GB only if the restored 1 GB were forgotten.
  const v1::Reply refused = admit(*d, 15'500'000'000);
  EXPECT_FALSE(refused.admit().admitted()) << refused.DebugString();
  EXPECT_EQ(refused.admit().reserved_bytes(), kGB);
  EXPECT_EQ(metric_value(d->scrape_metrics(), "ramguard_store_writable"), 0.0);
  EXPECT_EQ(metric_value(d->scrape_metrics(), "ramguard_store_available"), 1.0);

  // Marks go on, honestly unstored, with no error line per mark.
  for (int i = 0; i < 20; ++i) {
    const v1::Reply m = mark_round(*d, left.run_id);
    ASSERT_TRUE(m.has_mark()) << m.DebugString();
    EXPECT_FALSE(m.mark().stored());
  }
  EXPECT_EQ(count_lines(*d, "event=store.unwritable"), 1u) << d->log_text();
  EXPECT_EQ(count_lines(*d, "event=store.write_failed"), 0u) << d->log_text();
}

TEST_F(DegradedLedger, ReadOnlyLedgerAfterACleanStopKeepsRunsAndReservations) {
  expect_read_only_restored(/*kill9=*/false);
}

TEST_F(DegradedLedger, ReadOnlyLedgerAfterKill9KeepsRunsAndReservations) {
  expect_read_only_restored(/*kill9=*/true);
}

// Fills the filesystem holding `dir` to the last byte; returns the filler's path.
std::filesystem::path fill(const std::filesystem::path& dir) {
  const auto filler = dir / "filler";
  std::ofstream out(filler, std::ios::binary);
  const std::string block(4096, 'x');
  while (out.write(block.data(), block.size())) {
  }
  out.close();
  // Whatever partial block is left: write bytes one by one until ENOSPC.
  std::ofstream tail(filler, std::ios::binary | std::ios::app);
  while (tail.put('x') && tail.flush()) {
  }
  return filler;
}

TEST_F(DegradedLedger, FullLedgerShowsUnwritableAndAdmissionStillCounts) {
  const auto fs = small_tmpfs("6m");
  MemChild child;
  auto d = daemon_on(fs / "state");
  const v1::Reply started = start_run(*d, child.pid());
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  const std::string run_id = started.run_start().run_id();
  EXPECT_TRUE(mark_round(*d, run_id).mark().stored());
  EXPECT_TRUE(call_status(*d).status().store_writable());
  EXPECT_EQ(metric_value(d->scrape_metrics(), "ramguard_store_writable"), 1.0);

  const auto filler = fill(fs);
  int unstored = 0;
  for (int i = 0; i < 200 && unstored < 20; ++i) {
    unstored += mark_round(*d, run_id).mark().stored() ? 0 : 1;
  }
  ASSERT_GE(unstored, 20) << "the disk never filled up";
  const v1::Reply s = call_status(*d);
  EXPECT_TRUE(s.status().store_available());
  EXPECT_FALSE(s.status().store_writable());
  EXPECT_EQ(s.status().store_state().rfind("unwritable: disk full", 0), 0u)
      << s.status().store_state();
  EXPECT_EQ(metric_value(d->scrape_metrics(), "ramguard_store_writable"), 0.0);
  EXPECT_EQ(count_lines(*d, "event=store.unwritable"), 1u) << d->log_text();
  EXPECT_EQ(count_lines(*d, "event=store.write_failed"), 0u);

  // Admission still counts what it admitted while nothing could be stored.
  const v1::Reply first = admit(*d, 10 * kGB);
  ASSERT_TRUE(first.admit().admitted()) << first.DebugString();
  const v1::Reply second = admit(*d, 10 * kGB);
  EXPECT_FALSE(second.admit().admitted()) << second.DebugString();
  EXPECT_EQ(second.admit().reserved_bytes(), 10 * kGB);

  // Space comes back: the daemon notices by itself (it retries the reservations), and the
  // reservation reaches the ledger without a new admission.
  std::filesystem::remove(filler);
  EXPECT_TRUE(eventually([&] { return call_status(*d).status().store_writable(); }, 15s))
      << d->log_text();
  EXPECT_FALSE(d->wait_for_log("event=store.writable_again").empty());
  EXPECT_TRUE(mark_round(*d, run_id).mark().stored()) << d->log_text();
  d->kill_hard();
  auto again = daemon_on(fs / "state");
  const v1::Reply restored = call_status(*again);
  ASSERT_EQ(restored.status().reservations_size(), 1) << restored.DebugString();
  EXPECT_EQ(restored.status().reservations(0).reservation_id(), first.admit().reservation_id());
}

TEST_F(DegradedLedger, OneUndecodableRunDoesNotStopTheOthersRecovery) {
  const auto state = dir_ / "state";
  MemChild a;
  MemChild b;
  std::string bad, good;
  {
    auto d = daemon_on(state);
    bad = start_run(*d, a.pid()).run_start().run_id();
    good = start_run(*d, b.pid()).run_start().run_id();
    ASSERT_FALSE(bad.empty());
    ASSERT_FALSE(good.empty());
    d->kill_hard();
  }
  const CommandResult damaged =
      run_command({"/usr/bin/sqlite3", (state / "ramguard.db").string(),
                   "UPDATE marks SET kind = 'no-such-kind' WHERE run_id = '" + bad + "'"});
  ASSERT_EQ(damaged.exit_code, 0) << damaged.output;

  auto d = daemon_on(state);
  const std::string skipped = d->wait_for_log("event=recovery.run_skipped");
  EXPECT_NE(skipped.find(bad), std::string::npos) << d->log_text();
  EXPECT_NE(skipped.find("ended_lost=true"), std::string::npos) << skipped;
  EXPECT_TRUE(d->wait_for_log("event=recovery.failed", 200ms).empty()) << d->log_text();
  const v1::Reply run = call_status(*d, good);
  ASSERT_EQ(run.status().runs_size(), 1) << run.DebugString();
  EXPECT_EQ(run.status().runs(0).state(), "active");
  const CommandResult states = run_command({"/usr/bin/sqlite3", (state / "ramguard.db").string(),
                                            "SELECT state FROM runs WHERE run_id = '" + bad + "'"});
  EXPECT_EQ(states.output, "lost\n");
}

}  // namespace
}  // namespace ramguard::testing
