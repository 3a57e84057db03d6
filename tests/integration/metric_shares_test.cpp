// Fair metrics, real daemon: one user (uid 65534, in the socket's reach) floods 1,100
// throwaway admissions under fresh job names, more than the 1,024 targets /metrics keeps series
// for. With the default metrics.max_targets_per_user (256) only 256 of them get series of their
// own, the rest share "other", and root's run admitted afterwards keeps its own series. Each
// user's share is exported: ramguard_user_reserved_bytes and ramguard_user_active_runs by uid.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include "control_wire.hpp"
#include "harness.hpp"
#include "other_uid.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMB = 1'000'000;
constexpr int kFlood = 1100;

TEST(MetricShares, OneUsersAdmissionFloodCannotFoldRootsRunAndEachShareIsExported) {
  auto d = Daemon::with_config(
      "budget: 16GB\nmetrics: { job_names: plain }\n"
      "control:\n  socket_mode: \"0666\"\n  max_requests_per_second: 100000\n");
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));

  const std::string admitted = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    int ok = 0;
    for (int i = 0; i < kFlood; ++i) {
      const v1::Reply r =
          parse_reply(wire.roundtrip(R"({"version":1,"admit":{"job":"junk-)" + std::to_string(i) +
                                     R"(","estimateBytes":"1000000"}})"));
      ok += r.has_admit() && r.admit().admitted() ? 1 : 0;
    }
    return std::to_string(ok);
  });
  ASSERT_EQ(admitted, std::to_string(kFlood));

  // Root's run, admitted and started after the flood.
  MemChild child;
  child.command("alloc floor " + std::to_string(8 * kMB));
  v1::Request ask;
  ask.mutable_admit()->set_job("root-job");
  ask.mutable_admit()->set_estimate_bytes(100 * kMB);
  ask.mutable_admit()->set_pid(static_cast<std::uint32_t>(child.pid()));
  const v1::Reply a = d->call(ask);
  ASSERT_TRUE(a.has_admit() && a.admit().admitted()) << a.DebugString();
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_job("root-job");
  start.mutable_run_start()->set_reservation_id(a.admit().reservation_id());
  const v1::Reply s = d->call(start);
  ASSERT_TRUE(s.has_run_start()) << s.DebugString();
  const std::string run_id = s.run_start().run_id();

  const std::string scrape = d->scrape_metrics();
  const std::string root_series =
      "ramguard_target_peak_bytes{ramguard_job=\"root-job\",run_id=\"" + run_id + "\"}";
  EXPECT_GT(metric_value(scrape, root_series), 0) << "root's run lost its own series";
  EXPECT_TRUE(std::isnan(
      metric_value(scrape, "ramguard_target_peak_bytes{ramguard_job=\"other\",run_id=\"other\"}")))
      << "root's run was folded";
  // 256 of the flood's jobs have series of their own, 844 share "other".
  EXPECT_EQ(metric_value(scrape, "ramguard_metrics_targets_folded"), kFlood - 256);
  EXPECT_EQ(
      metric_value(scrape,
                   "ramguard_admissions_total{decision=\"admitted\",ramguard_job=\"junk-255\"}"),
      1);
  EXPECT_TRUE(std::isnan(metric_value(
      scrape, "ramguard_admissions_total{decision=\"admitted\",ramguard_job=\"junk-256\"}")));
  EXPECT_EQ(metric_value(scrape,
                         "ramguard_admissions_total{decision=\"admitted\",ramguard_job=\"other\"}"),
            kFlood - 256);
  EXPECT_FALSE(d->wait_for_log("raise metrics.max_targets_per_user").empty());

  // Each user's share: nobody's 1,100 MB of reservations, root's run and its 100 MB.
  EXPECT_EQ(metric_value(scrape, "ramguard_user_reserved_bytes{uid=\"65534\"}"), kFlood * kMB);
  EXPECT_EQ(metric_value(scrape, "ramguard_user_reserved_bytes{uid=\"0\"}"), 100 * kMB);
  EXPECT_EQ(metric_value(scrape, "ramguard_user_active_runs{uid=\"0\"}"), 1);
  EXPECT_TRUE(std::isnan(metric_value(scrape, "ramguard_user_active_runs{uid=\"65534\"}")));
}

}  // namespace
}  // namespace ramguard::testing
