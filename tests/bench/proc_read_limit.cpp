// The physical limit of periodic sampling at scale, for peer_bench.sh: one pread of a kept-open
// /proc/PID/FILE per process (status: what a periodic reading reads, to tell shmem from page
// cache; statm: the cheaper file it read before), for the processes named on the command line,
// in rounds like the daemon's ticks. Prints the CPU time per read in microseconds (user + system
// of this process).
//
//   proc_read_limit FILE ROUNDS PID...
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: proc_read_limit FILE ROUNDS PID...\n");
    return 2;
  }
  const std::string file = argv[1];
  const long rounds = std::strtol(argv[2], nullptr, 10);
  std::vector<int> fds;
  for (int i = 3; i < argc; ++i) {
    const std::string path = std::string("/proc/") + argv[i] + "/" + file;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "proc_read_limit: cannot open %s\n", path.c_str());
      return 1;
    }
    fds.push_back(fd);
  }
  char buffer[4096];
  long reads = 0;
  const double began = cpu_seconds();
  for (long r = 0; r < rounds; ++r) {
    for (const int fd : fds) reads += ::pread(fd, buffer, sizeof buffer, 0) > 0 ? 1 : 0;
    ::usleep(100'000);  // between rounds other work evicts caches, as between the daemon's ticks
  }
  const double spent = cpu_seconds() - began;
  std::printf("%.3f\n", reads > 0 ? spent / static_cast<double>(reads) * 1e6 : 0.0);
  return reads == rounds * static_cast<long>(fds.size()) ? 0 : 1;
}
