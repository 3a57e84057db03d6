// Shutting down with a request in flight: an admission waits in the dispatcher's prepare step
// for the fleet's history (a Prometheus endpoint that accepts and never answers) when SIGTERM
// comes. The daemon stops in its documented order (daemon/app/daemon.hpp): it exits 0, the
// waiting client is answered or disconnected, and the ledger opens with every mark of the run
// that was active. Under ASan a coroutine destroyed after the server it belongs to fails here.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "harness.hpp"
#include "store/store.hpp"

namespace ramguard::testing {
namespace {

// A loopback port that accepts connections and never answers: a hung Prometheus.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
      throw std::runtime_error("cannot listen on 127.0.0.1");
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    if (peer_ >= 0) ::close(peer_);
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  // True once the daemon has connected (its query is in flight), within `timeout_ms`.
  bool wait_for_query(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return false;
    peer_ = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    return peer_ >= 0;
  }

 private:
  int fd_ = -1;
  int peer_ = -1;
  std::uint16_t port_ = 0;
};

TEST(Shutdown, SigtermWhileAnAdmissionWaitsForTheFleetHistoryExitsCleanly) {
  SilentListener prometheus;
  Daemon::Options o;
  o.config_yaml = "admission:\n  history:\n    prometheus_url: http://127.0.0.1:" +
                  std::to_string(prometheus.port()) + "\n    timeout: 10s\n";
  auto d = Daemon::start(std::move(o));
  const auto state_dir = d->state_dir();

  // A run with marks, active at the stop: the ledger must have all of it.
  MemChild child;
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_job("shutdown");
  const v1::Reply started = d->call(start);
  ASSERT_FALSE(started.has_error()) << started.error().message();
  const std::string run_id = started.run_start().run_id();
  for (int i = 0; i < 3; ++i) {
    v1::Request mark;
    mark.mutable_mark()->set_run_id(run_id);
    mark.mutable_mark()->set_kind(i % 2 == 0 ? v1::MarkRequest::PHASE_BEGIN
                                             : v1::MarkRequest::PHASE_END);
    mark.mutable_mark()->set_phase("aggregation");
    const v1::Reply marked = d->call(mark);
    ASSERT_FALSE(marked.has_error()) << marked.error().message();
  }

  // An admission asking for a calibrated estimate of a job the ledger has no peak for: it waits
  // for the fleet's answer. (On a failed assertion below, the thread joins when the request
  // times out.)
  std::string admit_reply;
  std::jthread admitting([&] {
    try {
      admit_reply = d->request_line(
          R"({"version":1,"admit":{"job":"never-seen","estimateBytes":"1000000","useCalibrated":true}})");
    } catch (const std::exception& e) {
      admit_reply = std::string("disconnected: ") + e.what();
    }
  });
  ASSERT_TRUE(prometheus.wait_for_query(10'000)) << "the admission never asked the fleet";

  EXPECT_EQ(d->signal_and_wait(SIGTERM), 0) << d->log_text();
  admitting.join();
  EXPECT_NE(d->log_text().find("event=daemon.stopped"), std::string::npos) << d->log_text();
  EXPECT_EQ(d->log_text().find("ERROR: AddressSanitizer"), std::string::npos) << d->log_text();

  auto store = Store::open(state_dir);
  ASSERT_TRUE(store) << store.error().message;
  auto run = (*store)->load_run(run_id);
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->marks.size(), 4u);          // the start and three phase marks
  EXPECT_EQ(run->state, RunState::kActive);  // a stop leaves it for the next start to resume
}

}  // namespace
}  // namespace ramguard::testing
