// Nothing acknowledged is lost to a full disk, against the real daemon on a real small tmpfs
// filled and emptied mid-run: what was accepted while the ledger could not take writes (round
// ends, a run's end, a run started meanwhile, a reservation) is journalled in memory, written in
// order once space is back, and is all in the ledger after a kill -9 and a restart. A journal
// at its bound drops the oldest writes and says so (reply, log, metric). Needs root (mount).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;

class FullDiskJournal : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("fulldisk");
    fs_ = dir_ / "tmpfs";
    std::filesystem::create_directories(fs_);
    if (::mount("tmpfs", fs_.c_str(), "tmpfs", 0, "size=6m,mode=0755") != 0) {
      FAIL() << "tmpfs mount (the test needs root): " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    daemon_.reset();
    if (mounted_) ::umount2(fs_.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Daemon& start(const std::string& yaml = "budget: 16GB\n") {
    daemon_.reset();
    Daemon::Options o;
    o.config_yaml = yaml;
    o.state_dir = fs_ / "state";
    daemon_ = Daemon::start(o);
    return *daemon_;
  }

  // Fills the tmpfs to its last byte.
  void fill() {
    std::ofstream out(fs_ / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (out.write(block.data(), block.size())) {
    }
    out.close();
    std::ofstream tail(fs_ / "filler", std::ios::binary | std::ios::app);
    while (tail.put('x') && tail.flush()) {
    }
  }
  void empty() { std::filesystem::remove(fs_ / "filler"); }

  std::string sql(const std::string& query) {
    const CommandResult r =
        run_command({"/usr/bin/sqlite3", (fs_ / "state" / "ramguard.db").string(), query});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  }

  std::filesystem::path dir_, fs_;
  bool mounted_ = false;
  std::unique_ptr<Daemon> daemon_;
};

v1::Reply start_run(const Daemon& d, pid_t pid) {
  v1::Request r;
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  r.mutable_run_start()->set_job("fulldisk");
  return d.call(r);
}

v1::MarkReply round_end(const Daemon& d, const std::string& run_id) {
  v1::Request r;
  r.mutable_mark()->set_run_id(run_id);
  r.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  const v1::Reply reply = d.call(r);
  EXPECT_TRUE(reply.has_mark()) << reply.DebugString();
  return reply.mark();
}

v1::RunStatus report(const Daemon& d, const std::string& run_id) {
  v1::Request r;
  r.mutable_report()->set_run_id(run_id);
  const v1::Reply reply = d.call(r);
  EXPECT_TRUE(reply.has_report()) << reply.DebugString();
  return reply.report().run();
}

bool call_status_writable(const Daemon& d) {
  v1::Request r;
  r.mutable_status();
  return d.call(r).status().store_writable();
}

double journal_writes(const Daemon& d) {
  return metric_value(d.scrape_metrics(), "ramguard_store_journal_writes");
}

TEST_F(FullDiskJournal, WhatWasAcceptedWhileFullIsInTheLedgerAfterARestart) {
  MemChild a;
  MemChild b;
  Daemon& d = start();
  const v1::Reply started = start_run(d, a.pid());
  ASSERT_TRUE(started.run_start().stored()) << started.DebugString();
  const std::string run = started.run_start().run_id();
  ASSERT_TRUE(round_end(d, run).stored());

  fill();
  // Round ends until one is refused (the WAL may still have room for a few), then two more:
  // all accepted, the unstored ones saying that they wait in the journal.
  std::uint32_t rounds = 1;
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) {
    const v1::MarkReply m = round_end(d, run);
    EXPECT_EQ(m.round(), ++rounds);
    refused = !m.stored();
  }
  ASSERT_TRUE(refused) << "the disk never filled up";
  for (int i = 0; i < 2; ++i) {
    const v1::MarkReply m = round_end(d, run);
    EXPECT_EQ(m.round(), ++rounds);
    EXPECT_FALSE(m.stored());
    EXPECT_NE(m.warning().find("journalled in memory"), std::string::npos) << m.warning();
  }
  const v1::Reply late = start_run(d, b.pid());
  ASSERT_TRUE(late.has_run_start()) << late.DebugString();
  EXPECT_FALSE(late.run_start().stored());
  EXPECT_NE(late.run_start().warning().find("journalled in memory"), std::string::npos)
      << late.run_start().warning();
  const std::string late_run = late.run_start().run_id();
  EXPECT_FALSE(round_end(d, late_run).stored());
  v1::Request end;
  end.mutable_run_end()->set_run_id(run);
  const v1::Reply ended = d.call(end);
  ASSERT_TRUE(ended.has_run_end()) << ended.DebugString();
  EXPECT_FALSE(ended.run_end().stored());
  EXPECT_NE(ended.run_end().warning().find("journalled in memory"), std::string::npos)
      << ended.run_end().warning();
  v1::Request admit;
  admit.mutable_admit()->set_estimate_bytes(kGB);
  const v1::Reply admitted = d.call(admit);
  ASSERT_TRUE(admitted.admit().admitted()) << admitted.DebugString();
  EXPECT_TRUE(eventually([&] { return journal_writes(d) >= 5; }, 5s))
      << "journal metric " << journal_writes(d);
  EXPECT_FALSE(call_status_writable(d));

  empty();
  // The daemon retries by itself: the journal drains to 0 without a new request.
  EXPECT_TRUE(eventually([&] { return journal_writes(d) == 0; }, 15s)) << d.log_text();
  EXPECT_FALSE(d.wait_for_log("event=store.journal_written").empty());
  EXPECT_EQ(metric_value(d.scrape_metrics(), "ramguard_store_journal_dropped_total"), 0.0);
  d.kill_hard();

  Daemon& again = start();
  const v1::RunStatus a_after = report(again, run);
  EXPECT_EQ(a_after.state(), "ended") << a_after.DebugString();
  EXPECT_EQ(a_after.boundaries_size(), static_cast<int>(rounds)) << a_after.DebugString();
  const v1::RunStatus b_after = report(again, late_run);
  EXPECT_EQ(b_after.state(), "active") << b_after.DebugString();
  EXPECT_EQ(b_after.boundaries_size(), 1) << b_after.DebugString();
  v1::Request status;
  status.mutable_status();
  const v1::Reply s = again.call(status);
  ASSERT_EQ(s.status().reservations_size(), 1) << s.DebugString();
  EXPECT_EQ(s.status().reservations(0).reservation_id(), admitted.admit().reservation_id());
  // In the file, in order: A's start, every round end, then its end.
  std::string expected = "run_start:0";
  for (std::uint32_t r = 1; r <= rounds; ++r) expected += " round_end:" + std::to_string(r);
  expected += " run_end:" + std::to_string(rounds) + "\n";
  EXPECT_EQ(sql("SELECT group_concat(kind || ':' || round, ' ') FROM (SELECT kind, round FROM "
                "marks WHERE run_id = '" +
                run + "' ORDER BY seq)"),
            expected);
}

TEST_F(FullDiskJournal, AJournalAtItsBoundKeepsTheNewestAndSaysWhatItDropped) {
  MemChild a;
  Daemon& d = start("budget: 16GB\nstore:\n  journal_max_writes: 4\n");
  const std::string run = start_run(d, a.pid()).run_start().run_id();
  ASSERT_FALSE(run.empty());
  ASSERT_TRUE(round_end(d, run).stored());
  fill();
  std::uint32_t first_unstored = 0;
  for (std::uint32_t round = 2; round < 200 && first_unstored == 0; ++round) {
    if (!round_end(d, run).stored()) first_unstored = round;
  }
  ASSERT_NE(first_unstored, 0u) << "the disk never filled up";
  v1::MarkReply last;
  for (int i = 0; i < 12; ++i) last = round_end(d, run);
  EXPECT_FALSE(last.stored());
  EXPECT_EQ(last.round(), first_unstored + 12);
  EXPECT_NE(last.warning().find("the journal is full (4 writes)"), std::string::npos)
      << last.warning();
  EXPECT_FALSE(d.wait_for_log("event=store.journal_full").empty());
  EXPECT_TRUE(eventually(
      [&] { return metric_value(d.scrape_metrics(), "ramguard_store_journal_dropped_total") >= 8; },
      5s));
  EXPECT_LE(journal_writes(d), 4.0);

  empty();
  EXPECT_TRUE(eventually([&] { return journal_writes(d) == 0; }, 15s)) << d.log_text();
  EXPECT_FALSE(d.wait_for_log("event=store.journal_written").empty()) << d.log_text();
  d.kill_hard();
  // The newest round end is there, the oldest unstored one is not.
  const std::string rounds =
      " " + sql("SELECT group_concat(round, ' ') FROM (SELECT round FROM marks WHERE run_id = '" +
                run + "' AND kind = 'round_end' ORDER BY seq)");
  EXPECT_EQ(rounds.rfind(" 1 ", 0), 0u) << rounds;
  EXPECT_NE(rounds.find(" " + std::to_string(first_unstored + 12) + "\n"), std::string::npos)
      << rounds;
  EXPECT_EQ(rounds.find(" " + std::to_string(first_unstored) + " "), std::string::npos) << rounds;
}

// A SIGTERM while the disk is still full: the daemon frees the space it kept for this
// (ramguard.reserve) and writes what its journal holds, so the next start finds the run ended,
// not active at its last stored round, and its process's later death is no verdict of the run.
// The journal's gauges are right from the first scrape and follow it at once.
TEST_F(FullDiskJournal, AStopOnAFullDiskWritesTheJournalAndTheRunStaysEnded) {
  MemChild a;
  Daemon& d = start();
  EXPECT_EQ(metric_value(d.scrape_metrics(), "ramguard_store_journal_max_writes"), 16384.0);
  EXPECT_TRUE(std::filesystem::exists(fs_ / "state" / "ramguard.reserve"));
  const std::string run = start_run(d, a.pid()).run_start().run_id();
  ASSERT_FALSE(run.empty());
  ASSERT_TRUE(round_end(d, run).stored());
  fill();
  bool refused = false;
  std::uint32_t rounds = 1;
  for (int i = 0; i < 200 && !refused; ++i) {
    const v1::MarkReply m = round_end(d, run);
    rounds = m.round();
    refused = !m.stored();
  }
  ASSERT_TRUE(refused) << "the disk never filled up";
  EXPECT_GE(journal_writes(d), 1.0) << "the gauge follows the journal at once";
  v1::Request end;
  end.mutable_run_end()->set_run_id(run);
  const v1::Reply ended = d.call(end);
  ASSERT_TRUE(ended.has_run_end()) << ended.DebugString();
  EXPECT_FALSE(ended.run_end().stored());

  ASSERT_EQ(d.signal_and_wait(SIGTERM), 0);
  const std::string written = d.wait_for_log("event=store.journal_written_at_stop");
  EXPECT_NE(written.find("reserve_used=true"), std::string::npos) << d.log_text();
  EXPECT_TRUE(d.wait_for_log("event=store.journal_dropped", 0s).empty()) << d.log_text();

  Daemon& again = start();
  const v1::RunStatus after = report(again, run);
  EXPECT_EQ(after.state(), "ended") << after.DebugString();
  EXPECT_GE(after.earlier_boundaries().count() + after.boundaries_size(), rounds);
  a.kill(SIGKILL);
  (void)a.wait();
  std::this_thread::sleep_for(500ms);
  const v1::RunStatus later = report(again, run);
  EXPECT_EQ(later.state(), "ended");
  for (const v1::Verdict& v : later.verdicts()) {
    EXPECT_NE(v.kind(), "exited") << v.DebugString();
  }
}

// Without the reserve (taken by something else) the stop says what it drops, by kind and run.
TEST_F(FullDiskJournal, AStopThatCannotWriteTheJournalSaysWhatItDrops) {
  MemChild a;
  Daemon& d = start();
  const std::string run = start_run(d, a.pid()).run_start().run_id();
  ASSERT_FALSE(run.empty());
  ASSERT_TRUE(std::filesystem::remove(fs_ / "state" / "ramguard.reserve"));
  fill();
  bool refused = false;
  for (int i = 0; i < 200 && !refused; ++i) refused = !round_end(d, run).stored();
  ASSERT_TRUE(refused) << "the disk never filled up";
  ASSERT_FALSE(round_end(d, run).stored());
  ASSERT_EQ(d.signal_and_wait(SIGTERM), 0);
  const std::string dropped = d.wait_for_log("event=store.journal_dropped");
  ASSERT_FALSE(dropped.empty()) << d.log_text();
  EXPECT_NE(dropped.find("level=error"), std::string::npos) << dropped;
  EXPECT_NE(dropped.find(run), std::string::npos) << dropped;
  EXPECT_NE(dropped.find("mark"), std::string::npos) << dropped;
}

// Started on a full disk the ledger opens read-only; once space is back the daemon says, in the
// log and the status, that only a restart writes it again, and the restart does.
TEST_F(FullDiskJournal, AReadOnlyLedgerOpenedOnAFullDiskSaysARestartIsNeededWhenSpaceReturns) {
  MemChild a;
  std::string run;
  {
    Daemon& d = start();
    run = start_run(d, a.pid()).run_start().run_id();
    ASSERT_FALSE(run.empty());
    ASSERT_EQ(d.signal_and_wait(SIGTERM), 0);
  }
  fill();
  Daemon& d = start();
  v1::Request status;
  status.mutable_status();
  v1::StatusReply s = d.call(status).status();
  ASSERT_FALSE(s.store_writable()) << s.DebugString();
  EXPECT_EQ(s.store_state().rfind("read-only", 0), 0u) << s.store_state();
  empty();
  EXPECT_FALSE(d.wait_for_log("event=store.restart_needed", 15s).empty()) << d.log_text();
  s = d.call(status).status();
  EXPECT_NE(s.store_state().find("restart ramguardd"), std::string::npos) << s.store_state();

  Daemon& again = start();
  s = again.call(status).status();
  EXPECT_TRUE(s.store_writable()) << s.DebugString();
  EXPECT_EQ(report(again, run).state(), "active");
}

}  // namespace
}  // namespace ramguard::testing
