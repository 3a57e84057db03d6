// The pure half of the proc connector: netlink bytes to exit events. Every length is checked
// against the bytes actually there; fields are copied out with memcpy because the connector
// payload (36 bytes in) is not aligned for the 64-bit timestamp.
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstring>

#include "sampling/proc_events.hpp"

namespace ramguard {
namespace {

// The exit and fork events' fields, as the kernel lays them out (members of an unnamed union).
using Exit = decltype(proc_event{}.event_data.exit);
using Fork = decltype(proc_event{}.event_data.fork);
constexpr std::size_t kEventHeader = offsetof(proc_event, event_data);
constexpr std::size_t kExitAt = kEventHeader;  // union members start at its beginning
// Kernels before 4.x sent no parent fields: the exit signal is the last field we need.
constexpr std::size_t kExitNeeded = kExitAt + offsetof(Exit, exit_signal) + sizeof(std::uint32_t);
constexpr std::size_t kForkNeeded = kEventHeader + sizeof(Fork);

template <typename T>
T load(std::span<const std::uint8_t> bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  return value;
}

std::string parse_fork(std::span<const std::uint8_t> event, ParsedProcEvents& out) {
  if (event.size() < kForkNeeded) {
    return "truncated fork event: " + std::to_string(event.size()) + " of " +
           std::to_string(kForkNeeded) + " bytes";
  }
  const auto parent = load<__kernel_pid_t>(event, kEventHeader + offsetof(Fork, parent_tgid));
  const auto child = load<__kernel_pid_t>(event, kEventHeader + offsetof(Fork, child_pid));
  const auto child_tgid = load<__kernel_pid_t>(event, kEventHeader + offsetof(Fork, child_tgid));
  if (parent <= 0 || child <= 0) return "fork event names PID " + std::to_string(child);
  if (child != child_tgid) {
    ++out.other_events;  // a new thread, not a new process
    return "";
  }
  out.forks.push_back(ProcFork{.parent = parent, .child = child});
  return "";
}

// One message's payload (after the netlink header). Returns a problem, or "" when fine.
std::string parse_message(std::uint16_t type, std::span<const std::uint8_t> payload,
                          ParsedProcEvents& out) {
  // The connector sends everything as NLMSG_DONE; errors, no-ops and overruns are not events.
  if (type != NLMSG_DONE) {
    ++out.other_events;
    return "";
  }
  if (payload.size() < sizeof(cn_msg)) {
    return "truncated connector header: " + std::to_string(payload.size()) + " of " +
           std::to_string(sizeof(cn_msg)) + " bytes";
  }
  const auto header = load<cn_msg>(payload, 0);
  if (header.id.idx != CN_IDX_PROC || header.id.val != CN_VAL_PROC) {
    ++out.other_events;
    return "";
  }
  const auto data = payload.subspan(sizeof(cn_msg));
  if (header.len > data.size()) {
    return "connector payload length " + std::to_string(header.len) + " exceeds the " +
           std::to_string(data.size()) + " bytes present";
  }
  const auto event = data.first(header.len);
  if (event.size() < kEventHeader) {
    return "truncated proc event: " + std::to_string(event.size()) + " bytes";
  }
  const auto what = load<std::uint32_t>(event, offsetof(proc_event, what));
  if (what == proc_event::PROC_EVENT_FORK) return parse_fork(event, out);
  if (what != proc_event::PROC_EVENT_EXIT) {
    ++out.other_events;
    return "";
  }
  if (event.size() < kExitNeeded) {
    return "truncated exit event: " + std::to_string(event.size()) + " of " +
           std::to_string(kExitNeeded) + " bytes";
  }
  const auto pid = load<__kernel_pid_t>(event, kExitAt + offsetof(Exit, process_pid));
  const auto tgid = load<__kernel_pid_t>(event, kExitAt + offsetof(Exit, process_tgid));
  const auto code = load<std::uint32_t>(event, kExitAt + offsetof(Exit, exit_code));
  if (pid <= 0 || tgid <= 0) return "exit event names PID " + std::to_string(pid);
  if (pid != tgid) {
    ++out.thread_exits;  // a thread ended; its process may well live on
    return "";
  }
  out.exits.push_back(ProcExit{.pid = pid, .wait_status = static_cast<int>(code)});
  return "";
}

}  // namespace

ParsedProcEvents parse_proc_events(std::span<const std::uint8_t> datagram) {
  ParsedProcEvents out;
  std::size_t offset = 0;
  while (offset < datagram.size()) {
    const std::size_t left = datagram.size() - offset;
    if (left < sizeof(nlmsghdr)) {
      out.problem = "truncated netlink header: " + std::to_string(left) + " bytes at offset " +
                    std::to_string(offset);
      break;
    }
    const auto header = load<nlmsghdr>(datagram, offset);
    if (header.nlmsg_len < NLMSG_HDRLEN || header.nlmsg_len > left) {
      out.problem = "netlink message length " + std::to_string(header.nlmsg_len) +
                    " does not fit the " + std::to_string(left) + " bytes at offset " +
                    std::to_string(offset);
      break;
    }
    const auto payload = datagram.subspan(offset + NLMSG_HDRLEN, header.nlmsg_len - NLMSG_HDRLEN);
    if (auto problem = parse_message(header.nlmsg_type, payload, out); !problem.empty()) {
      out.problem = problem + " (message at offset " + std::to_string(offset) + ")";
      break;
    }
    offset += NLMSG_ALIGN(header.nlmsg_len);
  }
  return out;
}

}  // namespace ramguard
