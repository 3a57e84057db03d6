// The server against hostile clients, each against the real daemon: pipelined
// requests with big replies, clients that never read, connection hoarding by one user, idle and
// trickling connections, the socket file removed or taken over, empty and unterminated lines,
// and PID fields out of range.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr uid_t kNobody = 65534;
constexpr uid_t kOtherUser = 65533;
constexpr const char* kStatusLine = R"({"version":1,"status":{}})";

std::uint64_t rss_bytes(pid_t pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

double mib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// A forked child running as `uid` (no groups). It runs `body`, reports what it returned, then
// stays alive holding whatever body opened until release(): the parent can act meanwhile.
class AsUser {
 public:
  AsUser(uid_t uid, const std::function<std::string()>& body) {
    int out[2], hold[2];
    if (::pipe(out) != 0 || ::pipe(hold) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(out[0]);
      ::close(hold[1]);
      std::string result;
      if (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 ||
          ::setresuid(uid, uid, uid) != 0) {
        result = "cannot drop privileges";
      } else {
        try {
          result = body();
        } catch (const std::exception& e) {
          result = std::string("exception: ") + e.what();
        }
      }
      result += '\0';
      (void)!::write(out[1], result.data(), result.size());
      char c;
      (void)!::read(hold[0], &c, 1);  // until the parent releases us
      ::_exit(0);
    }
    ::close(out[1]);
    ::close(hold[0]);
    out_ = out[0];
    hold_ = hold[1];
  }
  ~AsUser() { release(); }

  std::string result() {
    std::string text;
    char c;
    while (::read(out_, &c, 1) == 1 && c != '\0') text += c;
    return text;
  }
  void release() {
    if (pid_ <= 0) return;
    ::close(hold_);
    ::close(out_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1, hold_ = -1;
};

// A daemon whose socket other UIDs can reach, so the server's own limits are what decide.
std::unique_ptr<Daemon> open_daemon(const std::string& control_yaml) {
  auto d = Daemon::with_config("control:\n  socket_mode: \"0666\"\n" + control_yaml);
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  return d;
}

// Opens `count` connections and says hello on each: "accepted=A refused=R|<a refusal>".
std::string hoard_connections(const std::filesystem::path& socket, int count,
                              std::vector<std::unique_ptr<Wire>>& held) {
  int accepted = 0, refused = 0;
  std::string refusal;
  for (int i = 0; i < count; ++i) {
    auto wire = std::make_unique<Wire>(socket);
    try {
      wire->send(std::string(kHelloLine) + "\n");
    } catch (const std::exception&) {
      // A refused connection may be closed already; its refusal is still there to read.
    }
    const std::string line = wire->read_line();
    if (!line.empty() && parse_reply(line).has_hello()) {
      ++accepted;
    } else {
      ++refused;
      if (!line.empty()) refusal = parse_reply(line).error().message();
    }
    held.push_back(std::move(wire));
  }
  return "accepted=" + std::to_string(accepted) + " refused=" + std::to_string(refused) + "|" +
         refusal;
}

std::string hello_from(const std::filesystem::path& socket) {
  Wire wire(socket);
  try {
    wire.send(std::string(kHelloLine) + "\n");
  } catch (const std::exception&) {
    // Refused and closed already: the refusal is still there to read.
  }
  const std::string line = wire.read_line();
  if (line.empty()) return "no reply";
  const v1::Reply reply = parse_reply(line);
  return reply.has_hello() ? "hello uid " + std::to_string(reply.hello().peer_uid())
                           : reply.error().message();
}

// A run whose report reply is megabytes (a status lists only the newest boundaries, a report
// lists them all): `rounds` rounds of an aggregation phase and a round-end mark, pipelined in
// batches on one connection.
std::string make_long_run(const Daemon& d, pid_t pid, int rounds) {
  Wire wire(d.socket_path());
  const v1::Reply started =
      wire.call(R"({"version":1,"runStart":{"pid":)" + std::to_string(pid) + "}}");
  if (!started.has_run_start()) throw std::runtime_error(started.DebugString());
  const std::string id = started.run_start().run_id();
  const std::string mark = R"({"version":1,"mark":{"runId":")" + id + R"(","kind":)";
  constexpr int kBatchRounds = 100;
  for (int first = 1; first <= rounds; first += kBatchRounds) {
    std::string batch;
    int lines = 0;
    for (int round = first; round < first + kBatchRounds && round <= rounds; ++round) {
      batch += mark + R"("PHASE_BEGIN","phase":"aggregation"}})" + "\n";
      batch += mark + R"("PHASE_END","phase":"aggregation"}})" + "\n";
      batch += mark + R"("ROUND_END","round":)" + std::to_string(round) + "}}\n";
      lines += 3;
    }
    wire.send(batch);
    for (int i = 0; i < lines; ++i) {
      const std::string line = wire.read_line();
      if (line.empty() || !parse_reply(line).has_mark()) {
        throw std::runtime_error("mark not acknowledged: " + line);
      }
    }
  }
  return id;
}

std::string report_line(const std::string& run_id) {
  return R"({"version":1,"report":{"runId":")" + run_id + R"("}})";
}

// 600 report requests in one write against a long run. Before, the daemon
// answered the whole chunk before writing anything: the loop stalled for tens of seconds and
// RSS went to gigabytes. Now replies stream, one connection yields to the others, and clients
// that never read hold at most their bound.
TEST(ControlAbuse, PipelinedBigRepliesNeitherStallOthersNorGrowTheDaemon) {
  auto d = Daemon::with_config(
      "control:\n  max_requests_per_second: 100000\n  unread_output_timeout: 3s\n");
  MemChild child;
  const std::string big_request = report_line(make_long_run(*d, child.pid(), 3500));
  Wire probe(d->socket_path());
  // A report lists at most the newest 1,000 of each kind: ~400 KB, 240 MB for all 600.
  const std::string one_status = probe.roundtrip(big_request);
  ASSERT_GT(one_status.size(), 300'000u) << "the report reply should be 300 KB or more";
  ASSERT_TRUE(parse_reply(one_status).has_report());
  const std::uint64_t rss_before = rss_bytes(d->pid());

  constexpr int kRequests = 600;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> peak_rss{rss_before};
  std::thread sampler([&] {
    while (!done) {
      peak_rss = std::max<std::uint64_t>(peak_rss, rss_bytes(d->pid()));
      std::this_thread::sleep_for(5ms);
    }
  });
  int answered = 0;
  std::thread abuser([&] {
    Wire wire(d->socket_path());
    std::string burst;
    for (int i = 0; i < kRequests; ++i) burst += big_request + "\n";
    wire.send(burst);  // one write, as the attack did
    // Reads for a while (all 600 take minutes of honest work), then hangs up with requests
    // still queued: the daemon must drop them, not keep working for a client that left.
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (answered < kRequests && std::chrono::steady_clock::now() < until) {
      const std::string line = wire.read_line();
      // A cheap check: parsing megabytes of JSON here would compete with the daemon for CPU.
      if (line.rfind(R"({"version":1,"requestId":"","serverVersion":")", 0) != 0 ||
          line.find(R"(","report":{"run":)") == std::string::npos) {
        break;
      }
      ++answered;
    }
    done = true;
  });
  // A second client's hello, over and over while the abuse runs.
  std::vector<double> hello_ms;
  std::this_thread::sleep_for(50ms);
  while (!done) {
    const auto t0 = std::chrono::steady_clock::now();
    const v1::Reply hello = probe.call(kHelloLine);
    hello_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(hello.has_hello());
    std::this_thread::sleep_for(20ms);
  }
  abuser.join();
  done = true;
  sampler.join();
  EXPECT_GE(answered, 50) << "pipelined requests are answered as they are served";
  ASSERT_GE(hello_ms.size(), 10u) << "the abuse ended too fast to measure anything";
  std::sort(hello_ms.begin(), hello_ms.end());
  const double worst_ms = hello_ms.back();
  const double median_ms = hello_ms[hello_ms.size() / 2];
  const double p95_ms = hello_ms[hello_ms.size() * 95 / 100];
  std::printf(
      "[figures] status reply %zu bytes, %d pipelined, %d read in 20 s; hello n=%zu "
      "median %.1f ms p95 %.1f ms max %.1f ms; daemon RSS before %.1f MiB, peak %.1f MiB\n",
      one_status.size(), kRequests, answered, hello_ms.size(), median_ms, p95_ms, worst_ms,
      mib(rss_before), mib(peak_rss));
  // Before, a hello waited for all 600 (tens of seconds). On this shared 2-core machine the
  // scheduler alone can delay one hello past 100 ms: the bound is on the 95th percentile, and
  // no hello may wait for more than a few status requests' worth.
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's quarantine holds freed memory (hundreds of MB) by design, and the -O1
  // instrumented daemon builds each megabyte reply several times slower: the RSS, worst-case and
  // 100 ms bounds are the normal build's. Here LeakSanitizer checks the daemon at exit, and a
  // 95th percentile under 250 ms still proves no hello waits for the 600 replies (many seconds).
  (void)worst_ms;
  EXPECT_LT(p95_ms, 250.0) << "hellos waited behind another connection's requests";
#else
  EXPECT_LT(p95_ms, 100.0) << "hellos waited behind another connection's requests";
  EXPECT_LT(worst_ms, 500.0) << "a hello waited behind another connection's requests";
  EXPECT_LT(peak_rss.load(), 64u * 1024 * 1024) << "daemon RSS under abuse";
#endif

  // Three clients that send 100 status requests each and never read: each pins at most its
  // bound (1 MiB of unread replies, plus the one reply that crossed it), then is cut off.
  const std::uint64_t rss_quiet = rss_bytes(d->pid());
  std::vector<std::unique_ptr<Wire>> hoarders;
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += big_request + "\n";
  for (int i = 0; i < 3; ++i) {
    hoarders.push_back(std::make_unique<Wire>(d->socket_path()));
    hoarders.back()->send(hundred);
  }
  std::uint64_t hoard_peak = rss_quiet;
  for (int i = 0; i < 40; ++i) {  // 2 s, within the 3 s unread-output timeout
    hoard_peak = std::max(hoard_peak, rss_bytes(d->pid()));
    std::this_thread::sleep_for(50ms);
  }
  std::printf("[figures] 3 non-reading clients: daemon RSS %.1f MiB before, peak %.1f MiB\n",
              mib(rss_quiet), mib(hoard_peak));
  const std::uint64_t per_client_bound = 1024 * 1024 + 2 * one_status.size();
#if defined(__SANITIZE_ADDRESS__)
  (void)per_client_bound;  // ASan's quarantine keeps freed replies resident: the normal build
                           // asserts the bound
#else
  // Measured from the daemon's peak while it served the same replies to a reading client: the
  // transient memory of building a reply is not what the hoarders pin (a CI run went 0.2 MiB
  // over a bound measured from the quiet RSS). Unbounded, 300 unread replies pin ~113 MiB.
  const std::uint64_t serving_rss = std::max<std::uint64_t>(rss_quiet, peak_rss.load());
  EXPECT_LT(hoard_peak, serving_rss + 3 * per_client_bound + 8 * 1024 * 1024)
      << "the non-reading clients pinned more than their bound";
  EXPECT_LT(hoard_peak, 64u * 1024 * 1024);
#endif
  EXPECT_TRUE(probe.call(kHelloLine).has_hello()) << "others are served meanwhile";
  // Stuck past the timeout: each is closed, with the reason logged.
  EXPECT_TRUE(eventually(
      [&] {
        const std::string log = d->log_text();
        std::size_t closed = 0;
        for (std::size_t at = log.find("unread replies"); at != std::string::npos;
             at = log.find("unread replies", at + 1)) {
          ++closed;
        }
        return closed >= 3;
      },
      15s))
      << d->log_text();
  EXPECT_NE(d->log_text().find("event=control.connection_closed"), std::string::npos);
}

// 64 idle connections from one UID took every slot, root's
// included. Now one UID gets its share, another UID still gets in, and root always does.
TEST(ControlAbuse, OneUserHoardingConnectionsLocksOutNeitherAnotherUserNorRoot) {
  auto d = open_daemon("");
  AsUser hoarder(kNobody, [&] {
    static std::vector<std::unique_ptr<Wire>> held;  // kept open until released
    return hoard_connections(d->socket_path(), 64, held);
  });
  const std::string hoarded = hoarder.result();
  EXPECT_EQ(hoarded.substr(0, hoarded.find('|')), "accepted=16 refused=48") << hoarded;
  EXPECT_NE(hoarded.find("too many connections from uid 65534 (limit 16 per user)"),
            std::string::npos)
      << hoarded;

  AsUser other(kOtherUser, [&] { return hello_from(d->socket_path()); });
  EXPECT_EQ(other.result(), "hello uid 65533");
  EXPECT_EQ(hello_from(d->socket_path()), "hello uid 0");
}

TEST(ControlAbuse, SlotsKeptForRootStayFreeWhenOtherUsersFillTheRest) {
  auto d = open_daemon("  max_connections: 24\n  max_connections_per_uid: 24\n");
  AsUser hoarder(kNobody, [&] {
    static std::vector<std::unique_ptr<Wire>> held;
    return hoard_connections(d->socket_path(), 24, held);
  });
  const std::string hoarded = hoarder.result();
  // 24 slots, 8 kept for root: the other users share 16.
  EXPECT_EQ(hoarded.substr(0, hoarded.find('|')), "accepted=16 refused=8") << hoarded;
  AsUser other(kOtherUser, [&] { return hello_from(d->socket_path()); });
  const std::string other_reply = other.result();
  EXPECT_NE(other_reply.find("too many connections (limit 24, of which 8 are kept for root)"),
            std::string::npos)
      << other_reply;
  EXPECT_EQ(hello_from(d->socket_path()), "hello uid 0");
}

// Idle connections, and ones that trickle a byte a second without finishing a request, are
// closed after the idle timeout with the reason logged.
TEST(ControlAbuse, IdleAndTricklingConnectionsAreClosedAfterTheIdleTimeout) {
  auto d = Daemon::with_config("control:\n  idle_timeout: 1s\n");
  Wire idle(d->socket_path());
  ASSERT_TRUE(idle.call(kHelloLine).has_hello());
  Wire trickle(d->socket_path());
  const auto t0 = std::chrono::steady_clock::now();
  bool trickle_closed = false;
  for (int i = 0; i < 6 && !trickle_closed; ++i) {
    try {
      trickle.send("{");
    } catch (const std::exception&) {
      trickle_closed = true;
    }
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_TRUE(idle.read_line().empty()) << "the idle connection was not closed";
  EXPECT_TRUE(trickle_closed || trickle.read_line().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_TRUE(eventually(
      [&] { return d->log_text().find("reason=\"idle: no request") != std::string::npos; }, 5s))
      << d->log_text();
  // A fresh connection is served as ever.
  Wire fresh(d->socket_path());
  EXPECT_TRUE(fresh.call(kHelloLine).has_hello());
}

// the socket file deleted while running came back never.
TEST(ControlAbuse, DeletedSocketFileIsRecreatedAndAnswers) {
  auto d = Daemon::with_config("control:\n  socket_check_interval: 200ms\n");
  struct stat before {};
  ASSERT_EQ(::stat(d->socket_path().c_str(), &before), 0);
  ASSERT_TRUE(std::filesystem::remove(d->socket_path()));
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(d->socket_path()); }, 5s))
      << d->log_text();
  struct stat after {};
  ASSERT_EQ(::stat(d->socket_path().c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, before.st_mode & 07777) << "recreated with its mode";
  EXPECT_EQ(hello_from(d->socket_path()), "hello uid 0");
  EXPECT_NE(d->log_text().find("event=control.socket_recreated"), std::string::npos);
  EXPECT_NE(d->log_text().find("the socket file was removed"), std::string::npos);
}

// ...and a daemon stopping removed whatever socket was at its path, another daemon's too.
TEST(ControlAbuse, StoppingDaemonLeavesAnotherDaemonsSocketAlone) {
  auto first = Daemon::with_config("control:\n  socket_check_interval: 1h\n");
  const auto path = first->socket_path();
  ASSERT_TRUE(std::filesystem::remove(path));
  auto second = Daemon::with_args({"--socket", path.string()});
  ASSERT_EQ(hello_from(path), "hello uid 0");
  struct stat owned {};
  ASSERT_EQ(::stat(path.c_str(), &owned), 0);

  EXPECT_EQ(first->signal_and_wait(SIGTERM), 0);
  struct stat now {};
  ASSERT_EQ(::stat(path.c_str(), &now), 0) << "the first daemon removed the second's socket";
  EXPECT_EQ(now.st_ino, owned.st_ino);
  EXPECT_EQ(hello_from(path), "hello uid 0");
  // The second removes its own socket when it stops.
  EXPECT_EQ(second->signal_and_wait(SIGTERM), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

// an empty line, and a last request without a newline before the client
// half-closes, went unanswered.
TEST(ControlAbuse, EmptyLineGetsAnErrorNamingIt) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  wire.send("\n");
  const std::string raw = wire.read_line();
  ASSERT_FALSE(raw.empty()) << "no reply to an empty line";
  const v1::Reply reply = parse_reply(raw);
  EXPECT_EQ(reply.error().code(), v1::Error::MALFORMED) << raw;
  EXPECT_NE(reply.error().message().find("empty request line"), std::string::npos) << raw;
  EXPECT_TRUE(wire.call(kHelloLine).has_hello()) << "the connection carries on";
}

TEST(ControlAbuse, LastRequestWithoutNewlineIsAnsweredBeforeClose) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  wire.send(std::string(kHelloLine) + "\n" + R"({"version":1,"requestId":"last","hello":{}})");
  ASSERT_EQ(::shutdown(wire.fd(), SHUT_WR), 0);
  EXPECT_TRUE(parse_reply(wire.read_line()).has_hello());
  const std::string last = wire.read_line();
  ASSERT_FALSE(last.empty()) << "the unterminated last request got no reply";
  EXPECT_EQ(parse_reply(last).request_id(), "last");
  EXPECT_TRUE(parse_reply(last).has_hello());
  EXPECT_TRUE(wire.read_line().empty()) << "then the daemon closes";
}

// One range check for every PID field: 4294967295 became -1 in admit (and a baseline of 0).
TEST(ControlAbuse, PidFieldsOutOfRangeAreRefusedNamingTheField) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  struct Case {
    std::string line, field;
  };
  const std::vector<Case> cases = {
      {R"({"version":1,"admit":{"estimateBytes":"1000","pid":4294967295}})", "admit.pid"},
      {R"({"version":1,"admit":{"estimateBytes":"1000","pid":4194305}})", "admit.pid"},
      {R"({"version":1,"runStart":{"pid":4294967295}})", "runStart.pid"},
      {R"({"version":1,"runStart":{"pid":2147483648}})", "runStart.pid"}};
  for (const Case& c : cases) {
    const v1::Reply reply = wire.call(c.line);
    ASSERT_TRUE(reply.has_error()) << c.line << " -> " << reply.DebugString();
    EXPECT_EQ(reply.error().code(), v1::Error::INVALID_ARGUMENT) << c.line;
    EXPECT_NE(reply.error().message().find(c.field + " "), std::string::npos)
        << reply.error().message();
    EXPECT_NE(reply.error().message().find("is out of range"), std::string::npos)
        << reply.error().message();
  }
  // Nothing was reserved by the refused admissions.
  const v1::Reply status = wire.call(kStatusLine);
  EXPECT_EQ(status.status().reservations_size(), 0) << status.DebugString();
  // In range is still accepted.
  MemChild child;
  const v1::Reply admitted = wire.call(R"({"version":1,"admit":{"estimateBytes":"1000","pid":)" +
                                       std::to_string(child.pid()) + "}}");
  EXPECT_TRUE(admitted.has_admit()) << admitted.DebugString();
}

}  // namespace
}  // namespace ramguard::testing
