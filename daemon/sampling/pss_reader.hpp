#pragma once
// A tree's proportional set size, read off the event loop. smaps_rollup makes the kernel walk
// every mapping of the process under its mmap lock: 28 ms for a 6 GB process, ~75 ms at 16 GB,
// during which the coordinator's own mmap/munmap wait. On the loop that would delay every
// other target's samples and every client's reply, so one worker thread reads, one process
// at a time (bounded: a big coordinator never has two walks of its page tables at once), and
// the caller's coroutine resumes on its own executor with the sum.

#include <asio/awaitable.hpp>
#include <asio/thread_pool.hpp>
#include <cstdint>
#include <filesystem>
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
  explicit PssReader(std::filesystem::path proc_root = "/proc");
  ~PssReader();  // waits for a read in progress
  PssReader(const PssReader&) = delete;
  PssReader& operator=(const PssReader&) = delete;

  // The sum of the processes' PSS, each opened anew by PID and checked against its start time.
  asio::awaitable<PssSum> sum(std::vector<TargetId> processes);

 private:
  ProcFs procfs_;
  asio::thread_pool worker_{1};
};

}  // namespace ramguard
