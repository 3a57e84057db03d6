#pragma once
// A tree's proportional set size, read off the event loop. smaps_rollup makes the kernel walk
// every mapping of the process under its mmap lock: 28 ms for a 6 GB process, ~75 ms at 16 GB,
// during which the coordinator's own mmap/munmap wait. On the loop that would delay every
// other target's samples and every client's reply, so one worker thread reads, one process
// at a time (bounded: a big coordinator never has two walks of its page tables at once), and
// the sum comes back on the loop.

#include <asio/any_io_executor.hpp>
#include <asio/thread_pool.hpp>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "model/reading.hpp"
#include "procfs/proc_fs.hpp"

namespace ramguard {

struct PssSum {
  std::uint64_t pss_bytes = 0;
  std::size_t processes_read = 0;  // the others had exited (or their PID was reused)
  double seconds = 0;              // the worker's time for the whole sum
};

class PssReader {
 public:
  using Done = std::function<void(const PssSum&)>;
  explicit PssReader(asio::any_io_executor loop, std::filesystem::path proc_root = "/proc");
  ~PssReader();  // waits for a read in progress; the queued ones are dropped
  PssReader(const PssReader&) = delete;
  PssReader& operator=(const PssReader&) = delete;

  // The sum of the processes' PSS, each opened anew by PID and checked against its start time,
  // read on the worker; DONE runs on the loop with it, unless this reader is gone by then.
  void sum(std::vector<TargetId> processes, Done done);

 private:
  asio::any_io_executor loop_;
  std::shared_ptr<const ProcFs> procfs_;  // shared with the jobs: read on the worker
  std::shared_ptr<std::atomic<bool>> stopped_ = std::make_shared<std::atomic<bool>>(false);
  asio::thread_pool worker_{1};  // last: joined first, while the rest is still here
};

}  // namespace ramguard
