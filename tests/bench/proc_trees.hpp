#pragma once
// What the tree benchmarks share: the physical limit of a tree reading (one pread of each
// member's kept-open /proc/PID/<file>) and the trees' teardown.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

namespace ramguard::testing {

// One pread of /proc/PID/FILE per process per iteration, the descriptors opened beforehand as
// the sampler keeps them. Counts the processes read.
inline void pread_each(benchmark::State& state, const std::vector<pid_t>& pids, const char* file) {
  std::vector<int> fds;
  for (pid_t pid : pids) {
    fds.push_back(::open(("/proc/" + std::to_string(pid) + "/" + file).c_str(), O_RDONLY));
  }
  char buf[4096];
  for (auto _ : state) {
    for (int fd : fds) {
      const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
      benchmark::DoNotOptimize(n);
    }
    benchmark::DoNotOptimize(buf);
  }
  for (int fd : fds) ::close(fd);
  state.counters["processes"] = static_cast<double>(fds.size());
}

// Kills every tree's root (its workers follow through PR_SET_PDEATHSIG) and reaps it.
inline void stop_trees(const std::map<int, std::vector<pid_t>>& trees) {
  for (const auto& [workers, pids] : trees) {
    if (pids.empty()) continue;
    ::kill(pids.front(), SIGKILL);
    ::waitpid(pids.front(), nullptr, 0);
  }
}

}  // namespace ramguard::testing
