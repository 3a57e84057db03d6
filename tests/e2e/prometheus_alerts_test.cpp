// The shipped alert rules, evaluated by a real Prometheus scraping the real ramguardd every
// second, against real runs of real processes: each verdict's alert fires when its condition
// happens, none fires for a healthy run, and none of the live alerts for a process that died.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "prometheus_server.hpp"
#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kBudget = 256 * kMiB;

// Alerts about a process that is alive now: none of them may fire about a dead one.
const std::set<std::string> kLiveAlerts = {"RamguardTargetOverBudget",
                                           "RamguardHeadroomLow",
                                           "RamguardTargetUnreadable",
                                           "RamguardMeasurementDegraded",
                                           "RamguardRunOverBudget",
                                           "RamguardRunHeadroomLow",
                                           "RamguardRunaway",
                                           "RamguardGrowthWarning",
                                           "RamguardLeak"};

std::string daemon_config() {
  std::ostringstream y;
  y << "budget: " << kBudget << "\nmetrics: { job_names: plain }\n"
    << "sampling:\n  interval: 100ms\n"
    << "growth:\n  min_bytes: 8MB\n  settle: 300ms\n"
    << "  runaway_bytes_per_second: 20MB\n  runaway_min_duration: 2s\n"
    << "release:\n  slack: 16MB\n  grace: 3s\n"
    << "phase_gaps:\n  - { from: aggregation.end, to: synchronization.begin, max: 1s }\n";
  return y.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Polls /api/v1/alerts twice a second and remembers every (alert, job) seen, by state.
class AlertLog {
 public:
  explicit AlertLog(const PrometheusServer& prometheus) : prometheus_(prometheus) {
    thread_ = std::thread([this] {
      while (!stop_) {
        try {
          auto now = prometheus_.alerts();
          std::lock_guard lock(mutex_);
          current_ = now;
          for (const auto& a : now) {
            seen_.insert({a.name, a.labels.count("ramguard_job") ? a.labels.at("ramguard_job") : "",
                          a.state});
          }
        } catch (const std::exception& e) {
          std::lock_guard lock(mutex_);
          errors_ += std::string(e.what()) + "\n";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  ~AlertLog() {
    stop_ = true;
    thread_.join();
  }
  bool seen(const std::string& alert, const std::string& job, const std::string& state) {
    std::lock_guard lock(mutex_);
    return seen_.count({alert, job, state}) != 0;
  }
  bool fired(const std::string& alert, const std::string& job) {
    return seen(alert, job, "firing");
  }
  // Alerts of `job` now active (pending or firing) whose name is in `names`.
  std::vector<std::string> active_for(const std::string& job, const std::set<std::string>& names) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& a : current_) {
      auto it = a.labels.find("ramguard_job");
      if (it != a.labels.end() && it->second == job && names.count(a.name) != 0) {
        out.push_back(a.name + "(" + a.state + ")");
      }
    }
    return out;
  }
  // Everything ever seen for `job`, for messages and for the healthy run.
  std::vector<std::string> ever_for(const std::string& job) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, j, state] : seen_) {
      if (j == job) out.push_back(name + "(" + state + ")");
    }
    return out;
  }
  std::string text() {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& [name, job, state] : seen_) out += name + "{" + job + "} " + state + "\n";
    return out + errors_;
  }

 private:
  const PrometheusServer& prometheus_;
  std::mutex mutex_;
  std::vector<ActiveAlert> current_;
  std::set<std::tuple<std::string, std::string, std::string>> seen_;
  std::string errors_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + " ";
  return out;
}

TEST(PrometheusAlerts, EveryVerdictFiresItsAlertAndNoneForHealthyOrDeadProcesses) {
  Daemon::Options options;
  options.config_yaml = daemon_config();
  options.args = {"--log-level", "debug"};
  auto daemon = Daemon::start(std::move(options));
  const std::string rules = rules_with_short_for(read_file(RAMGUARD_RULES_FILE), 1);
  ASSERT_NE(rules.find("RamguardRunOverBudget"), std::string::npos);
  PrometheusServer prometheus(daemon->metrics_port(), rules);
  AlertLog alerts(prometheus);

  // Two healthy runs of one job, and one of each trouble.
  MemChild healthy_a, healthy_b, over, dead, leaky_child, release_child, gappy_child, runaway_child;
  for (MemChild* c : {&healthy_a, &healthy_b})
    c->command("alloc base " + std::to_string(32 * kMiB));
  ScenarioRun healthy_run_a(*daemon, healthy_a.pid(), ScenarioRun::with("healthy"));
  ScenarioRun healthy_run_b(*daemon, healthy_b.pid(), ScenarioRun::with("healthy"));
  ScenarioRun over_run(*daemon, over.pid(), ScenarioRun::with("over"));
  ScenarioRun dead_run(*daemon, dead.pid(), ScenarioRun::with("dead"));
  ScenarioRun leaky_run(*daemon, leaky_child.pid(), ScenarioRun::with("leaky"));
  ScenarioRun release_run(*daemon, release_child.pid(), ScenarioRun::with("release"));
  ScenarioRun gappy_run(*daemon, gappy_child.pid(), ScenarioRun::with("gappy"));
  ScenarioRun runaway_run(*daemon, runaway_child.pid(), ScenarioRun::with("runaway"));

  over.command("alloc big " + std::to_string(320 * kMiB));
  dead.command("alloc big " + std::to_string(320 * kMiB));
  release_child.command("alloc held " + std::to_string(64 * kMiB));
  release_run.finish();  // 64 MiB above the baseline stay: fails after the 3 s grace
  gappy_run.begin("aggregation");
  gappy_run.end("aggregation");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  gappy_run.begin("synchronization");  // 1.5 s after aggregation.end: over the 1 s rule
  gappy_run.end("synchronization");
  for (ScenarioRun* h : {&healthy_run_a, &healthy_run_b}) {
    h->begin("aggregation");
    h->end("aggregation");
    h->begin("synchronization");
    h->end("synchronization");
    h->round_end();
  }
  // 40 MB/s for 3 s within one round, no plan: runaway.
  runaway_run.begin("aggregation");
  for (int i = 0; i < 30; ++i) {
    runaway_child.command("alloc r" + std::to_string(i) + " " + std::to_string(4 * kMiB));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // A floor rising 12 MiB every round: a growth warning, then a leak.
  Shaper shaper(leaky_child);
  for (int r = 0; r < 6; ++r) {
    const std::uint64_t floor = shaper.base_bytes() + static_cast<std::uint64_t>(r) * 12 * kMiB;
    leaky_run.round(shaper, floor + 8 * kMiB, floor);
  }

  auto fires = [&](const std::string& alert, const std::string& job) {
    return eventually([&] { return alerts.fired(alert, job); }, std::chrono::seconds(30),
                      std::chrono::milliseconds(250));
  };
  EXPECT_TRUE(fires("RamguardTargetOverBudget", "over")) << alerts.text();
  EXPECT_TRUE(fires("RamguardRunOverBudget", "over")) << alerts.text();
  EXPECT_TRUE(fires("RamguardHeadroomLow", "over")) << alerts.text();
  EXPECT_TRUE(fires("RamguardReleaseFailed", "release")) << alerts.text();
  EXPECT_TRUE(fires("RamguardPhaseGapExceeded", "gappy")) << alerts.text();
  EXPECT_TRUE(fires("RamguardRunaway", "runaway")) << alerts.text();
  EXPECT_TRUE(fires("RamguardGrowthWarning", "leaky")) << alerts.text();
  EXPECT_TRUE(fires("RamguardLeak", "leaky")) << alerts.text();

  // The dead process: over budget and alerted while alive ...
  ASSERT_TRUE(fires("RamguardTargetOverBudget", "dead")) << alerts.text();
  ASSERT_TRUE(fires("RamguardRunOverBudget", "dead")) << alerts.text();
  // ... killed: the daemon says so in its own series within a second, not at the next scrape.
  const std::string up =
      "ramguard_target_up{ramguard_job=\"dead\",run_id=\"" + dead_run.id() + "\"}";
  const std::string rss =
      "ramguard_target_rss_bytes{ramguard_job=\"dead\",run_id=\"" + dead_run.id() + "\"}";
  EXPECT_EQ(metric_value(daemon->scrape_metrics(), up), 1.0);
  const auto killed_at = std::chrono::steady_clock::now();
  dead.kill(SIGKILL);
  dead.wait();
  EXPECT_TRUE(eventually([&] { return metric_value(daemon->scrape_metrics(), up) == 0.0; },
                         std::chrono::seconds(1), std::chrono::milliseconds(20)))
      << daemon->scrape_metrics();
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(1));
  EXPECT_TRUE(std::isnan(metric_value(daemon->scrape_metrics(), rss)));
  // Its exit alerts; every live alert about it resolves and stays resolved.
  EXPECT_TRUE(fires("RamguardCoordinatorExited", "dead")) << alerts.text();
  EXPECT_TRUE(eventually([&] { return alerts.active_for("dead", kLiveAlerts).empty(); },
                         std::chrono::seconds(10), std::chrono::milliseconds(250)))
      << join(alerts.active_for("dead", kLiveAlerts));
  for (int i = 0; i < 10; ++i) {  // longer than the 1 s `for:` of every live alert
    EXPECT_TRUE(alerts.active_for("dead", kLiveAlerts).empty())
        << join(alerts.active_for("dead", kLiveAlerts));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_FALSE(alerts.seen("RamguardTargetUnreadable", "dead", "pending"));
  EXPECT_FALSE(alerts.seen("RamguardTargetUnreadable", "dead", "firing"));

  // Healthy: two runs of one job are two series, and nothing ever alerted about them, also
  // after one of them ended normally (its release passes).
  EXPECT_EQ(prometheus.series_count("ramguard_target_up{ramguard_job=\"healthy\"}"), 2u);
  healthy_run_a.finish();
  std::this_thread::sleep_for(std::chrono::seconds(5));  // > release grace + scrape + eval
  EXPECT_TRUE(alerts.ever_for("healthy").empty()) << join(alerts.ever_for("healthy"));
  EXPECT_EQ(
      prometheus.series_count(
          "ramguard_verdicts_total{ramguard_job=\"healthy\",kind=\"release\",severity=\"pass\"}"),
      1u);
}

}  // namespace
}  // namespace ramguard::testing
