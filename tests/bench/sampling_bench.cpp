// The cost of reading a coordinator, in one run against one real child holding 256 MiB:
//   BM_RawPread/status pread at offset 0 of a kept-open /proc/PID/status: the physical limit
//                      of a reading that tells shmem from page cache (what a periodic one is)
//   BM_RawPread/statm  the same of statm: what a periodic reading cost before it had to
//   BM_PeriodicSample  ProcessHandle::read_periodic (clock, pread of status, parse)
//   BM_MarkReading     read_complete (status) + reset_hwm (clear_refs): the cost of a mark
// Afterwards prints "ratio periodic_sample/raw_pread_status = X.XX (goal <= 1.5)".
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "bench/capturing_reporter.hpp"
#include "common/clock.hpp"
#include "procfs/proc_fs.hpp"
#include "unit/procfs/test_child.hpp"

namespace {

using ramguard::testing::TestChild;
constexpr std::uint64_t kChildBytes = 256 * TestChild::kMiB;
pid_t g_child_pid = 0;

const char* const kFiles[] = {"status", "statm"};

void BM_RawPread(benchmark::State& state) {
  const char* file = kFiles[state.range(0)];
  state.SetLabel(file);
  const std::string path = "/proc/" + std::to_string(g_child_pid) + "/" + file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    state.SkipWithError("cannot open the child's /proc file");
    return;
  }
  char buf[4096];
  for (auto _ : state) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(buf);
  }
  ::close(fd);
}
BENCHMARK(BM_RawPread)->Arg(0)->Arg(1);

void BM_PeriodicSample(benchmark::State& state) {
  ramguard::ProcFs fs;
  ramguard::SystemClock clock;
  auto handle = fs.open(g_child_pid);
  if (!handle) {
    state.SkipWithError(handle.error().message.c_str());
    return;
  }
  std::uint64_t rss = 0;
  for (auto _ : state) {
    auto r = handle->read_periodic(clock.now());
    rss = r.ok() ? r->rss_bytes : 0;
    benchmark::DoNotOptimize(rss);
  }
  state.counters["rss_MiB"] = static_cast<double>(rss) / TestChild::kMiB;
}
BENCHMARK(BM_PeriodicSample);

void BM_MarkReading(benchmark::State& state) {
  ramguard::ProcFs fs;
  ramguard::SystemClock clock;
  auto handle = fs.open(g_child_pid);
  if (!handle) {
    state.SkipWithError(handle.error().message.c_str());
    return;
  }
  bool reset_ok = true;
  for (auto _ : state) {
    auto r = handle->read_complete(clock.now());
    benchmark::DoNotOptimize(r);
    reset_ok = handle->reset_hwm().ok() && reset_ok;
  }
  if (!reset_ok) state.SkipWithError("reset_hwm failed (clear_refs not writable)");
}
BENCHMARK(BM_MarkReading);

}  // namespace

int main(int argc, char** argv) {
  auto child = std::make_unique<TestChild>();
  if (child->pid() <= 0 || !child->hold(kChildBytes)) {
    std::fprintf(stderr, "sampling_bench: cannot start the 256 MiB child\n");
    return 1;
  }
  g_child_pid = child->pid();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ramguard::testing::CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const double raw = reporter.real_ns("BM_RawPread/0");
  const double raw_statm = reporter.real_ns("BM_RawPread/1");
  const double periodic = reporter.real_ns("BM_PeriodicSample");
  const double mark = reporter.real_ns("BM_MarkReading");
  std::printf("\nchild: PID %d holding %llu MiB\n", g_child_pid,
              static_cast<unsigned long long>(kChildBytes / TestChild::kMiB));
  if (raw > 0 && periodic > 0) {
    std::printf("raw pread status   = %.3f us\n", raw / 1e3);
    if (raw_statm > 0) std::printf("raw pread statm    = %.3f us\n", raw_statm / 1e3);
    std::printf("periodic sample    = %.3f us\n", periodic / 1e3);
    std::printf("ratio periodic_sample/raw_pread_status = %.2f (goal <= 1.5)\n", periodic / raw);
  }
  if (mark > 0) std::printf("mark reading (status + HWM reset) = %.3f us\n", mark / 1e3);
  return 0;
}
