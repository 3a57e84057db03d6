// The cost of the control protocol, in one run:
//   BM_EchoRoundTrip   a ~200-byte line to a tiny Unix-socket echo thread and back: the limit
//   BM_MarkRoundTrip   a phase mark through libramguard against a real ramguardd on a real
//                      child (status read, high-water reset, SQLite write, reply), in the
//                      binary framing libramguard negotiates by default
//   BM_MarkRoundTripJsonLines  the same with force_json_lines: one JSON object per line
//   BM_AdmitRelease    64 concurrent clients, each on its own connection, admit then release
// Afterwards prints p50/p99 of the round trips, the ratios (goal <= 3 at p50, <= 5 at p99) and
// admissions per second.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "integration/harness.hpp"
#include "ramguard/client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr int kRoundTrips = 20000;

ramguard::testing::Daemon* g_daemon = nullptr;
ramguard::testing::MemChild* g_child = nullptr;
std::filesystem::path g_echo_path;
std::vector<double> g_echo_ns, g_mark_ns, g_mark_json_ns;
std::atomic<std::uint64_t> g_admitted{0};

// One connection at a time, lines echoed back verbatim: the physical limit of a round trip.
void echo_server(int listener) {
  for (;;) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) return;  // listener closed
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) {
      if (::write(fd, buf, static_cast<std::size_t>(n)) != n) break;
    }
    ::close(fd);
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void BM_EchoRoundTrip(benchmark::State& state) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, g_echo_path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    state.SkipWithError("cannot connect to the echo server");
    return;
  }
  // About the size of a mark request line.
  const std::string line =
      R"({"version":1,"requestId":"12345","mark":{"runId":"r-20240601-120000-abcd","kind":)"
      R"("PHASE_BEGIN","phase":"aggregation","allocator":{"allocatedBytes":"1234567890"}},)"
      R"("token":"xxxxxxxxxxxxxxxxxxxxxxxx"})"
      "\n";
  std::string reply(line.size(), '\0');
  g_echo_ns.clear();
  g_echo_ns.reserve(kRoundTrips);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    (void)!::write(fd, line.data(), line.size());
    std::size_t got = 0;
    while (got < line.size()) {  // the echo returns exactly the line
      const ssize_t n = ::read(fd, reply.data() + got, reply.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    g_echo_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  state.counters["line_bytes"] = static_cast<double>(line.size());
  ::close(fd);
}
BENCHMARK(BM_EchoRoundTrip)->Iterations(kRoundTrips)->UseRealTime();

void mark_round_trips(benchmark::State& state, bool force_json_lines, std::vector<double>& ns) {
  ramguard::Client client(ramguard::ClientOptions{.socket_path = g_daemon->socket_path().string(),
                                                  .force_json_lines = force_json_lines});
  ramguard::Run run =
      client.start_run({.pid = static_cast<std::uint32_t>(g_child->pid()), .job = "bench"});
  ns.clear();
  ns.reserve(kRoundTrips);
  bool begin = true;
  std::uint64_t stored = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto reply = begin ? run.phase_begin("aggregation") : run.phase_end("aggregation");
    ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    stored += reply.stored();
    begin = !begin;
  }
  if (!begin) run.phase_end("aggregation");
  run.end();
  state.counters["stored_fraction"] = static_cast<double>(stored) / kRoundTrips;
  const bool binary = client.hello().framing() == ramguard::v1::FRAMING_PROTOBUF_DELIMITED;
  if (binary == force_json_lines) state.SkipWithError("the connection is not in the framing asked");
}

void BM_MarkRoundTrip(benchmark::State& state) {
  mark_round_trips(state, false, g_mark_ns);
}
BENCHMARK(BM_MarkRoundTrip)->Iterations(kRoundTrips)->UseRealTime();

void BM_MarkRoundTripJsonLines(benchmark::State& state) {
  mark_round_trips(state, true, g_mark_json_ns);
}
BENCHMARK(BM_MarkRoundTripJsonLines)->Iterations(kRoundTrips)->UseRealTime();

void BM_AdmitRelease(benchmark::State& state) {
  ramguard::Client client(g_daemon->socket_path().string());
  std::uint64_t admitted = 0;
  for (auto _ : state) {
    const auto reply = client.admit({.job = "bench", .estimate_bytes = 1'000'000});
    if (reply.admitted()) {
      client.release(reply.reservation_id());
      ++admitted;
    }
  }
  g_admitted += admitted;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AdmitRelease)->Threads(64)->MinTime(3.0)->UseRealTime();

class CapturingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred || run.run_type != Run::RT_Iteration) continue;
      auto it = run.counters.find("items_per_second");
      if (it != run.counters.end()) items_per_second_ = it->second;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double items_per_second() const { return items_per_second_; }

 private:
  double items_per_second_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace ramguard::testing;
  auto child = std::make_unique<MemChild>();
  child->command("alloc held " + std::to_string(128 * kMiB));
  g_child = child.get();
  // Generous connection and rate limits: the benchmark measures the daemon, not its guards.
  auto daemon = Daemon::with_config(
      "control:\n  max_connections: 256\n  max_requests_per_second: 1000000\n"
      "  max_marks_per_run: 1000000\n");
  g_daemon = daemon.get();

  const auto dir = make_temp_dir("echo");
  g_echo_path = dir / "echo.sock";
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, g_echo_path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 16) != 0) {
    std::fprintf(stderr, "control_bench: cannot listen on %s\n", g_echo_path.c_str());
    return 1;
  }
  std::thread echo(echo_server, listener);

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  ::shutdown(listener, SHUT_RDWR);
  ::close(listener);
  echo.join();

  const double echo50 = percentile(g_echo_ns, 0.50), echo99 = percentile(g_echo_ns, 0.99);
  const double mark50 = percentile(g_mark_ns, 0.50), mark99 = percentile(g_mark_ns, 0.99);
  std::printf("\nchild: PID %d holding %llu MiB; daemon state dir %s\n", child->pid(),
              static_cast<unsigned long long>(128), daemon->state_dir().c_str());
  if (!g_echo_ns.empty() && !g_mark_ns.empty()) {
    std::printf("echo round trip (unix socket)   p50 = %8.2f us   p99 = %8.2f us   (n=%zu)\n",
                echo50 / 1e3, echo99 / 1e3, g_echo_ns.size());
    std::printf(
        "mark round trip (libramguard)   p50 = %8.2f us   p99 = %8.2f us   (n=%zu, "
        "binary framing)\n",
        mark50 / 1e3, mark99 / 1e3, g_mark_ns.size());
    // A mark's cost should not depend on how many marks the run already has.
    const std::size_t tenth = g_mark_ns.size() / 10;
    const std::vector<double> early(g_mark_ns.begin(), g_mark_ns.begin() + tenth);
    const std::vector<double> late(g_mark_ns.end() - tenth, g_mark_ns.end());
    std::printf("mark p50 over the first %zu marks = %.2f us, over the last %zu = %.2f us\n", tenth,
                percentile(early, 0.5) / 1e3, tenth, percentile(late, 0.5) / 1e3);
    std::printf("ratio mark/echo p50 = %.2f (goal <= 3)\n", mark50 / echo50);
    std::printf("ratio mark/echo p99 = %.2f (goal <= 5)\n", mark99 / echo99);
  }
  if (!g_echo_ns.empty() && !g_mark_json_ns.empty()) {
    const double json50 = percentile(g_mark_json_ns, 0.50);
    const double json99 = percentile(g_mark_json_ns, 0.99);
    std::printf("mark round trip (JSON lines)    p50 = %8.2f us   p99 = %8.2f us   (n=%zu)\n",
                json50 / 1e3, json99 / 1e3, g_mark_json_ns.size());
    std::printf("ratio mark/echo in JSON lines: p50 = %.2f, p99 = %.2f\n", json50 / echo50,
                json99 / echo99);
    if (!g_mark_ns.empty()) {
      std::printf("binary/JSON mark: p50 = %.2f, p99 = %.2f\n", mark50 / json50, mark99 / json99);
    }
  }
  if (reporter.items_per_second() > 0) {
    std::printf(
        "admissions with 64 concurrent clients: %.0f per second (each admitted, then "
        "released: 2 requests), %llu admitted in total\n",
        reporter.items_per_second(), static_cast<unsigned long long>(g_admitted.load()));
  }
  std::filesystem::remove_all(dir);
  return 0;
}
