// Marks under load: N coordinators (1, 8, 64), each a libramguard client with its own run on its
// own child process, mark as fast as they can (phase begin, phase end, round end) against a real
// ramguardd. The daemon's group commit puts the marks of one event-loop turn in one ledger
// transaction; every reply still waits for that COMMIT. Afterwards prints, per N, the aggregate
// marks per second and the p50/p99 of a mark's round trip, next to limits measured in the same
// run: a one-client echo round trip on a Unix socket, and the acknowledged-mark limit (that round
// trip plus the target's status pread, its clear_refs write and a log append in the daemon's
// state directory; once more with an fdatasync). Goals (issue 23): 64 coordinators >= 20,000
// marks/s with p99 <= 2 ms; one coordinator's mark p50 <= 1.5x the limit, p99 <= 3x.
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

// A one-connection echo thread on a Unix socket: the physical limit of one round trip.
class EchoServer {
 public:
  explicit EchoServer(const std::filesystem::path& path) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 1) != 0) {
      return;
    }
    thread_ = std::thread([this] {
      const int fd = ::accept(listener_, nullptr, nullptr);
      char buf[512];
      ssize_t n;
      while (fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0) {
        if (::write(fd, buf, static_cast<std::size_t>(n)) != n) break;
      }
      if (fd >= 0) ::close(fd);
    });
    client_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(client_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(client_);
      client_ = -1;
    }
  }
  ~EchoServer() {
    if (client_ >= 0) ::close(client_);  // the echo thread sees EOF
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  bool ok() const { return client_ >= 0; }
  // A line of a mark's size there and back.
  void round_trip() {
    (void)!::write(client_, line_.data(), line_.size());
    std::size_t got = 0;
    while (got < line_.size()) {
      const ssize_t n = ::read(client_, reply_ + got, sizeof reply_ - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
  }

 private:
  int listener_ = -1;
  int client_ = -1;
  std::thread thread_;
  std::string line_ = std::string(160, 'x');
  char reply_[160] = {};
};

std::vector<double> echo_round_trips(const std::filesystem::path& dir, int count) {
  EchoServer echo(dir / "echo.sock");
  std::vector<double> ns;
  for (int i = 0; echo.ok() && i < count; ++i) {
    const auto t0 = Clock::now();
    echo.round_trip();
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  return ns;
}

// What an acknowledged mark cannot avoid, done in sequence and timed as one: the round trip, a
// pread of the target's `status` (the exact peak), the write to its `clear_refs` that resets the
// peak, and the ledger's log append of about three 4 KiB pages in the state directory; with
// `fdatasync`, also the flush a synchronous=FULL commit would wait for (the daemon runs NORMAL).
std::vector<double> acknowledged_marks(const std::filesystem::path& dir,
                                       const std::filesystem::path& state_dir, pid_t target,
                                       int count, bool fdatasync) {
  EchoServer echo(dir / (fdatasync ? "ack-sync.sock" : "ack.sock"));
  const std::string proc = "/proc/" + std::to_string(target);
  const int status = ::open((proc + "/status").c_str(), O_RDONLY | O_CLOEXEC);
  const int clear_refs = ::open((proc + "/clear_refs").c_str(), O_WRONLY | O_CLOEXEC);
  const int log =
      ::open((state_dir / "ack-probe").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::vector<double> ns;
  const std::string pages(3 * 4096, 'w');
  char buf[4096];
  off_t at = 0;
  for (int i = 0; echo.ok() && status >= 0 && clear_refs >= 0 && log >= 0 && i < count; ++i) {
    const auto t0 = Clock::now();
    echo.round_trip();
    (void)!::pread(status, buf, sizeof buf, 0);
    (void)!::write(clear_refs, "5", 1);
    (void)!::pwrite(log, pages.data(), pages.size(), at);
    at = (at + static_cast<off_t>(pages.size())) % (64L << 20);  // a log that restarts, as the WAL
    if (fdatasync) ::fdatasync(log);
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  for (int fd : {status, clear_refs, log}) {
    if (fd >= 0) ::close(fd);
  }
  std::filesystem::remove(state_dir / "ack-probe");
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
  const pid_t target = g_children.front()->pid();
  const std::vector<double> echo = echo_round_trips(dir, 20000);
  const std::vector<double> ack = acknowledged_marks(dir, daemon->state_dir(), target, 6000, false);
  const std::vector<double> ack_sync =
      acknowledged_marks(dir, daemon->state_dir(), target, 300, true);
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
  std::printf("goal: 64 coordinators >= 20000 marks/s aggregate, p99 <= 2000 us\n");
  std::filesystem::remove_all(dir);
  return 0;
}
