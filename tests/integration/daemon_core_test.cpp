// The daemon core: the real daemon watching a real process (RSS within one interval, a short
// spike caught by the high-water mark, exit noticed at once), bad PIDs and configuration,
// metrics, signals, and the daemon's own descriptors and memory under request churn.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard::testing {
namespace {

// A watched PID's series: ramguard_job and run_id are both "pid-<PID>".
std::string watched_labels(const std::string& name, pid_t pid) {
  const std::string id = "\"pid-" + std::to_string(pid) + "\"";
  return name + "{ramguard_job=" + id + ",run_id=" + id + "}";
}

constexpr std::uint64_t kMiB = 1ULL << 20;

std::uint64_t field(const std::string& line, const std::string& key) {
  const auto pos = line.find(" " + key + "=");
  if (pos == std::string::npos) return 0;
  return std::stoull(line.substr(pos + key.size() + 2));
}

// The number of watch.reading lines for `pid` so far.
std::size_t readings(const Daemon& d, pid_t pid) {
  std::size_t n = 0;
  for (const auto& l : d.log_lines()) {
    n += l.find("event=watch.reading pid=" + std::to_string(pid) + " ") != std::string::npos;
  }
  return n;
}

// The first watch.reading line for `pid` after the first `count` whose peak reaches
// `min_peak_bytes` (0: any), or "" at the timeout.
std::string reading_after(Daemon& d, pid_t pid, std::size_t count,
                          std::chrono::milliseconds timeout, std::uint64_t min_peak_bytes = 0) {
  std::string found;
  eventually(
      [&] {
        std::size_t n = 0;
        for (const auto& l : d.log_lines()) {
          if (l.find("event=watch.reading pid=" + std::to_string(pid) + " ") == std::string::npos)
            continue;
          if (++n > count && field(l, "peak_bytes") >= min_peak_bytes) {
            found = l;
            return true;
          }
        }
        return false;
      },
      timeout, 10ms);
  return found;
}

TEST(DaemonCore, RssFollowsTheChildWithinOneInterval) {
  MemChild child;
  auto d = Daemon::with_args({"--watch", std::to_string(child.pid()), "--log-level", "debug"});
  ASSERT_FALSE(reading_after(*d, child.pid(), 0, 5s).empty()) << d->log_text();
  child.command("alloc big " + std::to_string(256 * kMiB));
  const std::size_t before = readings(*d, child.pid());
  // The next periodic reading (at most one 2 s interval away) shows the allocation.
  const std::string grown = reading_after(*d, child.pid(), before, 2500ms);
  ASSERT_FALSE(grown.empty()) << d->log_text();
  EXPECT_GE(field(grown, "rss_bytes"), 256 * kMiB);
  EXPECT_GE(field(grown, "anon_bytes"), 256 * kMiB);
  child.command("free big");
  const std::string shrunk = reading_after(*d, child.pid(), readings(*d, child.pid()), 2500ms);
  ASSERT_FALSE(shrunk.empty());
  EXPECT_LT(field(shrunk, "rss_bytes"), 64 * kMiB);
  // The metric carries the same reading.
  const double rss =
      metric_value(d->scrape_metrics(), watched_labels("ramguard_target_rss_bytes", child.pid()));
  EXPECT_LT(rss, 64.0 * kMiB);
  EXPECT_GT(rss, 0.0);
}

// The largest rss_bytes among the watch.reading lines for `pid` numbered [from, to).
std::uint64_t max_sampled_rss(const Daemon& d, pid_t pid, std::size_t from, std::size_t to) {
  std::uint64_t max = 0;
  std::size_t n = 0;
  for (const auto& l : d.log_lines()) {
    if (l.find("event=watch.reading pid=" + std::to_string(pid) + " ") == std::string::npos)
      continue;
    if (n >= from && n < to) max = std::max(max, field(l, "rss_bytes"));
    ++n;
  }
  return max;
}

TEST(DaemonCore, ShortSpikeBetweenSamplesIsCaughtAtFullSizeByTheHighWaterMark) {
  MemChild child;
  // A watched PID's high-water mark is read every minute by default: 10 s keeps the test short.
  auto d = Daemon::with_config("sampling: { watch_peak_refresh: 10s }\n",
                               {"--watch", std::to_string(child.pid()), "--log-level", "debug"});
  const pid_t pid = child.pid();
  ASSERT_FALSE(reading_after(*d, pid, 0, 5s).empty());
  // A 300 ms spike right after a sample (default interval 2 s). The periodic samples may see part
  // of it while it is being touched, or (15% of the time) all of it; the test needs an attempt
  // where no sample saw it at full size, and then the high-water mark must have. Each attempt is
  // larger than the last because the exported peak only grows.
  bool missed_by_samples = false;
  for (int attempt = 0; attempt < 4 && !missed_by_samples; ++attempt) {
    const std::uint64_t spike_bytes = (256 + 32 * static_cast<std::uint64_t>(attempt)) * kMiB;
    const std::size_t before = readings(*d, pid);
    ASSERT_FALSE(reading_after(*d, pid, before, 3s).empty());
    const std::size_t first = readings(*d, pid);
    child.command("spike " + std::to_string(spike_bytes) + " 300");  // returns once freed
    const std::size_t during = readings(*d, pid);
    const std::string after = reading_after(*d, pid, during, 3s);
    ASSERT_FALSE(after.empty());
    if (max_sampled_rss(*d, pid, first, during + 1) >= spike_bytes) continue;
    missed_by_samples = true;
    // The high-water mark is read every sampling.watch_peak_refresh (10 s here, 5 samples):
    // one of the next readings carries the spike at full size, though no sample saw it.
    const std::string caught = reading_after(*d, pid, during, 12s, spike_bytes);
    EXPECT_FALSE(caught.empty()) << "no reading's peak reached the spike; last: " << after;
    const double peak =
        metric_value(d->scrape_metrics(), watched_labels("ramguard_target_peak_bytes", pid));
    EXPECT_GE(peak, static_cast<double>(spike_bytes));
  }
  EXPECT_TRUE(missed_by_samples) << "a periodic sample saw every spike at full size";
}

TEST(DaemonCore, ChildExitIsNoticedWithinASecond) {
  MemChild child;
  auto d = Daemon::with_args({"--watch", std::to_string(child.pid()), "--log-level", "debug"});
  ASSERT_FALSE(d->wait_for_log("event=watch.start").empty());
  const auto killed_at = std::chrono::steady_clock::now();
  child.kill(SIGKILL);
  const std::string exited =
      d->wait_for_log("event=watch.exited pid=" + std::to_string(child.pid()), 5s);
  const auto noticed = std::chrono::steady_clock::now() - killed_at;
  ASSERT_FALSE(exited.empty()) << d->log_text();
  EXPECT_LT(noticed, 1s);
  EXPECT_TRUE(d->running()) << "the daemon keeps running after its target exits";
}

TEST(DaemonCore, NonexistentPidIsReportedAndTheDaemonKeepsRunning) {
  auto d = Daemon::with_args({"--watch", "4000000"});
  const std::string failed = d->wait_for_log("event=watch.failed", 5s);
  ASSERT_FALSE(failed.empty()) << d->log_text();
  EXPECT_NE(failed.find("4000000"), std::string::npos);
  v1::Request hello;
  hello.mutable_hello();
  EXPECT_TRUE(d->call(hello).has_hello());
}

TEST(DaemonCore, CheckConfigStartupAndReloadRefuseAFitTheLeakDetectorCannotUse) {
  const auto dir = make_temp_dir("fitcfg");
  const auto bad = dir / "fit3.yaml";
  std::ofstream(bad) << "growth:\n  fit_rounds: 3\n";
  auto check = run_command({daemon_path(), "--check-config", bad.string()});
  EXPECT_EQ(check.exit_code, 1) << check.output;
  EXPECT_NE(check.output.find("growth.fit_rounds"), std::string::npos) << check.output;
  auto start = run_command({daemon_path(), "--config", bad.string(), "--socket",
                            (dir / "s.sock").string(), "--metrics", "127.0.0.1:0"});
  EXPECT_NE(start.exit_code, 0);
  EXPECT_NE(start.output.find("growth.fit_rounds"), std::string::npos) << start.output;
  const auto good = dir / "fit4.yaml";
  std::ofstream(good) << "growth:\n  fit_rounds: 4\n";
  auto ok = run_command({daemon_path(), "--check-config", good.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

TEST(DaemonCore, ABudgetUnder64MBIsAcceptedWithAWarningNamingTheUnitRules) {
  // "--budget 16" is 16 bytes: the daemon runs, and says so.
  auto d = Daemon::with_args({"--budget", "16"});
  EXPECT_FALSE(d->wait_for_log("event=config.small_budget", 5s).empty()) << d->log_text();
  EXPECT_NE(d->log_text().find("a size without a unit is bytes; write 16GB"), std::string::npos)
      << d->log_text();
  const auto dir = make_temp_dir("smallbudget");
  std::ofstream(dir / "small.yaml") << "budget: 16\n";
  auto check = run_command({daemon_path(), "--check-config", (dir / "small.yaml").string()});
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("warning: budget 16 bytes is under 64 MB"), std::string::npos)
      << check.output;
  std::ofstream(dir / "fine.yaml") << "budget: 16GB\n";
  auto fine = run_command({daemon_path(), "--check-config", (dir / "fine.yaml").string()});
  EXPECT_EQ(fine.output.find("warning"), std::string::npos) << fine.output;
  std::filesystem::remove_all(dir);
}

TEST(DaemonCore, BadConfigExitsNonZeroNamingTheKey) {
  const auto dir = make_temp_dir("badcfg");
  const auto path = dir / "bad.yaml";
  std::ofstream(path) << "growth:\n  min_bytes: 5 GBs\nsampling:\n  intervall: 2s\n";
  auto run = run_command({daemon_path(), "--config", path.string(), "--socket",
                          (dir / "s.sock").string(), "--metrics", "127.0.0.1:0"});
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("growth.min_bytes"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("5 GBs"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("intervall"), std::string::npos) << run.output;
  auto check = run_command({daemon_path(), "--check-config", path.string()});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.output.find("growth.min_bytes"), std::string::npos) << check.output;
  auto flag = run_command({daemon_path(), "--interval", "2parsecs"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.output.find("--interval"), std::string::npos) << flag.output;
  std::filesystem::remove_all(dir);
}

TEST(DaemonCore, MetricsPassPromtoolWithoutWarnings) {
  MemChild child;
  child.command("alloc a " + std::to_string(64 * kMiB));
  auto d = Daemon::with_args({"--watch", std::to_string(child.pid()), "--log-level", "debug"});
  ASSERT_FALSE(reading_after(*d, child.pid(), 0, 5s).empty());
  const std::string scrape = d->scrape_metrics();
  EXPECT_EQ(metric_value(scrape, "ramguard_budget_bytes"), 16e9) << scrape;
  EXPECT_GE(metric_value(scrape, watched_labels("ramguard_target_rss_bytes", child.pid())),
            64.0 * kMiB);
  EXPECT_GT(metric_value(scrape, "ramguard_self_rss_bytes"), 0.0);
  const auto check = testkit::promtool_check_metrics(scrape);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_EQ(check.output, "") << check.output;
}

TEST(DaemonCore, SighupWithABadFileKeepsTheRunningConfiguration) {
  auto d = Daemon::with_config("budget: 8GB\n");
  v1::Request hello;
  hello.mutable_hello();
  ASSERT_EQ(d->call(hello).hello().budget_bytes(), 8'000'000'000ULL);
  const auto config = std::filesystem::path(d->socket_path()).parent_path() / "ramguard.yaml";
  std::ofstream(config) << "budget: -3GB\n";
  ::kill(d->pid(), SIGHUP);
  const std::string rejected = d->wait_for_log("event=config.reload_rejected");
  ASSERT_FALSE(rejected.empty()) << d->log_text();
  EXPECT_NE(rejected.find("budget"), std::string::npos);
  EXPECT_EQ(d->call(hello).hello().budget_bytes(), 8'000'000'000ULL);
  std::ofstream(config) << "budget: 12GiB\n";
  ::kill(d->pid(), SIGHUP);
  ASSERT_FALSE(d->wait_for_log("event=config.reloaded").empty());
  EXPECT_EQ(d->call(hello).hello().budget_bytes(), 12ULL << 30);
}

TEST(DaemonCore, SigtermStopsCleanlyAndRemovesTheSocket) {
  auto d = Daemon::with_args({});
  ASSERT_TRUE(std::filesystem::exists(d->socket_path()));
  const int status = d->signal_and_wait(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(std::filesystem::exists(d->socket_path()));
}

std::size_t open_fds(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

std::uint64_t rss_of(pid_t pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// earlyoom-style: the guard must never be the leak. Connection churn, bad requests and status
// calls leave its descriptors and memory where they were.
TEST(DaemonCore, OwnDescriptorsAndMemoryStayFlatUnderRequestChurn) {
  auto d = Daemon::with_args({});
  v1::Request status;
  status.mutable_status();
  for (int i = 0; i < 200; ++i) (void)d->call(status);
  const std::size_t fds_before = open_fds(d->pid());
  const std::uint64_t rss_before = rss_of(d->pid());
  for (int i = 0; i < 2000; ++i) {
    (void)d->call(status);
    (void)d->request_line("garbage " + std::to_string(i));
  }
  // A session's socket closes just after its client's: give the last one a moment.
  EXPECT_TRUE(eventually([&] { return open_fds(d->pid()) <= fds_before; }, 2s))
      << open_fds(d->pid()) << " descriptors, " << fds_before << " before";
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's quarantine holds freed memory (hundreds of MB) by design, so RSS says
  // nothing here; LeakSanitizer checks the daemon at exit instead (below).
  (void)rss_before;
#else
  EXPECT_LT(rss_of(d->pid()), rss_before + 8 * kMiB)
      << "before " << rss_before << " after " << rss_of(d->pid());
#endif
  const int exit_status = d->signal_and_wait(SIGTERM);
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0)
      << "exit status " << exit_status;
}

}  // namespace
}  // namespace ramguard::testing
