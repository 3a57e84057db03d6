// Marks under load: N coordinators (1, 8, 64), each a libramguard client with its own run on its
// own child process, mark as fast as they can (phase begin, phase end, round end) against a real
// ramguardd. The daemon's group commit puts the marks of one event-loop turn in one ledger
// transaction; every reply still waits for that COMMIT. Afterwards prints, per N, the aggregate
// marks per second and the p50/p99 of a mark's round trip, next to limits measured in the same
// run (bench/mark_limits.hpp): a one-client echo round trip on a Unix socket, the
// acknowledged-mark limit (that round trip plus the target's status pread, its clear_refs write
// and a log append in the daemon's state directory; once more with an fdatasync), and the same
// least work for 8 and 64 clients at once against one epoll thread. Goals (issue 23): 64
// coordinators >= 20,000 marks/s with p99 <= 2 ms; one coordinator's mark p50 <= 1.5x the
// limit, p99 <= 3x.
#include <benchmark/benchmark.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bench/mark_limits.hpp"
#include "integration/harness.hpp"
#include "ramguard/client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxCoordinators = 64;

ramguard::testing::Daemon* g_daemon = nullptr;
std::vector<std::unique_ptr<ramguard::testing::MemChild>> g_children;
std::mutex g_mutex;
std::map<int, std::vector<double>> g_mark_ns;  // by coordinator count
std::map<int, double> g_marks_per_second;
std::map<int, std::uint64_t> g_not_stored;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void BM_Marks(benchmark::State& state) {
  const int coordinators = state.threads();
  ramguard::Client client(ramguard::ClientOptions{.socket_path = g_daemon->socket_path().string(),
                                                  .release_wait = std::chrono::milliseconds(0)});
  const pid_t pid = g_children[static_cast<std::size_t>(state.thread_index())]->pid();
  ramguard::Run run = client.start_run({.pid = static_cast<std::uint32_t>(pid), .job = "bench"});
  std::vector<double> ns;
  std::uint64_t not_stored = 0;
  int step = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto reply = step == 0   ? run.phase_begin("train")
                       : step == 1 ? run.phase_end("train")
                                   : run.round_end();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    not_stored += reply.stored() ? 0 : 1;
    step = (step + 1) % 3;
  }
  state.SetItemsProcessed(state.iterations());
  // After the loop: not timed.
  if (step == 1) run.phase_end("train");
  run.end();
  std::lock_guard lock(g_mutex);
  auto& all = g_mark_ns[coordinators];
  all.insert(all.end(), ns.begin(), ns.end());
  g_not_stored[coordinators] += not_stored;
}
BENCHMARK(BM_Marks)->Threads(1)->Iterations(6000)->UseRealTime();
BENCHMARK(BM_Marks)->Threads(8)->Iterations(3000)->UseRealTime();
BENCHMARK(BM_Marks)->Threads(64)->Iterations(600)->UseRealTime();

// Aggregate marks per second per coordinator count (items_per_second sums over threads).
class CapturingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) g_marks_per_second[static_cast<int>(run.threads)] = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace ramguard::testing;
  for (int i = 0; i < kMaxCoordinators; ++i) g_children.push_back(std::make_unique<MemChild>());
  // Generous limits: the benchmark measures the daemon, not its guards.
  auto daemon = Daemon::with_config(
      "control:\n  max_connections: 256\n  max_runs: 1000\n  max_requests_per_second: 1000000\n"
      "  max_marks_per_run: 1000000\n");
  g_daemon = daemon.get();

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const auto dir = make_temp_dir("marks-limits");
  const pid_t target = g_children.front()->pid();
  const std::vector<double> echo = echo_round_trips(dir, 20000);
  const std::vector<double> ack = acknowledged_marks(dir, daemon->state_dir(), target, 6000, false);
  const std::vector<double> ack_sync =
      acknowledged_marks(dir, daemon->state_dir(), target, 300, true);
  // The coordinator counts BM_Marks ran with more than one, each client as many marks as each
  // coordinator made, against the hand-made server.
  std::map<int, ConcurrentLimit> many;
  for (const auto& [n, ns] : g_mark_ns) {
    if (n == 1) continue;  // one client: the acknowledged-mark limit above
    std::vector<pid_t> targets;
    for (int i = 0; i < n; ++i) targets.push_back(g_children[static_cast<std::size_t>(i)]->pid());
    many[n] = concurrent_acknowledged_marks(dir, daemon->state_dir(), targets,
                                            static_cast<int>(ns.size()) / n);
  }
  std::printf("\nlimit: echo round trip (unix socket, 1 client)   p50 = %8.2f us  p99 = %8.2f us\n",
              percentile(echo, 0.5) / 1e3, percentile(echo, 0.99) / 1e3);
  std::printf(
      "limit: acknowledged mark (echo + status pread + clear_refs + 12 KiB log append)"
      "  p50 = %8.2f us  p99 = %8.2f us\n",
      percentile(ack, 0.5) / 1e3, percentile(ack, 0.99) / 1e3);
  std::printf(
      "       the same + fdatasync (what synchronous=FULL would add)"
      "  p50 = %8.2f us  p99 = %8.2f us\n",
      percentile(ack_sync, 0.5) / 1e3, percentile(ack_sync, 0.99) / 1e3);
  for (const auto& [n, limit] : many) {
    std::printf(
        "limit: %2d clients at once (one epoll thread, 1 append per turn) %8.0f marks/s   "
        "p50 = %8.2f us   p99 = %8.2f us\n",
        n, limit.per_second, percentile(limit.ns, 0.5) / 1e3, percentile(limit.ns, 0.99) / 1e3);
  }
  for (const auto& [n, ns] : g_mark_ns) {
    std::printf(
        "%2d coordinators: %8.0f marks/s aggregate   p50 = %8.2f us   p99 = %8.2f us   "
        "(n=%zu, not stored: %llu)\n",
        n, g_marks_per_second[n], percentile(ns, 0.5) / 1e3, percentile(ns, 0.99) / 1e3, ns.size(),
        static_cast<unsigned long long>(g_not_stored[n]));
  }
  if (const auto one = g_mark_ns.find(1); one != g_mark_ns.end() && !ack.empty()) {
    std::printf(
        "ratio 1-coordinator mark / acknowledged-mark limit: p50 = %.2f (goal <= 1.5), "
        "p99 = %.2f (goal <= 3)\n",
        percentile(one->second, 0.5) / percentile(ack, 0.5),
        percentile(one->second, 0.99) / percentile(ack, 0.99));
  }
  for (const auto& [n, limit] : many) {
    if (limit.ns.empty()) continue;
    std::printf("ratio %2d coordinators / their limit: marks/s = %.2f, p99 = %.2f\n", n,
                g_marks_per_second[n] / limit.per_second,
                percentile(g_mark_ns[n], 0.99) / percentile(limit.ns, 0.99));
  }
  std::printf("goal: 64 coordinators >= 20000 marks/s aggregate, p99 <= 2000 us\n");
  std::filesystem::remove_all(dir);
  return 0;
}
