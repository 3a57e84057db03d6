// The I/O half of the proc connector: a non-blocking netlink socket read on the io_context.
#include "sampling/proc_events.hpp"

#include <arpa/inet.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "common/log.hpp"
#include "procfs/proc_fs.hpp"
#include "procfs/unique_fd.hpp"

namespace ramguard {
namespace {

// The subscription message: netlink header, connector header, then the operation.
Status send_op(int fd, std::uint32_t op) {
  std::array<std::uint8_t, NLMSG_HDRLEN + sizeof(cn_msg) + sizeof op> request{};
  nlmsghdr header{};
  header.nlmsg_len = request.size();
  header.nlmsg_type = NLMSG_DONE;
  header.nlmsg_pid = 0;  // the kernel fills in our port id
  cn_msg connector{};
  connector.id.idx = CN_IDX_PROC;
  connector.id.val = CN_VAL_PROC;
  connector.len = sizeof op;
  std::memcpy(request.data(), &header, sizeof header);
  std::memcpy(request.data() + NLMSG_HDRLEN, &connector, sizeof connector);
  std::memcpy(request.data() + NLMSG_HDRLEN + sizeof connector, &op, sizeof op);
  if (::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    return Error{"proc connector subscription: " + errno_text(errno)};
  }
  return ok_status();
}

// Lets only whole-process exits through, and new processes when `forks` (a tree scope is
// followed), so a machine busy forking and starting threads costs the daemon nothing it does
// not need: classic BPF, whose absolute loads read big-endian words.
void attach_filter(int fd, bool forks) {
  constexpr std::uint32_t kEvent = NLMSG_HDRLEN + sizeof(cn_msg);
  constexpr std::uint32_t kData = kEvent + offsetof(proc_event, event_data);
  using Exit = decltype(proc_event{}.event_data.exit);
  using Fork = decltype(proc_event{}.event_data.fork);
  constexpr std::uint32_t kWhat = kEvent + offsetof(proc_event, what);
  // No event has this type: with forks off, the fork branch never matches.
  const std::uint32_t fork_what = forks ? htonl(proc_event::PROC_EVENT_FORK) : 0xffffffffU;
  std::array<sock_filter, 15> program{{
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kWhat),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl(proc_event::PROC_EVENT_EXIT), 0, 5),  // else 7
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kData + offsetof(Exit, process_pid)),
      BPF_STMT(BPF_ST, 0),
      BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kData + offsetof(Exit, process_tgid)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 6, 7),          // pid != tgid: a thread's exit, drop
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, fork_what, 0, 6),  // else drop
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kData + offsetof(Fork, child_pid)),
      BPF_STMT(BPF_ST, 0),
      BPF_STMT(BPF_LDX | BPF_W | BPF_MEM, 0),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kData + offsetof(Fork, child_tgid)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 1),  // a new thread, not a process: drop
      BPF_STMT(BPF_RET | BPF_K, 0xffffffffU),
      BPF_STMT(BPF_RET | BPF_K, 0),
  }};
  sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof fprog) != 0) {
    log::info("exit.proc_connector_unfiltered", {{"reason", errno_text(errno)}});
  }
}

}  // namespace

Result<std::unique_ptr<ProcEvents>> ProcEvents::open(asio::io_context& io) {
  const std::string what = "proc connector (exit status of non-children)";
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (!fd.valid()) {
    const int err = errno;
    return Error{what + ": " +
                 (err == EPROTONOSUPPORT ? std::string("this kernel has no netlink connector")
                                         : "socket: " + errno_text(err))};
  }
  // Bursts of exits must not overflow the queue between two reads; root may exceed rmem_max.
  const int bytes = 1 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0) {
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }
  attach_filter(fd.get(), false);
  sockaddr_nl address{};
  address.nl_family = AF_NETLINK;
  address.nl_groups = CN_IDX_PROC;
  address.nl_pid = 0;  // let the kernel pick a port id: getpid() may be taken
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    return Error{what + ": " +
                 (err == EPERM ? std::string("not permitted (listening needs CAP_NET_ADMIN)")
                               : "bind: " + errno_text(err))};
  }
  if (auto s = send_op(fd.get(), PROC_CN_MCAST_LISTEN); !s)
    return Error{what + ": " + s.error().message};
  std::unique_ptr<ProcEvents> events(new ProcEvents(io, fd.release()));
  events->arm();
  return events;
}

ProcEvents::ProcEvents(asio::io_context& io, int fd) : socket_(io, fd) {}

ProcEvents::~ProcEvents() {
  *alive_ = false;
  // The kernel counts listeners and stops building events when none is left.
  (void)send_op(socket_.native_handle(), PROC_CN_MCAST_IGNORE);
  asio::error_code ignored;
  socket_.close(ignored);
}

void ProcEvents::arm() {
  socket_.async_wait(asio::posix::stream_descriptor::wait_read,
                     [this, alive = alive_](const asio::error_code& ec) {
                       if (!*alive || ec) return;
                       drain();
                       arm();
                     });
}

void ProcEvents::follow_forks(bool on) {
  if (on == forks_followed_) return;
  forks_followed_ = on;
  attach_filter(socket_.native_handle(), on);
}

void ProcEvents::keep(pid_t pid) {
  drain();
  kept_[pid] = std::nullopt;
}

void ProcEvents::forget(pid_t pid) {
  kept_.erase(pid);
}

std::optional<int> ProcEvents::status(pid_t pid) {
  drain();
  auto it = kept_.find(pid);
  return it == kept_.end() ? std::nullopt : it->second;
}

void ProcEvents::drain() {
  std::array<std::uint8_t, 8192> buffer;
  // Bounded per call so that a flood cannot starve the rest of the io_context.
  for (int i = 0; i < 4096; ++i) {
    sockaddr_nl from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(socket_.native_handle(), buffer.data(), buffer.size(),
                                 MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {  // the kernel dropped events; some exit may go unknown
        if (overruns_++ == 0)
          log::warning("exit.proc_connector_overrun",
                       {{"effect", "some exit statuses may be unknown"}});
        if (follower_.lost) follower_.lost();
        continue;
      }
      return;  // EAGAIN: empty
    }
    if (from.nl_pid != 0) continue;  // only the kernel speaks for the connector
    const auto parsed = parse_proc_events({buffer.data(), static_cast<std::size_t>(n)});
    if (!parsed.problem.empty())
      log::debug("exit.proc_connector_garbled", {{"problem", parsed.problem}});
    if (follower_.fork) {
      for (const ProcFork& fork : parsed.forks) follower_.fork(fork);
    }
    for (const ProcExit& exit : parsed.exits) {
      if (follower_.exit) follower_.exit(exit.pid);
      auto it = kept_.find(exit.pid);
      if (it == kept_.end()) continue;
      it->second = exit.wait_status;
      if (on_status_) on_status_(exit.pid, exit.wait_status);
    }
  }
}

}  // namespace ramguard
