// The cost of a tree-scope reading, in one run against real process trees: a coordinator with
// 16 threads and 1, 8 or 32 workers of 2 threads each, every process holding 4 MiB.
//   BM_StatusSum/N       one pread of each process's kept-open status: the physical limit (a
//                        periodic reading reads status, to tell shmem from page cache)
//   BM_TreeWalk/N        ProcessTree::refresh (task/*/children of every member) + the reading:
//                        what a reading costs when the tree is re-walked every time
//   BM_TreeTracked/N     the reading alone: the tree is known (proc events), nothing re-walked
// Afterwards prints, per size, the ratio to the status sum of the sampler's steady state with
// fork events: the tracked reading plus one walk per Sampler::kTreeWalkEveryReadings readings
// (goal <= 1.5), and of re-walking at every reading (without fork events).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/capturing_reporter.hpp"
#include "bench/proc_trees.hpp"
#include "common/clock.hpp"
#include "procfs/process_tree.hpp"
#include "sampling/sampler.hpp"

namespace {

constexpr std::size_t kHeldBytes = 4u << 20;
constexpr int kRootThreads = 16;
constexpr int kWorkerThreads = 2;

// In a forked child: hold memory, start threads that block, then block. Never returns.
[[noreturn]] void hold_and_wait(int threads) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the bench dying never leaves a tree behind
  void* p = ::mmap(nullptr, kHeldBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) std::memset(p, 1, kHeldBytes);
  for (int i = 1; i < threads; ++i) std::thread([] { ::pause(); }).detach();
  for (;;) ::pause();
}

// A coordinator (the root) that forks `workers` children, then waits; the bench process is
// single-threaded when it forks. Returns every PID, the root first, once all have started.
std::vector<pid_t> start_tree(int workers) {
  int ready[2];
  if (::pipe(ready) != 0) return {};
  const pid_t root = ::fork();
  if (root == 0) {
    ::close(ready[0]);
    for (int i = 0; i < workers; ++i) {
      const pid_t worker = ::fork();
      if (worker == 0) {
        (void)!::write(ready[1], &i, sizeof i);
        hold_and_wait(kWorkerThreads);
      }
    }
    (void)!::write(ready[1], &workers, sizeof workers);
    hold_and_wait(kRootThreads);
  }
  ::close(ready[1]);
  int token = 0;
  for (int i = 0; i <= workers; ++i) (void)!::read(ready[0], &token, sizeof token);
  ::close(ready[0]);
  ::usleep(200'000);  // threads started and memory touched
  std::vector<pid_t> pids{root};
  for (pid_t child : ramguard::read_children("/proc", root)) pids.push_back(child);
  return pids;
}

std::map<int, std::vector<pid_t>> g_trees;

void BM_StatusSum(benchmark::State& state) {
  ramguard::testing::pread_each(state, g_trees[static_cast<int>(state.range(0))], "status");
}

// `walk`: re-walk the tree before every reading, as a reading without proc events does.
void read_tree(benchmark::State& state, bool walk) {
  const auto& pids = g_trees[static_cast<int>(state.range(0))];
  ramguard::ProcFs fs;
  ramguard::SystemClock clock;
  auto root = fs.open(pids.front());
  if (!root) {
    state.SkipWithError(root.error().message.c_str());
    return;
  }
  ramguard::ProcessTree tree(fs, pids.front());
  tree.refresh();
  std::uint64_t rss = 0;
  for (auto _ : state) {
    const auto at = clock.now();
    auto own = root->read_periodic(at);
    if (walk) tree.refresh();
    rss = tree.add_descendants(*own, at, false).rss_bytes;
    benchmark::DoNotOptimize(rss);
  }
  state.counters["processes"] = static_cast<double>(tree.descendants() + 1);
  state.counters["rss_MiB"] = static_cast<double>(rss) / (1 << 20);
}
void BM_TreeWalk(benchmark::State& state) {
  read_tree(state, true);
}
void BM_TreeTracked(benchmark::State& state) {
  read_tree(state, false);
}

BENCHMARK(BM_StatusSum)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK(BM_TreeWalk)->Arg(1)->Arg(8)->Arg(32);
BENCHMARK(BM_TreeTracked)->Arg(1)->Arg(8)->Arg(32);

}  // namespace

int main(int argc, char** argv) {
  for (int workers : {1, 8, 32}) {
    g_trees[workers] = start_tree(workers);
    if (g_trees[workers].size() != static_cast<std::size_t>(workers) + 1) {
      std::fprintf(stderr, "tree_bench: the tree of %d workers did not start\n", workers);
      return 1;
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ramguard::testing::CapturingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  std::printf("\ncoordinator: %d threads; workers: %d threads each; %zu MiB per process\n",
              kRootThreads, kWorkerThreads, kHeldBytes >> 20);
  for (int workers : {1, 8, 32}) {
    const std::string arg = "/" + std::to_string(workers);
    const double limit = reporter.real_ns("BM_StatusSum" + arg);
    const double walk = reporter.real_ns("BM_TreeWalk" + arg);
    const double tracked = reporter.real_ns("BM_TreeTracked" + arg);
    if (limit <= 0) continue;
    const double steady = tracked + walk / ramguard::Sampler::kTreeWalkEveryReadings;
    std::printf(
        "%2d workers: status sum %.2f us; with fork events %.2f us (ratio %.2f, goal <= "
        "1.5); re-walked every reading %.2f us (ratio %.2f)\n",
        workers, limit / 1e3, steady / 1e3, steady / limit, walk / 1e3, walk / limit);
  }
  ramguard::testing::stop_trees(g_trees);
  return 0;
}
