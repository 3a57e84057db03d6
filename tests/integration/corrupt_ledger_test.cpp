// A corrupt ledger is moved aside, salvaged and replaced, against the real daemon and real
// damaged files: a truncated file, pages garbled or zeroed in the middle, a garbled header,
// a ramguard file whose tables are not this build's, another application's database and an
// empty file. Admission waits a lease when runs or reservations may have been lost. Each time the
// old file is kept beside the new one, the rows SQLite can still read are in the fresh ledger, and
// new runs are stored durably (a kill -9 and a restart keep them). `ramguardd --check-ledger` does
// the same offline.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;
constexpr std::uint64_t kCensusBytes = 1 << 20;
constexpr int kFillerRounds = 400;  // run C's round ends: the pages the damage lands on

std::string sql(const std::filesystem::path& db, const std::string& query) {
  const CommandResult r = run_command({"/usr/bin/sqlite3", db.string(), query});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

v1::Reply start_run(const Daemon& d, pid_t pid) {
  v1::Request r;
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  r.mutable_run_start()->set_job("salvage");
  return d.call(r);
}

v1::MarkReply round_end(const Daemon& d, const std::string& run) {
  v1::Request r;
  r.mutable_mark()->set_run_id(run);
  r.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  return d.call(r).mark();
}

class CorruptLedger : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("corrupt");
    state_ = dir_ / "state";
    db_ = state_ / "ramguard.db";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<Daemon> start(const std::string& extra_yaml = "") {
    Daemon::Options o;
    o.config_yaml = "budget: 16GB\n" + extra_yaml;
    o.state_dir = state_;
    return Daemon::start(o);
  }

  // Run A (3 rounds, alive) and a 1 GB reservation first, then run C's many round ends, each
  // batch ended by a clean stop (the WAL is checkpointed into the file). Returns the file size
  // after the first part: the pages after it hold mostly C's rows.
  std::uintmax_t build_ledger() {
    {
      auto d = start();
      const v1::Reply a = start_run(*d, a_.pid());
      run_a_ = a.run_start().run_id();
      for (int i = 0; i < 2; ++i) EXPECT_TRUE(round_end(*d, run_a_).stored());
      census_round_end(*d);
      v1::Request admit;
      admit.mutable_admit()->set_estimate_bytes(kGB);
      rsv_ = d->call(admit).admit().reservation_id();
      EXPECT_FALSE(rsv_.empty());
      EXPECT_EQ(d->signal_and_wait(SIGTERM), 0);
    }
    const std::uintmax_t first = std::filesystem::file_size(db_);
    {
      auto d = start();
      const std::string c = start_run(*d, c_.pid()).run_start().run_id();
      for (int i = 0; i < kFillerRounds; ++i) (void)round_end(*d, c);
      EXPECT_EQ(d->signal_and_wait(SIGTERM), 0);
    }
    EXPECT_FALSE(std::filesystem::exists(state_ / "ramguard.db-wal"));
    return first;
  }

  // Run A's third round end carries a census of 1 MiB of its address space; returns once the
  // census is stored with its placement (placed after the mark's reply).
  void census_round_end(const Daemon& d) {
    const std::uint64_t address = a_.command("reserve held " + std::to_string(kCensusBytes));
    v1::Request r;
    r.mutable_mark()->set_run_id(run_a_);
    r.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
    v1::Census& c = *r.mutable_mark()->mutable_census();
    c.set_mode("roots");
    c.set_host_bytes(kCensusBytes);
    v1::CensusGroup& g = *c.add_groups();
    g.set_holder("server.state");
    g.set_reachable(true);
    g.set_bytes(kCensusBytes);
    g.mutable_ranges()->Add()->set_address(address);
    g.mutable_ranges(0)->set_nbytes(kCensusBytes);
    const v1::Reply marked = d.call(r);
    EXPECT_TRUE(marked.mark().stored()) << marked.DebugString();
    EXPECT_TRUE(eventually(
        [&] {
          return sql(db_, "SELECT placed_anon FROM censuses WHERE run_id = '" + run_a_ + "'") ==
                 std::to_string(kCensusBytes) + "\n";
        },
        30s));
  }

  // Zeroes every page of `table`'s b-tree (as SQLite's dbstat lists them).
  void zero_pages(const std::string& table) {
    const std::string pages = sql(
        db_, "SELECT pageno FROM dbstat WHERE name = '" + table + "' AND pagetype != 'overflow'");
    const auto page_size = static_cast<std::streamoff>(std::stoi(sql(db_, "PRAGMA page_size")));
    std::fstream f(db_, std::ios::in | std::ios::out | std::ios::binary);
    const std::string zeros(static_cast<std::size_t>(page_size), '\0');
    std::istringstream lines(pages);
    int zeroed = 0;
    for (std::string line; std::getline(lines, line); ++zeroed) {
      f.seekp((std::stoi(line) - 1) * page_size);
      f.write(zeros.data(), page_size);
    }
    ASSERT_GT(zeroed, 0) << table;
  }

  std::vector<std::filesystem::path> moved_aside() const {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(state_)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with("ramguard.db.corrupt-") && !name.ends_with("-wal") &&
          !name.ends_with("-shm")) {
        out.push_back(e.path());
      }
    }
    return out;
  }

  // The daemon on the damaged directory: salvaged, writable, and what it stores survives.
  void expect_salvaged_and_durable(const std::string& why) {
    auto d = start();
    const std::string salvaged = d->wait_for_log("event=store.ledger_salvaged");
    ASSERT_FALSE(salvaged.empty()) << d->log_text();
    EXPECT_NE(salvaged.find(why), std::string::npos) << salvaged;
    ASSERT_EQ(moved_aside().size(), 1u);
    EXPECT_NE(salvaged.find(moved_aside()[0].string()), std::string::npos) << salvaged;
    v1::Request status;
    status.mutable_status();
    const v1::Reply s = d->call(status);
    EXPECT_TRUE(s.status().store_available()) << s.DebugString();
    EXPECT_TRUE(s.status().store_writable()) << s.DebugString();
    // The reservation in the old file counts again in admission.
    ASSERT_EQ(s.status().reservations_size(), 1) << s.DebugString();
    EXPECT_EQ(s.status().reservations(0).reservation_id(), rsv_);
    // Guarding is durable again: a new run and its round survive kill -9.
    MemChild fresh;
    const v1::Reply started = start_run(*d, fresh.pid());
    EXPECT_TRUE(started.run_start().stored()) << started.DebugString();
    const std::string run = started.run_start().run_id();
    EXPECT_TRUE(round_end(*d, run).stored());
    d->kill_hard();
    auto again = start();
    EXPECT_TRUE(again->wait_for_log("event=store.ledger_salvaged", 300ms).empty());
    v1::Request report;
    report.mutable_report()->set_run_id(run);
    const v1::Reply r = again->call(report);
    EXPECT_EQ(r.report().run().state(), "active") << r.DebugString();
    EXPECT_EQ(r.report().run().boundaries_size(), 1) << r.DebugString();
    again.reset();
    // Both runs of the old file (A and the filler) came over, and A's census with its group.
    EXPECT_EQ(sql(db_, "SELECT count(*) FROM runs WHERE run_id = '" + run_a_ + "'"), "1\n");
    EXPECT_EQ(sql(db_, "SELECT round, placed_anon FROM censuses WHERE run_id = '" + run_a_ + "'"),
              "3|" + std::to_string(kCensusBytes) + "\n");
    EXPECT_EQ(sql(db_, "SELECT holder, bytes FROM census_groups WHERE run_id = '" + run_a_ + "'"),
              "server.state|" + std::to_string(kCensusBytes) + "\n");
    EXPECT_EQ(sql(db_, "SELECT count(*) FROM runs"), "3\n");
  }

  std::filesystem::path dir_, state_, db_;
  MemChild a_, c_;
  std::string run_a_, rsv_;
};

TEST_F(CorruptLedger, TruncatedLedgerIsMovedAsideSalvagedAndReplaced) {
  const std::uintmax_t first = build_ledger();
  const std::uintmax_t full = std::filesystem::file_size(db_);
  ASSERT_GT(full, first + 8 * 4096) << "the filler run wrote too little";
  std::filesystem::resize_file(db_, first + (full - first) / 2);
  expect_salvaged_and_durable("reason=");
}

TEST_F(CorruptLedger, GarbledPagesAreMovedAsideSalvagedAndReplaced) {
  const std::uintmax_t first = build_ledger();
  const std::uintmax_t full = std::filesystem::file_size(db_);
  ASSERT_GT(full, first + 8 * 4096);
  {
    std::fstream f(db_, std::ios::in | std::ios::out | std::ios::binary);
    const std::uintmax_t from = (first + (full - first) / 3) / 4096 * 4096;
    f.seekp(static_cast<std::streamoff>(from));
    const std::string garbage(3 * 4096, '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  expect_salvaged_and_durable("reason=");
}

TEST_F(CorruptLedger, WrongSchemaIsMovedAsideAndEveryOtherRowSalvaged) {
  build_ledger();
  const std::string marks_before = sql(db_, "SELECT count(*) FROM marks");
  sql(db_, "DROP TABLE samples");
  expect_salvaged_and_durable("wrong schema: table samples is missing");
  // Nothing but the dropped table was lost: every mark came over (and the new run's two).
  EXPECT_EQ(std::stoi(sql(db_, "SELECT count(*) FROM marks")), std::stoi(marks_before) + 2);
}

TEST_F(CorruptLedger, CheckLedgerSalvagesOfflineAndRefusesWhileADaemonRuns) {
  build_ledger();
  sql(db_, "DROP TABLE samples");
  {
    auto d = start();  // salvages at its start; holds the lock
    const CommandResult busy = run_command({daemon_path(), "--check-ledger", state_.string()});
    EXPECT_EQ(busy.exit_code, 1) << busy.output;
    EXPECT_NE(busy.output.find("ledger lock"), std::string::npos) << busy.output;
  }
  for (const auto& p : moved_aside()) std::filesystem::remove(p);
  sql(db_, "DROP TABLE samples");
  const CommandResult fixed = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(fixed.exit_code, 2) << "the samples were lost\n" << fixed.output;
  EXPECT_NE(fixed.output.find("wrong schema: table samples is missing"), std::string::npos)
      << fixed.output;
  EXPECT_NE(fixed.output.find("moved aside to " + moved_aside().at(0).string()), std::string::npos)
      << fixed.output;
  EXPECT_NE(fixed.output.find(": salvaged, 2 runs, 1 reservations"), std::string::npos)
      << fixed.output;
  const CommandResult again = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find(": ok, 2 runs, 1 reservations"), std::string::npos) << again.output;
}

// A garbled header: SQLite refuses the whole file, page-level recovery reads every row back.
TEST_F(CorruptLedger, GarbledHeaderIsReadBackFromItsPages) {
  build_ledger();
  const std::string marks_before = sql(db_, "SELECT count(*) FROM marks");
  {
    std::fstream f(db_, std::ios::in | std::ios::out | std::ios::binary);
    const std::string garbage(100, '\x5A');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  const CommandResult checked = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("header garbled, size probed"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("nothing was lost"), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find(": salvaged, 2 runs, 1 reservations"), std::string::npos)
      << checked.output;
  EXPECT_EQ(sql(db_, "SELECT count(*) FROM marks"), marks_before);
}

// Zeroed pages of a table: their rows are lost, and --check-ledger says so with exit 2.
TEST_F(CorruptLedger, CheckLedgerExitsNonZeroWhenRowsWereLost) {
  build_ledger();
  zero_pages("marks");
  const CommandResult checked = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(checked.exit_code, 2) << checked.output;
  EXPECT_NE(checked.output.find("could not be salvaged"), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find("(incomplete)"), std::string::npos) << checked.output;
}

// The runs' pages zeroed: the reservation is back, but which runs were active is not known,
// so admission refuses for one lease and says why; then it admits again.
TEST_F(CorruptLedger, LostRunsHoldAdmissionForALease) {
  build_ledger();
  zero_pages("runs");
  auto d = start("admission:\n  lease: 3s\n");
  const std::string held = d->wait_for_log("event=admission.held_after_salvage");
  ASSERT_FALSE(held.empty()) << d->log_text();
  EXPECT_NE(held.find("may lack runs"), std::string::npos) << held;
  v1::Request status;
  status.mutable_status();
  EXPECT_EQ(d->call(status).status().reservations_size(), 1);
  v1::Request admit;
  admit.mutable_admit()->set_estimate_bytes(kGB);
  const v1::AdmitReply refused = d->call(admit).admit();
  EXPECT_FALSE(refused.admitted());
  EXPECT_NE(refused.reason().find("may lack runs"), std::string::npos) << refused.reason();
  EXPECT_TRUE(eventually([&] { return d->call(admit).admit().admitted(); }, 10s));
}

// Another application's database in the ledger's place: moved aside, nothing imported, said.
TEST_F(CorruptLedger, AnotherApplicationsDatabaseIsNotImported) {
  std::filesystem::create_directories(state_);
  sql(db_,
      "CREATE TABLE runs (run_id TEXT, job TEXT); INSERT INTO runs VALUES ('r', 'j');"
      "CREATE TABLE reservations (id TEXT);");
  const CommandResult checked = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(checked.exit_code, 2) << checked.output;
  EXPECT_NE(checked.output.find("not a ramguard ledger"), std::string::npos) << checked.output;
  EXPECT_NE(checked.output.find(": salvaged, 0 runs, 0 reservations"), std::string::npos)
      << checked.output;
  ASSERT_EQ(moved_aside().size(), 1u);
  EXPECT_EQ(sql(moved_aside()[0], "SELECT job FROM runs"), "j\n");
}

TEST_F(CorruptLedger, TheDaemonOnAnotherApplicationsDatabaseStartsFreshAndWaitsALease) {
  std::filesystem::create_directories(state_);
  sql(db_, "CREATE TABLE t (a TEXT, b INTEGER); INSERT INTO t VALUES ('x', 1);");
  auto d = start();
  const std::string said = d->wait_for_log("event=store.not_a_ledger");
  ASSERT_FALSE(said.empty()) << d->log_text();
  v1::Request admit;
  admit.mutable_admit()->set_estimate_bytes(kGB);
  const v1::AdmitReply refused = d->call(admit).admit();
  EXPECT_FALSE(refused.admitted());
  EXPECT_NE(refused.reason().find("another application's database"), std::string::npos)
      << refused.reason();
  EXPECT_EQ(sql(db_, "SELECT count(*) FROM runs"), "0\n");
}

// A 0-byte ledger starts a new one, and says so; what it held is not known, so admission
// waits a lease and --check-ledger exits 2.
TEST_F(CorruptLedger, AnEmptyLedgerFileIsSaid) {
  std::filesystem::create_directories(state_);
  std::ofstream(db_).close();
  {
    auto d = start();
    const std::string said = d->wait_for_log("event=store.ledger_empty");
    ASSERT_FALSE(said.empty()) << d->log_text();
    EXPECT_NE(said.find("level=warning"), std::string::npos) << said;
    v1::Request admit;
    admit.mutable_admit()->set_estimate_bytes(kGB);
    const v1::AdmitReply refused = d->call(admit).admit();
    EXPECT_FALSE(refused.admitted());
    EXPECT_NE(refused.reason().find("was empty (0 bytes)"), std::string::npos) << refused.reason();
  }
  std::filesystem::resize_file(db_, 0);
  std::filesystem::remove(db_.string() + "-wal");
  const CommandResult checked = run_command({daemon_path(), "--check-ledger", state_.string()});
  EXPECT_EQ(checked.exit_code, 2) << checked.output;
  EXPECT_NE(checked.output.find("empty (0 bytes)"), std::string::npos) << checked.output;
}

}  // namespace
}  // namespace ramguard::testing
