// Marks under load: N coordinators (1, 8, 64), each a libramguard client with its own run on its
// own child process, mark as fast as they can (phase begin, phase end, round end) against a real
// ramguardd. The daemon's group commit puts the marks of one event-loop turn in one ledger
// transaction; every reply still waits for that COMMIT. Afterwards prints, per N, the aggregate
// marks per second and the p50/p99 of a mark's round trip, next to two limits measured in the
// same run: a one-client echo round trip on a Unix socket and one fdatasync of a small append
// in the daemon's state directory. Goal (issue 23): 64 coordinators >= 20,000 marks/s, p99 <= 2 ms.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

// The physical limit of one round trip: a line of a mark's size to an echo thread and back.
std::vector<double> echo_round_trips(const std::filesystem::path& dir, int count) {
  const std::filesystem::path path = dir / "echo.sock";
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 1) != 0) {
    return {};
  }
  std::thread echo([listener] {
    const int fd = ::accept(listener, nullptr, nullptr);
    char buf[512];
    ssize_t n;
    while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0) {
      if (::write(fd, buf, static_cast<std::size_t>(n)) != n) break;
    }
    if (fd >= 0) ::close(fd);
  });
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  std::vector<double> ns;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string line(160, 'x');
    char reply[160];
    for (int i = 0; i < count; ++i) {
      const auto t0 = Clock::now();
      (void)!::write(fd, line.data(), line.size());
      std::size_t got = 0;
      while (got < line.size()) {
        const ssize_t n = ::read(fd, reply + got, sizeof reply - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
  }
  ::close(fd);
  echo.join();
  ::close(listener);
  return ns;
}

// What a COMMIT with synchronous=FULL would add: one small append and fdatasync on that disk.
std::vector<double> fdatasyncs(const std::filesystem::path& dir, int count) {
  const int fd =
      ::open((dir / "sync-probe").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  std::vector<double> ns;
  const std::string page(4096, 's');
  for (int i = 0; fd >= 0 && i < count; ++i) {
    const auto t0 = Clock::now();
    (void)!::write(fd, page.data(), page.size());
    ::fdatasync(fd);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  if (fd >= 0) ::close(fd);
  return ns;
}

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
  const std::vector<double> echo = echo_round_trips(dir, 20000);
  const std::vector<double> sync = fdatasyncs(daemon->state_dir(), 200);
  std::printf("\nlimit: echo round trip (unix socket, 1 client)  p50 = %8.2f us  p99 = %8.2f us\n",
              percentile(echo, 0.5) / 1e3, percentile(echo, 0.99) / 1e3);
  std::printf("limit: 4 KiB append + fdatasync in the state dir  p50 = %8.2f us  p99 = %8.2f us\n",
              percentile(sync, 0.5) / 1e3, percentile(sync, 0.99) / 1e3);
  for (const auto& [n, ns] : g_mark_ns) {
    std::printf(
        "%2d coordinators: %8.0f marks/s aggregate   p50 = %8.2f us   p99 = %8.2f us   "
        "(n=%zu, not stored: %llu)\n",
        n, g_marks_per_second[n], percentile(ns, 0.5) / 1e3, percentile(ns, 0.99) / 1e3, ns.size(),
        static_cast<unsigned long long>(g_not_stored[n]));
  }
  std::printf("goal: 64 coordinators >= 20000 marks/s aggregate, p99 <= 2000 us\n");
  std::filesystem::remove_all(dir);
  return 0;
}
