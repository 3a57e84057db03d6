#include "control/server.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ramguard::control {
namespace {

// Answers hello with the peer it saw, so tests can check SO_PEERCRED; a hello whose write did
// not become durable is answered with an error saying so.
class EchoHandler : public RequestHandler {
 public:
  Answer handle(const v1::Request& request, const Peer& peer) override {
    pending_ = defer_writes;
    const int flushes_before = flushes.load();
    return
        [this, hello = request.has_hello(), peer, flushes_before](v1::Reply& reply, bool durable) {
          answered_after_flush = flushes.load() > flushes_before;
          if (hello && durable) {
            reply.mutable_hello()->set_peer_pid(static_cast<std::uint32_t>(peer.pid));
            reply.mutable_hello()->set_peer_uid(peer.uid);
          } else {
            *reply.mutable_error() = v1::Error();
            reply.mutable_error()->set_code(v1::Error::UNKNOWN_COMMAND);
            reply.mutable_error()->set_message(hello ? "hello not durable"
                                                     : "test handler only knows hello");
          }
        };
  }
  bool writes_pending() const override { return pending_; }
  bool flush_writes() override {
    pending_ = false;
    ++flushes;
    return !fail_flush;
  }

  bool defer_writes = false;  // leave each request's write to flush_writes()
  bool fail_flush = false;    // flush_writes() says the writes are not durable
  std::atomic<int> flushes{0};
  std::atomic<bool> answered_after_flush{false};

 private:
  bool pending_ = false;
};

class Client {
 public:
  explicit Client(const std::filesystem::path& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(const std::string& data) {
    std::size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
      ASSERT_GT(n, 0);
      off += static_cast<std::size_t>(n);
    }
  }
  std::string read_line() {
    std::string line;
    char c;
    while (::read(fd_, &c, 1) == 1) {
      if (c == '\n') return line;
      line += c;
    }
    return line;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rg-server-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = dir_ / "ctl.sock";
  }
  void start(ServerLimits limits = {}, std::optional<gid_t> group = std::nullopt) {
    server_ = std::make_unique<ControlServer>(io_, handler_, limits, "test");
    auto status = server_->listen_unix(path_, 0660, group);
    ASSERT_TRUE(status.ok()) << status.error().message;
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    if (thread_.joinable()) {
      asio::post(io_, [this] { server_->stop(); });
      work_.reset();
      io_.stop();
      thread_.join();
    }
    std::filesystem::remove_all(dir_);
  }

  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  EchoHandler handler_;
  std::unique_ptr<ControlServer> server_;
  std::thread thread_;
  std::filesystem::path dir_, path_;
};

TEST_F(ServerTest, SocketModeIs0660AndPeerCredentialsAreKnown) {
  start();
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  Client c(path_);
  ASSERT_TRUE(c.connected());
  c.send(R"({"version":1,"requestId":"a","hello":{}})"
         "\n");
  const std::string line = c.read_line();
  EXPECT_NE(line.find("\"peerPid\":" + std::to_string(::getpid())), std::string::npos) << line;
  EXPECT_NE(line.find("\"requestId\":\"a\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"serverVersion\":\"test\""), std::string::npos) << line;
  // An id past its limit is not echoed: a megabyte of it would come back whole.
  const std::string long_id(10'000, 'i');  // within the 64 KiB frame limit
  c.send(R"({"version":1,"requestId":")" + long_id + R"(","hello":{}})" + "\n");
  const std::string refused = c.read_line();
  EXPECT_NE(refused.find("requestId of 10000 bytes is out of range"), std::string::npos)
      << refused.substr(0, 300);
  EXPECT_LT(refused.size(), 1000u) << "the id was echoed";
}

// control.socket_group: the file belongs to that group (here nogroup, 65534) with mode 0660, so
// its members may connect; without the setting it keeps the daemon's group.
TEST_F(ServerTest, SocketGroupIsGivenToTheFileAndKeptWhenItIsRecreated) {
  constexpr gid_t kGroup = 65534;
  ASSERT_NE(::getegid(), kGroup) << "the test needs a group other than its own";
  ServerLimits limits;
  limits.socket_check_interval = std::chrono::milliseconds(50);
  start(limits, kGroup);
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, kGroup);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  // Removed under the daemon's feet: the re-created file is the group's again.
  std::filesystem::remove(path_);
  bool recreated = false;
  for (int i = 0; i < 100 && !recreated; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    recreated = ::stat(path_.c_str(), &st) == 0;
  }
  ASSERT_TRUE(recreated);
  EXPECT_EQ(st.st_gid, kGroup);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  Client c(path_);
  EXPECT_TRUE(c.connected());
}

TEST(SocketFile, WithoutAGroupTheFileKeepsTheDaemonsGroup) {
  asio::io_context io;
  const auto dir =
      std::filesystem::temp_directory_path() / ("rg-socket-group-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto bound = bind_socket_file(io, dir / "ctl.sock", 0660);
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  struct stat st {};
  ASSERT_EQ(::stat((dir / "ctl.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, ::getegid());
  std::filesystem::remove_all(dir);
}

// Group commit: a request whose write the handler left pending is answered only after the
// server had it flushed (nobody else calls flush_writes here).
TEST_F(ServerTest, AReplyWithAPendingWriteGoesOutAfterTheFlush) {
  handler_.defer_writes = true;
  start();
  Client c(path_);
  ASSERT_TRUE(c.connected());
  c.send("{\"version\":1,\"hello\":{}}\n");
  EXPECT_NE(c.read_line().find("\"hello\""), std::string::npos);
  EXPECT_EQ(handler_.flushes.load(), 1);
  c.send("{\"version\":1,\"hello\":{}}\n");
  EXPECT_NE(c.read_line().find("\"hello\""), std::string::npos);
  EXPECT_EQ(handler_.flushes.load(), 2);
  EXPECT_TRUE(handler_.answered_after_flush.load());
}

// A failed flush is known before the reply is built: the handler builds it once, saying so.
TEST_F(ServerTest, AReplyWhoseFlushFailedIsBuiltKnowingIt) {
  handler_.defer_writes = true;
  handler_.fail_flush = true;
  start();
  Client c(path_);
  ASSERT_TRUE(c.connected());
  c.send("{\"version\":1,\"requestId\":\"7\",\"hello\":{}}\n");
  const std::string line = c.read_line();
  EXPECT_NE(line.find("hello not durable"), std::string::npos) << line;
  EXPECT_NE(line.find("\"requestId\":\"7\""), std::string::npos) << line;
  EXPECT_EQ(handler_.flushes.load(), 1);
  EXPECT_TRUE(handler_.answered_after_flush.load());
}

TEST_F(ServerTest, BadInputGetsAnErrorAndTheConnectionCarriesOn) {
  start();
  Client c(path_);
  c.send("not json\n");
  EXPECT_NE(c.read_line().find("MALFORMED"), std::string::npos);
  c.send(R"({"version":9,"hello":{}})"
         "\n");
  EXPECT_NE(c.read_line().find("UNSUPPORTED_VERSION"), std::string::npos);
  c.send(std::string(100 * 1024, 'x') + "\n");
  const std::string oversized = c.read_line();
  EXPECT_NE(oversized.find("RESOURCE_EXHAUSTED"), std::string::npos) << oversized;
  EXPECT_NE(oversized.find("65536"), std::string::npos) << oversized;
  // Two requests in one write, and one split across writes.
  c.send(R"({"version":1,"requestId":"1","hello":{}})"
         "\n"
         R"({"version":1,"requestId":"2",)");
  c.send(R"("hello":{}})"
         "\n");
  EXPECT_NE(c.read_line().find("\"requestId\":\"1\""), std::string::npos);
  EXPECT_NE(c.read_line().find("\"requestId\":\"2\""), std::string::npos);
}

TEST_F(ServerTest, RateLimitAnswersWithAnErrorNotADisconnect) {
  ServerLimits limits;
  limits.max_requests_per_second = 5;
  start(limits);
  Client c(path_);
  std::string burst;
  for (int i = 0; i < 20; ++i)
    burst += R"({"version":1,"hello":{}})"
             "\n";
  c.send(burst);
  int limited = 0;
  for (int i = 0; i < 20; ++i) limited += c.read_line().find("request rate") != std::string::npos;
  EXPECT_GE(limited, 10);
}

TEST_F(ServerTest, ConnectionLimitRefusesWithAReason) {
  ServerLimits limits;
  limits.max_connections = 2;
  start(limits);
  Client a(path_), b(path_);
  a.send(R"({"version":1,"hello":{}})"
         "\n");
  b.send(R"({"version":1,"hello":{}})"
         "\n");
  ASSERT_NE(a.read_line().find("hello"), std::string::npos);
  ASSERT_NE(b.read_line().find("hello"), std::string::npos);
  Client c(path_);
  EXPECT_NE(c.read_line().find("too many connections"), std::string::npos);
}

TEST_F(ServerTest, StaleSocketIsReplacedButALiveOneAndOtherFilesAreNot) {
  {  // A socket file whose daemon is gone.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);
  }
  start();
  ControlServer second(io_, handler_, {}, "test");
  auto live = second.listen_unix(path_, 0660);
  ASSERT_FALSE(live.ok());
  EXPECT_NE(live.error().message.find("another daemon"), std::string::npos);
  const auto plain = dir_ / "plain-file";
  std::ofstream(plain) << "x";
  auto not_socket = second.listen_unix(plain, 0660);
  ASSERT_FALSE(not_socket.ok());
  EXPECT_NE(not_socket.error().message.find("not a socket"), std::string::npos);
}

}  // namespace
}  // namespace ramguard::control
