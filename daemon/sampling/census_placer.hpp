#pragma once
// A census's placement, read off the event loop. place_census reads the process's maps and 8
// bytes of pagemap per page of the census's mapped ranges: milliseconds to hundreds of them for
// a multi-GB census, during which the loop would answer no other coordinator's mark. One worker
// thread places, one census at a time and in order; the result comes back on the loop.

#include <sys/types.h>

#include <asio/any_io_executor.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "model/census.hpp"

namespace ramguard {

class CensusPlacer {
 public:
  using Done = std::function<void(CensusPlacement)>;
  CensusPlacer(asio::any_io_executor loop, std::filesystem::path proc_root,
               std::uint64_t page_size_bytes);
  ~CensusPlacer();  // waits for a placement in progress; the queued ones are dropped
  CensusPlacer(const CensusPlacer&) = delete;
  CensusPlacer& operator=(const CensusPlacer&) = delete;

  // Places RANGES in PID's mappings on the worker; DONE runs on the loop with the placement,
  // unless this placer is gone by then.
  void place(pid_t pid, std::vector<CensusRange> ranges, Done done);

 private:
  asio::any_io_executor loop_;
  std::filesystem::path proc_root_;
  std::uint64_t page_size_bytes_;
  std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  asio::thread_pool worker_{1};  // last: joined first, while the rest is still here
};

}  // namespace ramguard
