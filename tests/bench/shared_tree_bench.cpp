// The cost of counting shared memory once in a tree, in one run against real process trees: a
// coordinator that allocated a 2 GB /dev/shm segment (fallocate: its pages exist, nothing is
// faulted through a mapping) and 8, 16 or 32 workers that map it and touch one page each, so
// every member has RssShmem and the count-once pass reads each member's maps.
//   BM_StatusSum/N     one pread of each process's kept-open status: the physical limit of a
//                      reading that tells shmem from page cache
//   BM_TreeShared/N    ProcessTree::add_descendants, periodic: the status reads plus the
//                      count-once pass (maps and map_files of every member with shmem)
// Afterwards prints, per size, the reading's ratio to the status sum.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bench/capturing_reporter.hpp"
#include "bench/proc_trees.hpp"
#include "common/clock.hpp"
#include "procfs/process_tree.hpp"

namespace {

constexpr off_t kSegmentBytes = off_t{2} << 30;
const std::string kSegment = "/dev/shm/ramguard-shared-tree-bench-" + std::to_string(::getpid());

// In a forked worker: map the segment shared, touch one page, block. Never returns.
[[noreturn]] void map_and_wait(int ready) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the bench dying never leaves a tree behind
  const int fd = ::open(kSegment.c_str(), O_RDWR);
  void* p = fd < 0 ? MAP_FAILED
                   : ::mmap(nullptr, static_cast<std::size_t>(kSegmentBytes), PROT_READ, MAP_SHARED,
                            fd, 0);
  if (p != MAP_FAILED) {
    volatile const char c = *static_cast<const char*>(p);
    (void)c;
  }
  const int ok = p != MAP_FAILED ? 1 : 0;
  (void)!::write(ready, &ok, sizeof ok);
  for (;;) ::pause();
}

// A coordinator (the root) that maps the segment and forks `workers` children. Returns every
// PID, the root first, once all have mapped it (empty on failure).
std::vector<pid_t> start_tree(int workers) {
  int ready[2];
  if (::pipe(ready) != 0) return {};
  const pid_t root = ::fork();
  if (root == 0) {
    ::close(ready[0]);
    for (int i = 0; i < workers; ++i) {
      if (::fork() == 0) map_and_wait(ready[1]);
    }
    map_and_wait(ready[1]);
  }
  ::close(ready[1]);
  int ok = 0, all = 1;
  for (int i = 0; i <= workers; ++i) {
    if (::read(ready[0], &ok, sizeof ok) != sizeof ok) ok = 0;
    all &= ok;
  }
  ::close(ready[0]);
  if (all == 0) return {};
  std::vector<pid_t> pids{root};
  for (pid_t child : ramguard::read_children("/proc", root)) pids.push_back(child);
  return pids;
}

std::map<int, std::vector<pid_t>> g_trees;

void BM_StatusSum(benchmark::State& state) {
  ramguard::testing::pread_each(state, g_trees[static_cast<int>(state.range(0))], "status");
}

void BM_TreeShared(benchmark::State& state) {
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
  std::uint64_t shmem = 0;
  for (auto _ : state) {
    const auto at = clock.now();
    auto own = root->read_periodic(at);
    shmem = tree.add_descendants(*own, at, false, &*root).shmem_bytes;
    benchmark::DoNotOptimize(shmem);
  }
  state.counters["processes"] = static_cast<double>(tree.descendants() + 1);
  state.counters["shmem_MiB"] = static_cast<double>(shmem) / (1 << 20);
}

BENCHMARK(BM_StatusSum)->Arg(8)->Arg(16)->Arg(32);
BENCHMARK(BM_TreeShared)->Arg(8)->Arg(16)->Arg(32);

}  // namespace

int main(int argc, char** argv) {
  const int fd = ::open(kSegment.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 || ::posix_fallocate(fd, 0, kSegmentBytes) != 0) {
    std::fprintf(stderr, "shared_tree_bench: cannot allocate %s (2 GB of /dev/shm)\n",
                 kSegment.c_str());
    ::unlink(kSegment.c_str());
    return 1;
  }
  ::close(fd);
  int rc = 0;
  for (int workers : {8, 16, 32}) {
    g_trees[workers] = start_tree(workers);
    if (g_trees[workers].size() != static_cast<std::size_t>(workers) + 1) {
      std::fprintf(stderr, "shared_tree_bench: the tree of %d workers did not start\n", workers);
      rc = 1;
    }
  }
  ::unlink(kSegment.c_str());  // the mappings keep it; nothing is left behind
  if (rc == 0) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    ramguard::testing::CapturingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    std::printf("\nsegment: 2 GB in /dev/shm, mapped by the coordinator and every worker\n");
    for (int workers : {8, 16, 32}) {
      const std::string arg = "/" + std::to_string(workers);
      const double limit = reporter.real_ns("BM_StatusSum" + arg);
      const double shared = reporter.real_ns("BM_TreeShared" + arg);
      if (limit <= 0) continue;
      std::printf("%2d workers: status sum %.2f us; reading counted once %.2f us (ratio %.2f)\n",
                  workers, limit / 1e3, shared / 1e3, shared / limit);
    }
  }
  ramguard::testing::stop_trees(g_trees);
  return rc;
}
