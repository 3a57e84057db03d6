#pragma once
// The kernel's proc connector (netlink NETLINK_CONNECTOR, group CN_IDX_PROC): how the daemon
// learns the exit status of a coordinator that is not its child, where waitid cannot tell.
// Every process exit on the machine is broadcast as PROC_EVENT_EXIT with the wait status
// (exit code in bits 8-15, signal in the low 7 bits, 0x80 for a core dump).
//
// Listening needs CAP_NET_ADMIN, and events come only to sockets in the initial network
// namespace with PIDs as the initial PID namespace sees them: elsewhere open() fails or no
// event arrives, and exit statuses of non-children stay unknown (the daemon says so).
// Only PIDs someone asked about are kept, so the memory held is bounded by the watches.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

struct ProcExit {
  pid_t pid = 0;
  int wait_status = 0;  // as waitpid reports it: WIFEXITED, WTERMSIG, ... apply
};

// A new process (not a thread): `parent` is the forking process (its thread group), so a
// child forked by any of a coordinator's threads names the coordinator.
struct ProcFork {
  pid_t parent = 0;
  pid_t child = 0;
};

struct ParsedProcEvents {
  std::vector<ProcExit> exits;   // whole-process exits (the thread-group leader), in order
  std::vector<ProcFork> forks;   // new processes, in order
  std::size_t thread_exits = 0;  // threads other than the leader: not the process's exit
  std::size_t other_events = 0;  // threads, exec, acknowledgements, other connector messages
  std::string problem;           // the first malformed message; parsing stops there
};

// Pure: the netlink messages of one datagram from the connector socket.
ParsedProcEvents parse_proc_events(std::span<const std::uint8_t> datagram);

class ProcEvents {
 public:
  // Called on the io_context when a kept PID's status arrives.
  using OnStatus = std::function<void(pid_t pid, int wait_status)>;

  // Opens, subscribes and starts reading. Errors name the reason (not permitted without
  // CAP_NET_ADMIN, no connector in this kernel, ...).
  static Result<std::unique_ptr<ProcEvents>> open(asio::io_context& io);
  ~ProcEvents();
  ProcEvents(const ProcEvents&) = delete;
  ProcEvents& operator=(const ProcEvents&) = delete;

  // Keeps PID's exit status from now on. Events already queued are read first, so the exit
  // of an earlier process with the same PID is never taken for this one's.
  void keep(pid_t pid);
  void forget(pid_t pid);
  // Reads what the socket holds now, then PID's status if it has arrived.
  std::optional<int> status(pid_t pid);
  void set_on_status(OnStatus on_status) { on_status_ = std::move(on_status); }
  // Every new process and every process exit on the machine, and a call when events were lost
  // (the socket's buffer overran): how the tree scope follows its descendants without
  // re-walking them. Empty members are not called.
  struct Follower {
    std::function<void(const ProcFork& fork)> fork;
    std::function<void(pid_t pid)> exit;
    std::function<void()> lost;
  };
  void set_follower(Follower follower) { follower_ = std::move(follower); }
  // Lets fork events through the socket's filter (off at first: only exits pass). The caller
  // re-walks what it follows after turning this on: forks before it are not seen.
  void follow_forks(bool on);
  // Reads what the socket holds now: a caller about to read a tree sees every fork so far.
  void catch_up() { drain(); }

  std::size_t kept() const { return kept_.size(); }
  // Times the kernel dropped events because the socket's buffer was full.
  std::uint64_t overruns() const { return overruns_; }

 private:
  ProcEvents(asio::io_context& io, int fd);
  void arm();
  void drain();

  asio::posix::stream_descriptor socket_;
  std::map<pid_t, std::optional<int>> kept_;
  OnStatus on_status_;
  Follower follower_;
  std::uint64_t overruns_ = 0;
  bool forks_followed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ramguard
