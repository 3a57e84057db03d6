#pragma once
// A fake ramguardd for client tests: a thread serving a Unix socket at a temp path, answering
// each request line with whatever the test's handler returns (canned, garbled, oversized,
// nothing at all). Records every line it received. It answers libramguard's framing hello
// itself (staying on JSON lines, as a daemon may) unless the test handles hellos with offers.

#include <google/protobuf/util/json_util.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::test_support {

class FakeServer {
 public:
  struct Response {
    std::string raw;     // written as is (include the '\n' for a well-formed frame)
    bool close = false;  // close the connection after writing
  };
  using Handler = std::function<Response(const std::string& line)>;
  using ReplyHandler = std::function<v1::Reply(const v1::Request& request)>;

  explicit FakeServer(Handler handler) : handler_(std::move(handler)) {
    char dir_template[] = "/tmp/rgfake-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir_template;
    path_ = dir_ + "/ramguard.sock";
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listen_fd_, 64) != 0 || ::pipe(wake_) != 0) {
      throw std::runtime_error("fake server setup failed: " + std::string(std::strerror(errno)));
    }
    thread_ = std::thread([this] { serve(); });
  }

  // A handler that parses each request and answers with the echoed id and version 1.
  explicit FakeServer(ReplyHandler handler)
      : FakeServer(Handler([handler = std::move(handler)](const std::string& line) {
          const v1::Request request = parse(line);
          return Response{reply_line(request, handler(request))};
        })) {}

  ~FakeServer() {
    const char byte = 'x';
    [[maybe_unused]] auto n = ::write(wake_[1], &byte, 1);
    thread_.join();
    for (int fd : {listen_fd_, wake_[0], wake_[1]}) ::close(fd);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  const std::string& path() const { return path_; }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  std::vector<v1::Request> requests() const {
    std::vector<v1::Request> out;
    for (const std::string& line : lines()) out.push_back(parse(line));
    return out;
  }
  int connections() const { return connections_.load(); }
  // Hellos offering a framing that the server answered itself (not in lines()).
  int negotiations() const { return negotiations_.load(); }
  // Hand framing hellos to the handler too (a test of the negotiation itself).
  void handle_negotiation(bool yes) { handle_negotiation_ = yes; }

  static v1::Request parse(const std::string& line) {
    v1::Request request;
    if (!google::protobuf::util::JsonStringToMessage(line, &request).ok()) {
      throw std::runtime_error("fake server got a line that is not a Request: " + line);
    }
    return request;
  }

  static std::string reply_line(const v1::Request& request, v1::Reply reply) {
    reply.set_version(1);
    reply.set_request_id(request.request_id());
    reply.set_server_version("0.0.0-fake");
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(reply, &json);
    return json + "\n";
  }

  static v1::Reply error_reply(v1::Error::Code code, const std::string& message) {
    v1::Reply reply;
    reply.mutable_error()->set_code(code);
    reply.mutable_error()->set_message(message);
    return reply;
  }

 private:
  static bool is_negotiation(const std::string& line) {
    v1::Request request;
    return google::protobuf::util::JsonStringToMessage(line, &request).ok() &&
           request.has_hello() && request.hello().accept_framings_size() > 0;
  }

  void serve() {
    std::map<int, std::string> buffers;  // connection fd -> bytes not yet a full line
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (const auto& [fd, buffer] : buffers) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents != 0) break;
      if (fds[1].revents != 0) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          buffers[fd];
          ++connections_;
        }
      }
      for (std::size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (!serve_connection(fds[i].fd, buffers[fds[i].fd])) {
          ::close(fds[i].fd);
          buffers.erase(fds[i].fd);
        }
      }
    }
    for (const auto& [fd, buffer] : buffers) ::close(fd);
  }

  // Reads what is there and answers complete lines; false when the connection is done.
  bool serve_connection(int fd, std::string& buffer) {
    char chunk[65536];
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<std::size_t>(n));
    for (std::size_t newline; (newline = buffer.find('\n')) != std::string::npos;) {
      std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      if (!handle_negotiation_ && is_negotiation(line)) {
        ++negotiations_;
        v1::Reply hello;
        hello.mutable_hello()->set_protocol_version(1);
        const std::string raw = reply_line(parse(line), hello);
        if (::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(raw.size()))
          return false;
        continue;
      }
      {
        std::lock_guard lock(mutex_);
        lines_.push_back(line);
      }
      Response response;
      try {
        response = handler_(line);
      } catch (const std::exception&) {
        return false;  // a request the test did not expect: drop the connection
      }
      std::size_t sent = 0;
      while (sent < response.raw.size()) {
        const ssize_t w =
            ::send(fd, response.raw.data() + sent, response.raw.size() - sent, MSG_NOSIGNAL);
        if (w <= 0) return false;
        sent += static_cast<std::size_t>(w);
      }
      if (response.close) return false;
    }
    return true;
  }

  Handler handler_;
  std::string dir_;
  std::string path_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
  std::atomic<int> connections_{0};
  std::atomic<int> negotiations_{0};
  std::atomic<bool> handle_negotiation_{false};
};

}  // namespace ramguard::test_support
