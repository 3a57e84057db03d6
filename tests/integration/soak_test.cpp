// Soak: 10,000 round ends at full speed through the real daemon with libramguard, on one run
// guarding a real process. A long run must cost the daemon a bounded amount: the status reply
// stays small (it lists the newest boundaries and summarises the rest), the daemon's own RSS
// stays flat between round 1,000 and round 10,000, and still every boundary is in the ledger.
// RAMGUARD_SOAK_ROUNDS overrides the round count (longer soaks by hand).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

#include "harness.hpp"
#include "ramguard/client.hpp"
#include "store/store.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;

std::uint32_t soak_rounds() {
  const char* env = ::getenv("RAMGUARD_SOAK_ROUNDS");
  const long n = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  return n >= 2000 ? static_cast<std::uint32_t>(n) : 10'000;
}

// VmRSS of a process, from /proc/PID/status.
std::uint64_t vm_rss_bytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * kKiB;
  }
  ADD_FAILURE() << "no VmRSS for pid " << pid;
  return 0;
}

TEST(Soak, TenThousandRoundEndsKeepStatusSmallRssFlatAndEveryBoundaryInTheLedger) {
  const std::uint32_t rounds = soak_rounds();
  const auto state_dir = make_temp_dir("soak");
  Daemon::Options o;
  o.state_dir = state_dir;
  // Round ends back to back: no request rate cap, and a floor settles at the next round end.
  o.config_yaml =
      "control:\n  max_requests_per_second: 1000000\n"
      "growth:\n  settle: 1s\n";
  auto d = Daemon::start(std::move(o));
  MemChild child;
  child.command("alloc floor " + std::to_string(32 * kMiB));

  ClientOptions options;
  options.socket_path = d->socket_path().string();
  options.timeout = std::chrono::seconds(60);
  options.max_reply_bytes = 64 * kMiB;  // the report lists every boundary
  ramguard::Client client(options);
  RunOptions run_options;
  run_options.pid = static_cast<std::uint32_t>(child.pid());
  run_options.job = "soak";
  ramguard::Run run = client.start_run(run_options);

  std::uint64_t rss_at_1000 = 0;
  std::size_t status_bytes_at_1000 = 0;
  const auto status_line = [&] {
    return d->request_line(R"({"version":1,"status":{"runId":")" + run.id() + R"("}})");
  };
  const auto started = std::chrono::steady_clock::now();
  auto window_start = started;
  double first_window_seconds = 0, last_window_seconds = 0;
  for (std::uint32_t r = 1; r <= rounds; ++r) {
    const v1::MarkReply reply = run.round_end();
    ASSERT_EQ(reply.round(), r);
    ASSERT_TRUE(reply.stored()) << "round " << r;
    if (r % 1000 == 0) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      if (r == 1000) first_window_seconds = seconds;
      last_window_seconds = seconds;
      window_start = now;
    }
    if (r == 1000) {
      rss_at_1000 = vm_rss_bytes(d->pid());
      status_bytes_at_1000 = status_line().size();
    }
  }
  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::uint64_t rss_at_end = vm_rss_bytes(d->pid());
  const std::string status = status_line();
  std::cout << "soak: " << rounds << " round ends in " << total_seconds << " s; rounds 1-1000 took "
            << first_window_seconds << " s, the last 1000 " << last_window_seconds
            << " s; ramguardd VmRSS " << rss_at_1000 / kKiB << " KiB at round 1000, "
            << rss_at_end / kKiB << " KiB at round " << rounds << "; status reply "
            << status_bytes_at_1000 << " bytes at round 1000, " << status.size()
            << " bytes at the end\n";

  // The status reply is bounded: the newest boundaries and a summary of the rest.
  EXPECT_LT(status.size(), 64 * kKiB);
  EXPECT_LT(status.size(), status_bytes_at_1000 + 4 * kKiB) << "status grows with the run";
  const v1::RunStatus s = client.status(run.id()).runs(0);
  EXPECT_EQ(s.round(), rounds);
  EXPECT_LE(s.boundaries_size(), 100);
  EXPECT_EQ(s.earlier_boundaries().count() + static_cast<std::uint64_t>(s.boundaries_size()),
            rounds);
  EXPECT_EQ(s.earlier_boundaries().first_round(), 1u);
  EXPECT_EQ(s.boundaries(0).round(), s.earlier_boundaries().last_round() + 1);
  EXPECT_GE(s.earlier_boundaries().min_floor_bytes(), 32 * kMiB);

  // The daemon's footprint does not grow with the run's length.
  // Measured: +0.5-0.7 MiB over rounds 1,000-10,000 with SQLite's page cache at 512 KiB.
  EXPECT_LE(rss_at_end, rss_at_1000 + 2 * kMiB)
      << "ramguardd grew " << (static_cast<double>(rss_at_end) - rss_at_1000) / kMiB << " MiB";
  // Nor does the cost of a round end: the last thousand take about as long as the first
  // (a wide bound: other builds share the machine).
  EXPECT_LT(last_window_seconds, 3 * first_window_seconds + 1.0);

  // Every boundary is in the ledger: the report lists them all, from the store.
  const v1::RunStatus full = client.report(run.id()).run();
  ASSERT_EQ(full.boundaries_size(), static_cast<int>(rounds));
  for (int i = 0; i < full.boundaries_size(); ++i) {
    ASSERT_EQ(full.boundaries(i).round(), static_cast<std::uint32_t>(i + 1));
  }
  EXPECT_FALSE(full.has_earlier_boundaries());

  run.end();
  ASSERT_EQ(d->signal_and_wait(SIGTERM), 0);
  d.reset();
  auto store = Store::open(state_dir);
  ASSERT_TRUE(store) << store.error().message;
  auto ledger = (*store)->load_run(run.id());
  ASSERT_TRUE(ledger) << ledger.error().message;
  ASSERT_EQ(ledger->boundaries.size(), rounds);
  for (std::size_t i = 0; i < ledger->boundaries.size(); ++i) {
    ASSERT_EQ(ledger->boundaries[i].round, i + 1);
    ASSERT_TRUE(ledger->boundaries[i].settled) << "round " << i + 1;
  }
  // The run-start mark, every round end and the run end.
  EXPECT_EQ(ledger->marks.size(), rounds + 2u);
  std::filesystem::remove_all(state_dir);
}

}  // namespace
}  // namespace ramguard::testing
