// What placing a census costs the daemon's event loop (it runs there, before the mark that
// carries the census is answered): place_census() on this process, holding 1 GiB in 256
// mappings of 4 MiB, every page touched, with the 256 ranges a census sends at most (the
// client's CENSUS_RANGES): one read of /proc/self/maps and 8 bytes of pagemap per page.
// Arg: how many of the 256 ranges are resident (0: mapped, never touched).
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "procfs/maps.hpp"

namespace ramguard {
namespace {

constexpr std::size_t kRanges = 256;
constexpr std::uint64_t kRangeBytes = 4ULL << 20;  // 256 x 4 MiB = 1 GiB

struct Held {
  std::vector<void*> maps;
  std::vector<CensusRange> ranges;
  explicit Held(std::size_t touched) {
    for (std::size_t i = 0; i < kRanges; ++i) {
      void* p =
          mmap(nullptr, kRangeBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) std::abort();
      if (i < touched) std::memset(p, 1, kRangeBytes);
      maps.push_back(p);
      ranges.push_back({reinterpret_cast<std::uint64_t>(p), kRangeBytes});
    }
  }
  ~Held() {
    for (void* p : maps) munmap(p, kRangeBytes);
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
};

void BM_PlaceCensus(benchmark::State& state) {
  const Held held(static_cast<std::size_t>(state.range(0)));
  const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  CensusPlacement placed;
  for (auto _ : state) {
    placed = place_census("/proc", getpid(), held.ranges, page);
    benchmark::DoNotOptimize(placed);
  }
  if (!placed.error.empty() || !placed.resident_known) {
    state.SkipWithError(("not placed: " + placed.error).c_str());
  }
  state.counters["anon_MiB"] = static_cast<double>(placed.anon_bytes) / (1 << 20);
  state.counters["resident_MiB"] = static_cast<double>(placed.resident_bytes) / (1 << 20);
}
BENCHMARK(BM_PlaceCensus)->Arg(256)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ramguard

BENCHMARK_MAIN();
