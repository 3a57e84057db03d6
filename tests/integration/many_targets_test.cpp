// A thousand watched processes: every one has its own series, or is counted as folded into
// "other" past metrics.max_targets (and the daemon says so in its log). Never silent.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness.hpp"

extern char** environ;

namespace ramguard::testing {
namespace {

constexpr int kTargets = 1000;

// Real sleeping processes, killed and reaped at the end.
class Sleepers {
 public:
  explicit Sleepers(int n) {
    for (int i = 0; i < n; ++i) {
      char sleep[] = "sleep";
      char seconds[] = "600";
      char* argv[] = {sleep, seconds, nullptr};
      pid_t pid = -1;
      if (posix_spawnp(&pid, "sleep", nullptr, nullptr, argv, environ) == 0) pids_.push_back(pid);
    }
  }
  ~Sleepers() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  std::vector<pid_t> pids_;
};

std::string config_watching(const std::vector<pid_t>& pids, const std::string& extra) {
  std::string yaml = "sampling: { interval: 200ms }\n" + extra + "watch:\n";
  for (pid_t pid : pids) yaml += "  - " + std::to_string(pid) + "\n";
  return yaml;
}

// Watched targets with their own RSS series (label run_id="pid-N").
int own_series(const std::string& scrape) {
  int n = 0;
  std::size_t pos = 0;
  while ((pos = scrape.find("\nramguard_target_rss_bytes{", pos)) != std::string::npos) {
    const std::size_t end = scrape.find('\n', pos + 1);
    n += scrape.substr(pos, end - pos).find("run_id=\"pid-") != std::string::npos;
    pos = end;
  }
  return n;
}

TEST(ManyTargets, AThousandWatchedProcessesEachHaveTheirOwnSeriesByDefault) {
  Sleepers sleepers(kTargets);
  ASSERT_EQ(sleepers.pids().size(), static_cast<std::size_t>(kTargets));
  auto d = Daemon::with_config(config_watching(sleepers.pids(), ""));
  std::string scrape;
  EXPECT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        return own_series(scrape) == kTargets;
      },
      20s, 200ms))
      << own_series(scrape) << " of " << kTargets << " targets have series";
  EXPECT_EQ(metric_value(scrape, "ramguard_metrics_targets_folded"), 0.0);
  EXPECT_EQ(metric_value(scrape, "ramguard_metrics_max_targets"), 1024.0);
}

TEST(ManyTargets, PastTheBoundTargetsAreCountedAsFoldedAndLogged) {
  Sleepers sleepers(kTargets);
  ASSERT_EQ(sleepers.pids().size(), static_cast<std::size_t>(kTargets));
  auto d = Daemon::with_config(
      config_watching(sleepers.pids(), "metrics: { listen: \"127.0.0.1:0\", max_targets: 600 }\n"));
  std::string scrape;
  EXPECT_TRUE(eventually(
      [&] {
        scrape = d->scrape_metrics();
        return own_series(scrape) + metric_value(scrape, "ramguard_metrics_targets_folded") ==
               kTargets;
      },
      20s, 200ms))
      << own_series(scrape) << " own + " << metric_value(scrape, "ramguard_metrics_targets_folded")
      << " folded";
  EXPECT_EQ(own_series(scrape), 600);
  EXPECT_EQ(metric_value(scrape, "ramguard_metrics_targets_folded"), 400.0);
  EXPECT_FALSE(std::isnan(
      metric_value(scrape, "ramguard_target_rss_bytes{ramguard_job=\"other\",run_id=\"other\"}")))
      << "the folded targets share the series labelled other";
  const std::string logged = d->wait_for_log("event=metrics.targets_folded folded=256", 5s);
  EXPECT_NE(logged.find("max_targets=600"), std::string::npos) << logged;
}

}  // namespace
}  // namespace ramguard::testing
