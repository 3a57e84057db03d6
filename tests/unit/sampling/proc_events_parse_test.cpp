// parse_proc_events on handcrafted netlink datagrams: exits, thread exits, other events, several
// messages in one datagram, and every kind of truncation and garbage.
#include <gtest/gtest.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstring>
#include <random>
#include <vector>

#include "sampling/exit_info.hpp"
#include "sampling/proc_events.hpp"

namespace ramguard {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct Message {
  std::uint32_t what = proc_event::PROC_EVENT_EXIT;
  pid_t pid = 1234;
  pid_t tgid = 1234;
  std::uint32_t exit_code = 0;
  std::uint16_t nl_type = NLMSG_DONE;
  std::uint32_t idx = CN_IDX_PROC;
  std::size_t event_bytes = sizeof(proc_event);  // what the connector header claims
  pid_t child = 0;                               // PROC_EVENT_FORK: the new task
  pid_t child_tgid = 0;
};

// One message as the kernel lays it out: nlmsghdr | cn_msg | proc_event.
Bytes encode(const Message& m) {
  proc_event event{};
  event.what = static_cast<decltype(event.what)>(m.what);
  event.cpu = 1;
  event.timestamp_ns = 123456789;
  event.event_data.exit.process_pid = m.pid;
  event.event_data.exit.process_tgid = m.tgid;
  event.event_data.exit.exit_code = m.exit_code;
  event.event_data.exit.exit_signal = SIGCHLD;
  if (m.what == proc_event::PROC_EVENT_FORK) {
    event.event_data.fork.parent_pid = m.pid;
    event.event_data.fork.parent_tgid = m.tgid;
    event.event_data.fork.child_pid = m.child;
    event.event_data.fork.child_tgid = m.child_tgid;
  }
  cn_msg connector{};
  connector.id.idx = m.idx;
  connector.id.val = CN_VAL_PROC;
  connector.len = static_cast<std::uint16_t>(m.event_bytes);
  nlmsghdr header{};
  header.nlmsg_len = static_cast<std::uint32_t>(NLMSG_HDRLEN + sizeof connector + m.event_bytes);
  header.nlmsg_type = m.nl_type;
  Bytes out(header.nlmsg_len);
  std::memcpy(out.data(), &header, sizeof header);
  std::memcpy(out.data() + NLMSG_HDRLEN, &connector, sizeof connector);
  std::memcpy(out.data() + NLMSG_HDRLEN + sizeof connector, &event,
              std::min(m.event_bytes, sizeof event));
  return out;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.resize(NLMSG_ALIGN(a.size()), 0);
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ProcEventsParse, ExitCodeOfAProcess) {
  const auto parsed = parse_proc_events(encode({.exit_code = 3 << 8}));
  EXPECT_TRUE(parsed.problem.empty()) << parsed.problem;
  ASSERT_EQ(parsed.exits.size(), 1u);
  EXPECT_EQ(parsed.exits[0].pid, 1234);
  EXPECT_TRUE(WIFEXITED(parsed.exits[0].wait_status));
  EXPECT_EQ(WEXITSTATUS(parsed.exits[0].wait_status), 3);
  const ExitInfo info = exit_info_from_wait_status(parsed.exits[0].wait_status);
  EXPECT_TRUE(info.status_known);
  EXPECT_EQ(info.exit_code, 3);
  EXPECT_EQ(info.signal, 0);
}

TEST(ProcEventsParse, SignalAndCoreDump) {
  const auto killed = parse_proc_events(encode({.exit_code = SIGKILL}));
  ASSERT_EQ(killed.exits.size(), 1u);
  const ExitInfo k = exit_info_from_wait_status(killed.exits[0].wait_status);
  EXPECT_EQ(k.signal, SIGKILL);
  EXPECT_FALSE(k.core_dumped);
  const auto dumped = parse_proc_events(encode({.exit_code = SIGSEGV | 0x80}));
  ASSERT_EQ(dumped.exits.size(), 1u);
  const ExitInfo d = exit_info_from_wait_status(dumped.exits[0].wait_status);
  EXPECT_EQ(d.signal, SIGSEGV);
  EXPECT_TRUE(d.core_dumped);
}

TEST(ProcEventsParse, ThreadExitIsNotTheProcessExit) {
  const auto parsed = parse_proc_events(encode({.pid = 1240, .tgid = 1234, .exit_code = 0}));
  EXPECT_TRUE(parsed.problem.empty());
  EXPECT_TRUE(parsed.exits.empty());
  EXPECT_EQ(parsed.thread_exits, 1u);
}

// A fork by any thread names the forking process (its thread group); a new thread is not a
// new process.
TEST(ProcEventsParse, ForksOfProcessesNotThreads) {
  const auto fork = parse_proc_events(encode({.what = proc_event::PROC_EVENT_FORK,
                                              .pid = 1240,
                                              .tgid = 1234,
                                              .child = 2000,
                                              .child_tgid = 2000}));
  EXPECT_TRUE(fork.problem.empty()) << fork.problem;
  EXPECT_TRUE(fork.exits.empty());
  ASSERT_EQ(fork.forks.size(), 1u);
  EXPECT_EQ(fork.forks[0].parent, 1234);
  EXPECT_EQ(fork.forks[0].child, 2000);
  const auto thread = parse_proc_events(
      encode({.what = proc_event::PROC_EVENT_FORK, .child = 2001, .child_tgid = 1234}));
  EXPECT_TRUE(thread.forks.empty());
  EXPECT_EQ(thread.other_events, 1u);
  const auto nobody = parse_proc_events(encode({.what = proc_event::PROC_EVENT_FORK}));
  EXPECT_TRUE(nobody.forks.empty());
  EXPECT_NE(nobody.problem.find("fork event names PID 0"), std::string::npos) << nobody.problem;
  auto truncated =
      encode({.what = proc_event::PROC_EVENT_FORK, .event_bytes = 20, .child = 5, .child_tgid = 5});
  EXPECT_NE(parse_proc_events(truncated).problem.find("truncated fork event"), std::string::npos);
}

TEST(ProcEventsParse, OtherEventsAndMessagesAreCountedNotTaken) {
  const auto exec = parse_proc_events(encode({.what = proc_event::PROC_EVENT_EXEC}));
  EXPECT_TRUE(exec.exits.empty());
  EXPECT_EQ(exec.other_events, 1u);
  const auto error = parse_proc_events(encode({.nl_type = NLMSG_ERROR}));
  EXPECT_TRUE(error.exits.empty());
  EXPECT_EQ(error.other_events, 1u);
  const auto foreign = parse_proc_events(encode({.idx = CN_IDX_PROC + 1}));
  EXPECT_TRUE(foreign.exits.empty());
  EXPECT_EQ(foreign.other_events, 1u);
  EXPECT_TRUE(parse_proc_events({}).problem.empty());
}

TEST(ProcEventsParse, SeveralMessagesInOneDatagram) {
  Bytes datagram =
      concat(encode({.pid = 10, .tgid = 10, .exit_code = 1 << 8}), encode({.pid = 11, .tgid = 10}));
  datagram = concat(datagram, encode({.pid = 12, .tgid = 12, .exit_code = SIGTERM}));
  const auto parsed = parse_proc_events(datagram);
  EXPECT_TRUE(parsed.problem.empty()) << parsed.problem;
  ASSERT_EQ(parsed.exits.size(), 2u);
  EXPECT_EQ(parsed.exits[0].pid, 10);
  EXPECT_EQ(WEXITSTATUS(parsed.exits[0].wait_status), 1);
  EXPECT_EQ(parsed.exits[1].pid, 12);
  EXPECT_EQ(WTERMSIG(parsed.exits[1].wait_status), SIGTERM);
  EXPECT_EQ(parsed.thread_exits, 1u);
}

TEST(ProcEventsParse, EveryTruncationIsAProblemNotAnExit) {
  const Bytes full = encode({.exit_code = 3 << 8});
  for (std::size_t n = 1; n < full.size(); ++n) {
    const auto parsed = parse_proc_events({full.data(), n});
    EXPECT_TRUE(parsed.exits.empty()) << n;
    EXPECT_FALSE(parsed.problem.empty()) << n;
  }
}

TEST(ProcEventsParse, LengthsThatLieAreProblems) {
  // Consistent headers around an event too short to hold the exit fields.
  const auto short_exit = parse_proc_events(encode({.event_bytes = 20}));
  EXPECT_TRUE(short_exit.exits.empty());
  EXPECT_NE(short_exit.problem.find("truncated exit event"), std::string::npos)
      << short_exit.problem;
  const auto short_event = parse_proc_events(encode({.event_bytes = 8}));
  EXPECT_NE(short_event.problem.find("truncated proc event"), std::string::npos);
  // The connector claims more than the message holds.
  Bytes claims = encode({});
  const std::uint16_t big = 4000;
  std::memcpy(claims.data() + NLMSG_HDRLEN + offsetof(cn_msg, len), &big, sizeof big);
  EXPECT_NE(parse_proc_events(claims).problem.find("exceeds"), std::string::npos);
  // A netlink length below its own header would loop forever if trusted.
  Bytes zero = encode({});
  const std::uint32_t tiny = 0;
  std::memcpy(zero.data(), &tiny, sizeof tiny);
  EXPECT_NE(parse_proc_events(zero).problem.find("does not fit"), std::string::npos);
  // A valid message followed by garbage keeps the valid exit and names the garbage.
  Bytes tail = concat(encode({.pid = 7, .tgid = 7}), Bytes{1, 2, 3});
  const auto parsed = parse_proc_events(tail);
  ASSERT_EQ(parsed.exits.size(), 1u);
  EXPECT_EQ(parsed.exits[0].pid, 7);
  EXPECT_NE(parsed.problem.find("truncated netlink header"), std::string::npos) << parsed.problem;
}

TEST(ProcEventsParse, RandomGarbageNeverCrashesNorInventsManyExits) {
  std::mt19937 rng(42);
  for (int i = 0; i < 5000; ++i) {
    Bytes bytes(rng() % 200);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    if (i % 2 == 0 && bytes.size() >= 4) {  // plausible lengths reach deeper into the parser
      const std::uint32_t len = static_cast<std::uint32_t>(bytes.size());
      std::memcpy(bytes.data(), &len, sizeof len);
    }
    const auto parsed = parse_proc_events(bytes);
    EXPECT_LE(parsed.exits.size(), bytes.size() / NLMSG_HDRLEN);
  }
}

}  // namespace
}  // namespace ramguard
