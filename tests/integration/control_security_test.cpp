// Security of the control socket: its mode, the owner check against a client running as another
// UID (a forked child that drops to 65534 "nobody"), and the TCP listener's token.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "control_wire.hpp"
#include "harness.hpp"
#include "other_uid.hpp"

namespace ramguard::testing {
namespace {

constexpr uid_t kNobody = kNobodyUid;

// The body talks to the daemon through its own connections, as uid 65534 with no groups.
std::string as_nobody(const std::function<std::string()>& body) {
  return as_uid_nobody(body);
}

// A daemon whose socket a non-root client can reach, so the UID check is what refuses.
std::unique_ptr<Daemon> open_daemon() {
  auto d = Daemon::with_config("control:\n  socket_mode: \"0666\"\n");
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  return d;
}

std::string start_line(pid_t pid) {
  return R"({"version":1,"runStart":{"pid":)" + std::to_string(pid) + "}}";
}

TEST(ControlSecurity, SocketIsGroupOnlyByDefaultAndOthersCannotConnect) {
  auto d = Daemon::with_args({});
  struct stat st {};
  ASSERT_EQ(::stat(d->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  // Even with the directory open to all, a user outside the socket's group is kept out.
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string result = as_nobody([&] {
    try {
      Wire wire(d->socket_path());
      return std::string("connected");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  });
  EXPECT_NE(result.find("Permission denied"), std::string::npos) << result;
}

// control.socket_group: the way a non-root coordinator reaches a root daemon. The socket stays
// 0660 (no world access); its group is nogroup (65534), the group of the unprivileged client.
TEST(ControlSecurity, SocketGroupLetsItsMembersConnectWithMode0660) {
  auto d = Daemon::with_config("control:\n  socket_group: nogroup\n");
  struct stat st {};
  ASSERT_EQ(::stat(d->socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, static_cast<gid_t>(kNobody));
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string reply = as_nobody([&] {
    Wire wire(d->socket_path());
    return wire.roundtrip(R"({"version":1,"hello":{}})");
  });
  EXPECT_EQ(parse_reply(reply).hello().peer_uid(), kNobody) << reply;
}

TEST(ControlSecurity, AnotherUidCannotStartMarkOrEndRunsOnRootsProcess) {
  MemChild root_child;
  auto d = open_daemon();
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(root_child.pid()));
  const v1::Reply started = d->call(start);
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  const std::string run_id = started.run_start().run_id();

  const std::string replies = as_nobody([&] {
    Wire wire(d->socket_path());
    std::string out;
    out += wire.roundtrip(R"({"version":1,"hello":{}})") + "\n";
    // A second run on root's process (the first one is root's own).
    out += wire.roundtrip(start_line(root_child.pid())) + "\n";
    out += wire.roundtrip(R"({"version":1,"mark":{"runId":")" + run_id +
                          R"(","kind":"PHASE_BEGIN","phase":"load"}})") +
           "\n";
    out += wire.roundtrip(R"({"version":1,"runEnd":{"runId":")" + run_id + R"("}})") + "\n";
    return out;
  });
  const std::vector<v1::Reply> got = replies_of(replies);
  ASSERT_EQ(got.size(), 4u) << replies;
  EXPECT_EQ(got[0].hello().peer_uid(), kNobody) << "the daemon sees the real uid";
  const std::vector<std::string> expected = {
      "uid 65534 may not start a run on PID " + std::to_string(root_child.pid()) +
          ": it is owned by uid 0",
      "uid 65534 may not mark run " + run_id + ": its process is owned by uid 0",
      "uid 65534 may not end run " + run_id + ": its process is owned by uid 0"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i + 1].error().code(), v1::Error::PERMISSION_DENIED) << replies;
    EXPECT_NE(got[i + 1].error().message().find(expected[i]), std::string::npos)
        << got[i + 1].error().message();
  }
  // Root's run is untouched: still active, no phase opened.
  v1::Request status;
  status.mutable_status()->set_run_id(run_id);
  const v1::Reply after = d->call(status);
  EXPECT_EQ(after.status().runs(0).state(), "active");
  EXPECT_TRUE(after.status().runs(0).current_phase().empty());
}

TEST(ControlSecurity, AnotherUidMayGuardItsOwnProcess) {
  auto d = open_daemon();
  const std::string replies = as_nobody([&] {
    // A process of its own, forked after dropping privileges.
    const pid_t own = ::fork();
    if (own == 0) {
      ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    Wire wire(d->socket_path());
    std::string out = wire.roundtrip(start_line(own)) + "\n";
    const v1::Reply started = parse_reply(out);
    const std::string run_id = started.run_start().run_id();
    out += wire.roundtrip(R"({"version":1,"mark":{"runId":")" + run_id +
                          R"(","kind":"PHASE_BEGIN","phase":"load"}})") +
           "\n";
    out += wire.roundtrip(R"({"version":1,"runEnd":{"runId":")" + run_id + R"("}})") + "\n";
    ::kill(own, SIGKILL);
    ::waitpid(own, nullptr, 0);
    return out;
  });
  const std::vector<v1::Reply> got = replies_of(replies);
  ASSERT_EQ(got.size(), 3u) << replies;
  EXPECT_TRUE(got[0].has_run_start()) << replies;
  EXPECT_TRUE(got[1].has_mark()) << replies;
  EXPECT_TRUE(got[2].has_run_end()) << replies;
}

// Listening TCP ports of a process: its socket inodes matched against /proc/net/tcp{,6}.
std::set<std::string> tcp_listeners(pid_t pid) {
  std::set<std::string> inodes;
  for (const auto& fd :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<std::string> listeners;  // "ADDRHEX:PORT" as decimal port, e.g. "0100007F:9798"
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.contains(inode)) continue;
      const auto colon = local.find(':');
      listeners.insert(local.substr(0, colon) + ":" +
                       std::to_string(std::stoi(local.substr(colon + 1), nullptr, 16)));
    }
  }
  return listeners;
}

TEST(ControlSecurity, TcpListenerIsOffByDefault) {
  auto d = Daemon::with_args({});
  const auto listeners = tcp_listeners(d->pid());
  EXPECT_EQ(listeners, std::set<std::string>{"0100007F:" + std::to_string(d->metrics_port())})
      << "only the metrics endpoint listens on TCP";
}

TEST(ControlSecurity, TcpListenerRequiresTheToken) {
  const auto dir = make_temp_dir("token");
  const std::string token = "s3cret-token-0123456789abcdef";
  std::ofstream(dir / "token") << token << "\n";
  const std::uint16_t port = free_loopback_port();
  auto d = Daemon::with_config(
      "control:\n  tcp:\n    enabled: true\n    listen: \"127.0.0.1:" + std::to_string(port) +
      "\"\n    token_file: \"" + (dir / "token").string() + "\"\n");
  EXPECT_TRUE(tcp_listeners(d->pid()).contains("0100007F:" + std::to_string(port)))
      << "the control listener is on loopback";

  Wire wire(port);
  const v1::Reply without = wire.call(R"({"version":1,"hello":{}})");
  EXPECT_EQ(without.error().code(), v1::Error::PERMISSION_DENIED) << without.DebugString();
  EXPECT_NE(without.error().message().find("token"), std::string::npos);
  const v1::Reply wrong = wire.call(R"({"version":1,"token":"guess-guess-guess","hello":{}})");
  EXPECT_EQ(wrong.error().code(), v1::Error::PERMISSION_DENIED) << wrong.DebugString();
  const v1::Reply right = wire.call(R"({"version":1,"token":")" + token + R"(","hello":{}})");
  EXPECT_TRUE(right.has_hello()) << right.DebugString();
  // TCP gives no peer credentials: a run needs an explicit pid.
  const v1::Reply no_pid = wire.call(R"({"version":1,"token":")" + token + R"(","runStart":{}})");
  EXPECT_EQ(no_pid.error().code(), v1::Error::INVALID_ARGUMENT);
  EXPECT_NE(no_pid.error().message().find("TCP"), std::string::npos) << no_pid.DebugString();
  // The Unix socket still serves without a token.
  Wire local(d->socket_path());
  EXPECT_TRUE(local.call(R"({"version":1,"hello":{}})").has_hello());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ramguard::testing
