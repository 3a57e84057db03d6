// One daemon per ledger: a second ramguardd on the same state directory exits non-zero at
// once naming the lock file and the holder's PID, and touches nothing; a daemon refused for a
// busy socket has not run recovery against its ledger (startup order: lock, socket, recovery).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

std::string run_state(const std::filesystem::path& state_dir) {
  const CommandResult r = run_command({"/usr/bin/sqlite3", (state_dir / "ramguard.db").string(),
                                       "SELECT group_concat(state) FROM runs"});
  return r.output;
}

TEST(LedgerLock, SecondDaemonOnTheSameStateDirExitsAtOnceNamingTheLock) {
  auto first = Daemon::with_args({});
  const auto lock = first->state_dir() / "ramguard.lock";
  ASSERT_TRUE(std::filesystem::exists(lock));
  std::string pid_text;
  std::ifstream(lock) >> pid_text;
  EXPECT_EQ(pid_text, std::to_string(first->pid())) << "the holder writes its PID";

  const auto dir = make_temp_dir("second");
  const auto started = std::chrono::steady_clock::now();
  const CommandResult second =
      run_command({daemon_path(), "--socket", (dir / "other.sock").string(), "--state-dir",
                   first->state_dir().string(), "--metrics", "127.0.0.1:0"},
                  std::chrono::seconds(20));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_LT(seconds, 5.0) << "refused at once, not after a timeout";
  EXPECT_NE(second.output.find("holds the ledger lock " + lock.string()), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("(pid " + std::to_string(first->pid()) + ")"), std::string::npos)
      << second.output;
  EXPECT_EQ(second.output.find("daemon.ready"), std::string::npos) << second.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "other.sock")) << "it never listened";
  // The first daemon is unharmed and still answers.
  v1::Request hello;
  hello.mutable_hello();
  EXPECT_TRUE(first->call(hello).has_hello());
  std::filesystem::remove_all(dir);
}

TEST(LedgerLock, TheLockIsFreedWhenTheHolderDiesEvenByKill9) {
  const auto state = make_temp_dir("lock-state");
  {
    Daemon::Options o;
    o.state_dir = state;
    auto d = Daemon::start(o);
    d->kill_hard();
  }
  Daemon::Options o;
  o.state_dir = state;
  auto d = Daemon::start(o);  // throws if it did not become ready
  EXPECT_TRUE(d->running());
  std::filesystem::remove_all(state);
}

TEST(LedgerLock, DaemonRefusedForABusySocketRunsNoRecovery) {
  // A ledger with an active run whose process is gone: recovery would end it `lost`.
  const auto state = make_temp_dir("orphan-state");
  {
    MemChild child;
    Daemon::Options o;
    o.state_dir = state;
    auto d = Daemon::start(o);
    v1::Request start;
    start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
    ASSERT_TRUE(d->call(start).has_run_start());
    d->kill_hard();
  }  // the child is gone too
  ASSERT_EQ(run_state(state), "active\n");

  auto busy = Daemon::with_args({});  // owns the socket the next daemon asks for
  const CommandResult refused =
      run_command({daemon_path(), "--socket", busy->socket_path().string(), "--state-dir",
                   state.string(), "--metrics", "127.0.0.1:0"},
                  std::chrono::seconds(20));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_NE(refused.output.find("another daemon answers on control socket"), std::string::npos)
      << refused.output;
  EXPECT_EQ(refused.output.find("recovery."), std::string::npos) << refused.output;
  EXPECT_EQ(run_state(state), "active\n") << "recovery did not run against the ledger";

  // A daemon that does get the socket recovers it as usual.
  Daemon::Options o;
  o.state_dir = state;
  auto d = Daemon::start(o);
  EXPECT_FALSE(d->wait_for_log("event=recovery.lost").empty()) << d->log_text();
  std::filesystem::remove_all(state);
}

}  // namespace
}  // namespace ramguard::testing
