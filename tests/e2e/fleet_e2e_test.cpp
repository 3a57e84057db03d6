// A fleet, end to end with real servers on 127.0.0.1: two real ramguardd labelled node-a and
// node-b, scraped by one real Prometheus that evaluates the shipped rules and sends alerts to a
// real Alertmanager configured as shipped, which delivers to a webhook receiver run here.
// - a job measured on node A is admitted on node B with A's peak (fleet calibration);
// - with Prometheus stopped, or not answering, B admits from its own ledger, promptly, and
//   keeps serving other requests meanwhile;
// - the fleet recording rules hold for both nodes;
// - alerts arrive routed by severity, grouped by node and job, warnings inhibited by the
//   critical verdicts of the same run, and none for a healthy run.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "alertmanager_server.hpp"
#include "prometheus_server.hpp"
#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::AdmitReply admit(const Daemon& daemon, const std::string& job) {
  v1::Request request;
  request.mutable_admit()->set_job(job);
  request.mutable_admit()->set_estimate_bytes(1'000'000);  // a declared guess ...
  request.mutable_admit()->set_use_calibrated(true);       // ... the measurement wins
  v1::Reply reply = daemon.call(request);
  if (reply.has_error()) throw std::runtime_error("admit: " + reply.error().message());
  return reply.admit();
}

// A finished run of `job` whose peak is about `bytes`; returns the measured peak.
std::uint64_t measured_run(Daemon& daemon, const std::string& job, std::uint64_t bytes) {
  MemChild child;
  ScenarioRun run(daemon, child.pid(), ScenarioRun::with(job));
  run.begin("aggregation");
  child.command("alloc model " + std::to_string(bytes));
  run.end("aggregation");
  child.command("free model");
  return run.finish().peak_bytes();
}

// A port that accepts connections (the kernel's backlog) and never answers: a hung endpoint.
class SilentListener {
 public:
  explicit SilentListener(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(port));
    }
  }
  ~SilentListener() { ::close(fd_); }

 private:
  int fd_ = -1;
};

std::string node_config(const std::string& extra) {
  return "budget: 4GB\nmetrics: { job_names: plain }\nsampling:\n  interval: 100ms\n" + extra;
}

TEST(Fleet, NodeBAdmitsWithNodeAsPeakAndFallsBackToItsLedgerWhenPrometheusIsGone) {
  const std::uint16_t prometheus_port = free_loopback_port();
  auto node_a = Daemon::with_config(node_config(""));
  // B asks the fleet at every admission (cache_ttl 0) with a timeout well under a second.
  auto node_b = Daemon::with_config(
      node_config("admission:\n  history:\n    prometheus_url: http://127.0.0.1:" +
                  std::to_string(prometheus_port) + "\n    timeout: 800ms\n    cache_ttl: 0s\n"));
  PrometheusOptions options;
  options.port = prometheus_port;
  options.targets = {{node_a->metrics_port(), {{"node", "node-a"}}},
                     {node_b->metrics_port(), {{"node", "node-b"}}}};
  options.rule_files_yaml = {read_file(RAMGUARD_FLEET_RULES_FILE)};
  PrometheusServer prometheus(options);

  // B has never seen the job: its declared guess stands.
  const std::string job = "fedavg-fleet";
  v1::AdmitReply first = admit(*node_b, job);
  EXPECT_EQ(first.estimate_source(), "given") << first.reason();

  // The job runs on node A; every node's Prometheus series now carry its peak.
  const std::uint64_t peak_a = measured_run(*node_a, job, 96 * kMiB);
  ASSERT_GT(peak_a, 96 * kMiB);
  ASSERT_TRUE(eventually(
      [&] {
        return prometheus.series_count("ramguard_job_peak_bytes{ramguard_job=\"" + job +
                                       "\",node=\"node-a\"}") == 1;
      },
      std::chrono::seconds(15), std::chrono::milliseconds(200)))
      << node_a->scrape_metrics();

  // Its first admission on node B uses A's measured peak, and says so.
  v1::AdmitReply fleet = admit(*node_b, job);
  EXPECT_TRUE(fleet.admitted()) << fleet.reason();
  EXPECT_EQ(fleet.estimate_source(), "calibrated:fleet:node-a") << fleet.reason();
  EXPECT_EQ(fleet.estimate_bytes(),
            static_cast<std::uint64_t>(std::ceil(static_cast<double>(peak_a) * 1.1)))
      << fleet.reason();
  EXPECT_NE(fleet.reason().find("calibrated: fleet peak"), std::string::npos) << fleet.reason();
  EXPECT_NE(fleet.reason().find("over 30 d, node-a"), std::string::npos) << fleet.reason();
  std::cout << "node-b: " << fleet.reason() << "\n";

  // The fleet views: both nodes' headroom, the job's peak on record.
  EXPECT_TRUE(
      eventually([&] { return prometheus.series_count("ramguard:node_headroom_bytes") == 2; },
                 std::chrono::seconds(10), std::chrono::milliseconds(200)))
      << prometheus.query("ramguard:node_headroom_bytes");
  EXPECT_TRUE(eventually(
      [&] {
        return prometheus.series_count("ramguard:job_peak_bytes:max30d{ramguard_job=\"" + job +
                                       "\"}") == 1;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(200)));

  // Prometheus stops. B measures the job itself and admits from its own ledger, saying the
  // fleet could not be asked (connection refused: no wait).
  prometheus.stop();
  const std::uint64_t peak_b = measured_run(*node_b, job, 48 * kMiB);
  const auto refused_at = std::chrono::steady_clock::now();
  v1::AdmitReply local = admit(*node_b, job);
  const auto refused_took = std::chrono::steady_clock::now() - refused_at;
  EXPECT_TRUE(local.estimate_source().starts_with("calibrated:r")) << local.reason();
  EXPECT_EQ(local.estimate_bytes(),
            static_cast<std::uint64_t>(std::ceil(static_cast<double>(peak_b) * 1.1)))
      << local.reason();
  EXPECT_NE(local.reason().find("fleet history unavailable ("), std::string::npos)
      << local.reason();
  EXPECT_NE(local.reason().find("): local history only"), std::string::npos) << local.reason();
  EXPECT_LT(refused_took, std::chrono::seconds(3)) << local.reason();

  // An endpoint that accepts and never answers: the admission waits at most the timeout, and
  // meanwhile B serves another connection (the event loop never waits on Prometheus).
  SilentListener hung(prometheus_port);
  std::atomic<bool> admitted{false};
  v1::AdmitReply slow;
  const auto hung_at = std::chrono::steady_clock::now();
  std::thread admitting([&] {
    slow = admit(*node_b, job);
    admitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the admission is waiting
  v1::Request status;
  status.mutable_status();
  EXPECT_FALSE(node_b->call(status).has_error());
  EXPECT_FALSE(admitted.load()) << "the status reply came after the admission's";
  admitting.join();
  const auto hung_took = std::chrono::steady_clock::now() - hung_at;
  EXPECT_TRUE(slow.estimate_source().starts_with("calibrated:r")) << slow.reason();
  EXPECT_NE(slow.reason().find("timed out after 800ms): local history only"), std::string::npos)
      << slow.reason();
  EXPECT_LT(hung_took, std::chrono::seconds(3)) << slow.reason();
}

// The job's history is the ledger's: a restarted node exports it before the job runs again.
TEST(FleetJobSeries, ARestartedNodeExportsItsJobsPeakFromTheLedger) {
  Daemon::Options options;
  options.config_yaml = node_config("");
  options.state_dir = make_temp_dir("fleet-ledger");
  auto node = Daemon::start(options);
  const std::uint64_t peak = measured_run(*node, "restarted-job", 32 * kMiB);
  const std::string series = "ramguard_job_peak_bytes{ramguard_job=\"restarted-job\",uid=\"" +
                             std::to_string(::getuid()) + "\"}";
  EXPECT_EQ(metric_value(node->scrape_metrics(), series), static_cast<double>(peak));
  ASSERT_EQ(node->signal_and_wait(SIGTERM), 0);
  node.reset();

  auto restarted = Daemon::start(options);
  const std::string scrape = restarted->scrape_metrics();
  EXPECT_EQ(metric_value(scrape, series), static_cast<double>(peak)) << scrape;
  EXPECT_EQ(metric_value(scrape, "ramguard_job_runs{ramguard_job=\"restarted-job\",uid=\"" +
                                     std::to_string(::getuid()) + "\"}"),
            1.0)
      << scrape;
  restarted.reset();
  std::error_code ignored;
  std::filesystem::remove_all(options.state_dir, ignored);
}

// Alerts of `job` delivered firing, as "alertname@path".
std::set<std::string> delivered(const WebhookReceiver& receiver, const std::string& job) {
  std::set<std::string> out;
  for (const auto& a : receiver.alerts()) {
    auto it = a.labels.find("ramguard_job");
    if (a.status == "firing" && it != a.labels.end() && it->second == job) {
      out.insert(a.labels.at("alertname") + "@" + a.receiver_path);
    }
  }
  return out;
}

TEST(FleetAlerts, ShippedRulesReachTheReceiverRoutedGroupedAndInhibited) {
  WebhookReceiver receiver;
  // The shipped routes, groups and inhibitions; only the receiver's address and the waits
  // (30 s, 5 m) are the test's.
  AlertmanagerServer alertmanager(alertmanager_config_for_test(
      read_file(RAMGUARD_ALERTMANAGER_CONFIG), receiver.port(), "6s", "3s"));
  std::ostringstream config;
  config << "budget: " << 256 * kMiB
         << "\nmetrics: { job_names: plain }\nsampling:\n  interval: 100ms\n"
         << "growth:\n  min_bytes: 8MB\n  settle: 300ms\n";
  auto node =
      Daemon::with_config(config.str(), {"--log-level", "debug"});  // rounds settle in the log
  PrometheusOptions options;
  options.targets = {{node->metrics_port(), {{"node", "node-a"}}}};
  // The shipped alert rules, every `for:` shortened to 1 s (the expressions are the shipped ones).
  options.rule_files_yaml = {rules_with_short_for(read_file(RAMGUARD_RULES_FILE), 1),
                             read_file(RAMGUARD_FLEET_RULES_FILE)};
  options.alertmanager = "127.0.0.1:" + std::to_string(alertmanager.port());
  PrometheusServer prometheus(options);

  MemChild healthy_child, over_child, leaky_child;
  healthy_child.command("alloc base " + std::to_string(32 * kMiB));
  ScenarioRun healthy(*node, healthy_child.pid(), ScenarioRun::with("healthy"));
  ScenarioRun over(*node, over_child.pid(), ScenarioRun::with("over"));
  ScenarioRun leaky(*node, leaky_child.pid(), ScenarioRun::with("leaky"));
  healthy.begin("aggregation");
  healthy.end("aggregation");
  healthy.round_end();
  // Over the budget: critical (TargetOverBudget, RunOverBudget) and, above 90%, warnings
  // (HeadroomLow) of the same run, which the critical ones inhibit.
  over_child.command("alloc big " + std::to_string(320 * kMiB));
  // A floor rising 12 MiB every round: a growth warning, then a leak that inhibits it.
  Shaper shaper(leaky_child);
  for (int r = 0; r < 6; ++r) {
    const std::uint64_t floor = shaper.base_bytes() + static_cast<std::uint64_t>(r) * 12 * kMiB;
    leaky.round(shaper, floor + 8 * kMiB, floor);
  }

  const std::set<std::string> over_expected = {"RamguardTargetOverBudget@/critical",
                                               "RamguardRunOverBudget@/critical"};
  auto has_all = [&](const std::string& job, const std::set<std::string>& want) {
    const auto got = delivered(receiver, job);
    for (const auto& w : want) {
      if (!got.count(w)) return false;
    }
    return true;
  };
  ASSERT_TRUE(eventually([&] { return has_all("over", over_expected); }, std::chrono::seconds(40),
                         std::chrono::milliseconds(250)))
      << receiver.text() << alertmanager.log();
  ASSERT_TRUE(eventually([&] { return has_all("leaky", {"RamguardLeak@/critical"}); },
                         std::chrono::seconds(30), std::chrono::milliseconds(250)))
      << receiver.text();
  // The warnings did fire in Prometheus: the inhibition, not their absence, kept them quiet.
  auto firing_in_prometheus = [&](const std::string& name, const std::string& job) {
    for (const auto& a : prometheus.alerts()) {
      if (a.name == name && a.labels.count("ramguard_job") && a.labels.at("ramguard_job") == job &&
          a.state == "firing") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(eventually([&] { return firing_in_prometheus("RamguardHeadroomLow", "over"); },
                         std::chrono::seconds(10), std::chrono::milliseconds(250)));
  // The growth warning holds beside the leak in Prometheus (same run): inhibited, not absent.
  EXPECT_TRUE(eventually(
      [&] {
        return prometheus.series_count(
                   "max_over_time((ALERTS{alertname=\"RamguardGrowthWarning\",alertstate="
                   "\"firing\","
                   "ramguard_job=\"leaky\"} and on (instance, run_id) "
                   "ALERTS{alertname=\"RamguardLeak\",alertstate=\"firing\"})[5m:1s])") == 1;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(500)))
      << prometheus.query("ALERTS{ramguard_job=\"leaky\"}");
  // Two group intervals more for anything late to arrive.
  std::this_thread::sleep_for(std::chrono::seconds(6));

  const auto over_got = delivered(receiver, "over");
  EXPECT_FALSE(over_got.count("RamguardHeadroomLow@/warning")) << receiver.text();
  EXPECT_FALSE(over_got.count("RamguardRunHeadroomLow@/warning")) << receiver.text();
  const auto leaky_got = delivered(receiver, "leaky");
  EXPECT_FALSE(leaky_got.count("RamguardGrowthWarning@/warning")) << receiver.text();
  EXPECT_TRUE(delivered(receiver, "healthy").empty()) << receiver.text();

  // Grouped by node and job: one notification carries both critical alerts of "over", and its
  // group is (node-a, over).
  bool grouped = false;
  for (const auto& a : receiver.alerts()) {
    if (a.labels.count("ramguard_job") == 0 || a.labels.at("ramguard_job") != "over") continue;
    EXPECT_EQ(a.group_labels.count("node") ? a.group_labels.at("node") : "", "node-a");
    EXPECT_EQ(a.group_labels.count("ramguard_job") ? a.group_labels.at("ramguard_job") : "",
              "over");
    std::set<std::string> in_notification;
    for (const auto& b : receiver.alerts()) {
      if (b.notification == a.notification) in_notification.insert(b.labels.at("alertname"));
    }
    grouped = grouped || (in_notification.count("RamguardTargetOverBudget") &&
                          in_notification.count("RamguardRunOverBudget"));
  }
  EXPECT_TRUE(grouped) << receiver.text();
}

}  // namespace
}  // namespace ramguard::testing
