// The loop's cost of a mark by coordinator size, against real children holding 1 GB and 4 GB
// (this machine faults memory in slowly past ~5 GB, so 16 GB is not measured here):
//   BM_MarkOnLoop/GB/scope  Sampler::read_now(complete) + reset_hwm: what a mark costs the
//                           event loop (scope 0: process, 1: tree, 2: cgroup; each child runs
//                           in a v1 memory cgroup of its own, created and removed here)
//   BM_PssOffLoop/GB        PssReader's walk of the child's page tables (smaps_rollup): what
//                           a tree's phase or round end waits for off the loop
// Afterwards prints each size's on-loop time against the 1 ms goal.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/capturing_reporter.hpp"
#include "common/clock.hpp"
#include "procfs/cgroup_memory.hpp"
#include "sampling/pss_reader.hpp"
#include "sampling/sampler.hpp"
#include "unit/procfs/test_child.hpp"

namespace {

using ramguard::testing::TestChild;
std::map<int, std::unique_ptr<TestChild>> g_children;  // by GB

// A v1 memory cgroup of its own for each child, so the cgroup scope reads only that child.
class BenchCgroup {
 public:
  explicit BenchCgroup(int gb)
      : dir_("/sys/fs/cgroup/memory/ramguard-bench-" + std::to_string(::getpid()) + "-" +
             std::to_string(gb)) {
    std::error_code ec;
    std::filesystem::create_directory(dir_, ec);
  }
  ~BenchCgroup() {
    std::error_code ec;
    std::filesystem::remove(dir_, ec);  // rmdir: once its child has exited
  }
  bool add(pid_t pid) const {
    std::ofstream procs(dir_ / "cgroup.procs");
    procs << pid << "\n";
    procs.flush();
    return static_cast<bool>(procs);
  }

 private:
  std::filesystem::path dir_;
};
std::map<int, std::unique_ptr<BenchCgroup>> g_cgroups;  // by GB

void BM_MarkOnLoop(benchmark::State& state) {
  const int gb = static_cast<int>(state.range(0));
  asio::io_context io;
  ramguard::ProcFs fs;
  ramguard::SystemClock clock;
  ramguard::Sampler sampler(io, fs, clock, std::chrono::seconds(2));
  auto key = sampler.add(g_children[gb]->pid(), nullptr);
  if (!key) {
    state.SkipWithError(key.error().message.c_str());
    return;
  }
  if (state.range(1) == 1) (void)sampler.attach(*key, ramguard::Scope::kTree);
  if (state.range(1) == 2) {
    auto cgroup = ramguard::open_memory_cgroup("/proc", "/sys/fs/cgroup", g_children[gb]->pid());
    if (!cgroup) {
      state.SkipWithError(cgroup.error().message.c_str());
      return;
    }
    if (auto s = sampler.attach(*key, ramguard::Scope::kCgroup, std::move(*cgroup)); !s) {
      state.SkipWithError(s.error().message.c_str());
      return;
    }
  }
  for (auto _ : state) {
    auto reading = sampler.read_now(*key, true);
    benchmark::DoNotOptimize(reading);
    (void)sampler.reset_hwm(*key);
  }
}

void BM_PssOffLoop(benchmark::State& state) {
  const int gb = static_cast<int>(state.range(0));
  ramguard::ProcFs fs;
  auto handle = fs.open(g_children[gb]->pid());
  if (!handle) {
    state.SkipWithError(handle.error().message.c_str());
    return;
  }
  asio::io_context io;
  ramguard::PssReader reader(io.get_executor());
  std::uint64_t pss = 0;
  const std::vector<ramguard::TargetId> processes{handle->id()};
  // The completion comes back to `io` from the worker thread: keep `io` waiting for it.
  auto work = asio::make_work_guard(io);
  for (auto _ : state) {
    bool done = false;
    reader.sum(processes, [&](const ramguard::PssSum& sum) {
      pss = sum.pss_bytes;
      done = true;
    });
    while (!done) io.run_one();
  }
  state.counters["pss_GiB"] = static_cast<double>(pss) / (1u << 30);
}

BENCHMARK(BM_MarkOnLoop)
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({4, 0})
    ->Args({4, 1})
    ->Args({4, 2});
BENCHMARK(BM_PssOffLoop)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  for (int gb : {1, 4}) {
    auto child = std::make_unique<TestChild>();
    auto cgroup = std::make_unique<BenchCgroup>(gb);
    // Moved before it allocates, so its memory is charged to its own cgroup.
    if (child->pid() <= 0 || !cgroup->add(child->pid()) ||
        !child->hold(static_cast<std::uint64_t>(gb) << 30)) {
      std::fprintf(stderr, "mark_size_bench: cannot start the %d GB child\n", gb);
      return 1;
    }
    g_children[gb] = std::move(child);
    g_cgroups[gb] = std::move(cgroup);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ramguard::testing::CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\n");
  for (int gb : {1, 4}) {
    const std::string size = std::to_string(gb);
    const double process = reporter.real_ns("BM_MarkOnLoop/" + size + "/0");
    const double tree = reporter.real_ns("BM_MarkOnLoop/" + size + "/1");
    const double cgroup = reporter.real_ns("BM_MarkOnLoop/" + size + "/2");
    const double pss = reporter.real_ns("BM_PssOffLoop/" + size);
    std::printf(
        "%d GB coordinator: loop time per mark %.3f ms (process), %.3f ms (tree), %.3f ms "
        "(cgroup), goal <= 1 ms; its PSS off the loop %.2f ms\n",
        gb, process / 1e6, tree / 1e6, cgroup / 1e6, pss / 1e6);
  }
  g_children.clear();  // the children exit before their cgroups are removed
  g_cgroups.clear();
  return 0;
}
