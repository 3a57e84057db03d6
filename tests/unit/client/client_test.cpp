// libramguard against a fake server: framing (and its negotiation), request ids, error replies,
// timeouts, oversized and garbled replies, unreachable sockets, and the reconnect after a dropped
// connection.
#include "ramguard/client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "unit/client/fake_server.hpp"

namespace ramguard {
namespace {

using test_support::FakeServer;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

v1::Reply hello_reply() {
  v1::Reply reply;
  reply.mutable_hello()->set_protocol_version(1);
  reply.mutable_hello()->set_budget_bytes(16'000'000'000);
  reply.mutable_hello()->set_peer_pid(42);
  return reply;
}

// Runs f, which must throw ClientError, and returns it.
template <typename F>
ClientError expect_client_error(F&& f) {
  try {
    f();
  } catch (const ClientError& e) {
    return e;
  }
  ADD_FAILURE() << "expected ClientError";
  return ClientError(ClientError::Kind::kUsage, "none");
}

TEST(Client, HelloSendsOneVersionedJsonLineAndParsesTheReply) {
  FakeServer server([](const v1::Request&) { return hello_reply(); });
  Client client(server.path());
  const v1::HelloReply hello = client.hello();
  EXPECT_EQ(hello.budget_bytes(), 16'000'000'000u);
  EXPECT_EQ(hello.peer_pid(), 42u);

  const auto lines = server.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].front(), '{');
  EXPECT_EQ(lines[0].back(), '}');
  const v1::Request request = FakeServer::parse(lines[0]);
  EXPECT_EQ(request.version(), 1u);
  EXPECT_TRUE(request.has_hello());
  EXPECT_THAT(request.hello().client(), HasSubstr("ramguard-cpp"));
  EXPECT_FALSE(request.request_id().empty());
}

TEST(Client, RequestIdsAreUniqueAndRepliesMustEchoThem) {
  FakeServer server([](const v1::Request&) { return hello_reply(); });
  Client client(server.path());
  for (int i = 0; i < 5; ++i) client.hello();
  std::set<std::string> ids;
  for (const v1::Request& r : server.requests()) ids.insert(r.request_id());
  EXPECT_EQ(ids.size(), 5u);
  EXPECT_EQ(server.connections(), 1);  // one connection carries every call
}

TEST(Client, AReplyForAnotherRequestIsAProtocolErrorAndTheNextCallRecovers) {
  int calls = 0;
  FakeServer server([&calls](const std::string& line) {
    v1::Request request = FakeServer::parse(line);
    if (calls++ == 0) request.set_request_id("someone-else");
    return FakeServer::Response{FakeServer::reply_line(request, hello_reply())};
  });
  Client client(server.path());
  const ClientError e = expect_client_error([&] { client.hello(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kProtocol);
  EXPECT_THAT(e.what(), HasSubstr("someone-else"));
  EXPECT_EQ(client.hello().peer_pid(), 42u);
  EXPECT_EQ(server.connections(), 2);  // the out-of-step connection was replaced
}

TEST(Client, ErrorRepliesThrowWithTheDaemonsCodeAndMessage) {
  FakeServer server([](const v1::Request&) {
    return FakeServer::error_reply(v1::Error::NOT_FOUND, "unknown run 'r-9'");
  });
  Client client(server.path());
  ramguard::Run run(client, "r-9");
  const ClientError e = expect_client_error([&] { run.round_end(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kServer);
  EXPECT_EQ(e.code(), v1::Error::NOT_FOUND);
  EXPECT_THAT(e.what(), HasSubstr("unknown run 'r-9'"));
  EXPECT_THAT(e.what(), HasSubstr("NOT_FOUND"));
}

TEST(Client, NoReplyWithinTheTimeoutThrowsTimeoutNamingThePath) {
  FakeServer server([](const std::string&) { return FakeServer::Response{}; });  // silent
  Client client(server.path(), 200ms);
  const auto start = std::chrono::steady_clock::now();
  const ClientError e = expect_client_error([&] { client.status(); });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(e.kind(), ClientError::Kind::kTimeout);
  EXPECT_THAT(e.what(), HasSubstr(server.path()));
  EXPECT_GE(elapsed, 190ms);
  EXPECT_LT(elapsed, 3s);
}

TEST(Client, AReplyOverTheFrameLimitIsRejected) {
  FakeServer server(
      [](const std::string&) { return FakeServer::Response{std::string(4096, 'x') + "\n"}; });
  Client client(ClientOptions{.socket_path = server.path(), .max_reply_bytes = 1024});
  const ClientError e = expect_client_error([&] { client.status(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kProtocol);
  EXPECT_THAT(e.what(), HasSubstr("exceeds the frame limit of 1024 bytes"));
}

TEST(Client, AnEndlessReplyWithoutNewlineIsRejectedAtTheLimit) {
  FakeServer server([](const std::string&) {
    return FakeServer::Response{std::string(300'000, '{')};  // never a '\n'
  });
  Client client(ClientOptions{.socket_path = server.path(), .max_reply_bytes = 65536});
  const ClientError e = expect_client_error([&] { client.status(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kProtocol);
  EXPECT_THAT(e.what(), HasSubstr("65536"));
}

TEST(Client, ReportRepliesLargerThanTheRequestCapArriveWhole) {
  FakeServer server([](const v1::Request&) {
    v1::Reply reply;
    for (int i = 0; i < 5000; ++i) {
      auto* sample = reply.mutable_report()->add_samples();
      sample->set_at_unix_ms(1'700'000'000'000 + i);
      sample->set_rss_bytes(9'600'000'000u + static_cast<std::uint64_t>(i));
    }
    return reply;
  });
  Client client(server.path());
  const v1::ReportReply report = client.report("r-1", true);
  ASSERT_EQ(report.samples_size(), 5000);
  EXPECT_EQ(report.samples(4999).rss_bytes(), 9'600'004'999u);
  EXPECT_TRUE(server.requests().at(0).report().include_samples());
}

TEST(Client, GarbledRepliesAreProtocolErrorsQuotingTheText) {
  for (const std::string raw : {"not json at all\n", "{\"version\": \"one\"}\n", "[1,2]\n"}) {
    FakeServer server([raw](const std::string&) { return FakeServer::Response{raw}; });
    Client client(server.path());
    const ClientError e = expect_client_error([&] { client.hello(); });
    EXPECT_EQ(e.kind(), ClientError::Kind::kProtocol) << raw;
    EXPECT_THAT(e.what(), HasSubstr("garbled reply")) << raw;
    EXPECT_THAT(e.what(), HasSubstr(server.path())) << raw;
  }
}

TEST(Client, UnknownReplyFieldsFromANewerServerAreIgnored) {
  FakeServer server([](const std::string& line) {
    const v1::Request request = FakeServer::parse(line);
    return FakeServer::Response{
        "{\"version\":1,\"requestId\":\"" + request.request_id() +
        "\",\"futureField\":{\"x\":1},\"hello\":{\"budgetBytes\":\"7\"}}\n"};
  });
  Client client(server.path());
  EXPECT_EQ(client.hello().budget_bytes(), 7u);  // 64-bit integers arrive as strings
}

TEST(Client, AReplyCarryingAnotherCommandsResultIsAProtocolError) {
  FakeServer server([](const v1::Request&) {
    v1::Reply reply;
    reply.mutable_admit()->set_admitted(true);
    return reply;
  });
  Client client(server.path());
  const ClientError e = expect_client_error([&] { client.hello(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kProtocol);
}

TEST(Client, ConnectingToAMissingSocketNamesThePath) {
  const std::string path = "/tmp/ramguard-test-missing-" + std::to_string(::getpid()) + ".sock";
  const ClientError e = expect_client_error([&] { Client client(path); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kTransport);
  EXPECT_THAT(e.what(), HasSubstr(path));
  EXPECT_THAT(e.what(), HasSubstr("No such file"));
}

TEST(Client, ConnectionRefusedNamesThePath) {
  // A socket file nobody listens on: what a crashed daemon leaves behind.
  const std::string path = "/tmp/ramguard-test-refused-" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  const ClientError e = expect_client_error([&] { Client client(path); });
  ::unlink(path.c_str());
  EXPECT_EQ(e.kind(), ClientError::Kind::kTransport);
  EXPECT_THAT(e.what(), HasSubstr(path));
  EXPECT_THAT(e.what(), HasSubstr("Connection refused"));
}

TEST(Client, ATooLongSocketPathIsRefusedByName) {
  const std::string path = "/tmp/" + std::string(200, 'a') + ".sock";
  const ClientError e = expect_client_error([&] { Client client(path); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kTransport);
  EXPECT_THAT(e.what(), HasSubstr("1 to 107 bytes"));
}

TEST(Client, AServerThatHangsUpWithoutReplyingIsATransportError) {
  FakeServer server([](const std::string&) { return FakeServer::Response{"", true}; });
  Client client(server.path());
  const ClientError e = expect_client_error([&] { client.hello(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kTransport);
  EXPECT_THAT(e.what(), HasSubstr("closed the connection"));
}

TEST(Client, AnIdleConnectionTheServerDroppedIsReplacedTransparently) {
  FakeServer server([](const std::string& line) {
    return FakeServer::Response{FakeServer::reply_line(FakeServer::parse(line), hello_reply()),
                                true};  // reply, then hang up
  });
  Client client(server.path());
  client.hello();
  std::this_thread::sleep_for(50ms);  // let the hang-up arrive
  EXPECT_EQ(client.hello().peer_pid(), 42u);
  EXPECT_EQ(server.connections(), 2);
}

TEST(Client, ARequestOverTheFrameCapIsRefusedBeforeSending) {
  FakeServer server([](const v1::Request&) { return v1::Reply{}; });
  Client client(server.path());
  RunOptions options;
  options.labels["blob"] = std::string(70'000, 'x');
  const ClientError e = expect_client_error([&] { client.start_run(options); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kUsage);
  EXPECT_THAT(e.what(), HasSubstr("frame limit of 65536"));
  EXPECT_TRUE(server.lines().empty());
}

TEST(Client, OneClientSerializesCallsFromManyThreads) {
  FakeServer server([](const v1::Request&) { return hello_reply(); });
  Client client(server.path());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (client.hello().peer_pid() == 42u) ++ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(server.lines().size(), 100u);
}

TEST(Client, EachConnectionOffersTheBinaryFramingOnceAndKeepsJsonLinesWhenNotChosen) {
  FakeServer server(
      [](const v1::Request& r) { return r.has_hello() ? hello_reply() : v1::Reply{}; });
  Client client(server.path());
  client.status();
  client.status();
  EXPECT_EQ(server.negotiations(), 1);  // the fake daemon answered without choosing it
  ASSERT_EQ(server.lines().size(), 2u);
  EXPECT_EQ(server.lines()[1].front(), '{');  // still JSON lines
}

TEST(Client, ForceJsonLinesSendsNoOffer) {
  FakeServer server(
      [](const v1::Request& r) { return r.has_hello() ? hello_reply() : v1::Reply{}; });
  Client client(ClientOptions{.socket_path = server.path(), .force_json_lines = true});
  client.hello();
  client.status();
  EXPECT_EQ(server.negotiations(), 0);
  for (const v1::Request& request : server.requests()) {
    EXPECT_FALSE(request.has_hello() && request.hello().accept_framings_size() > 0);
  }
}

TEST(Client, ADaemonThatPredatesTheOfferRefusesItAndTheConnectionStaysOnJsonLines) {
  FakeServer server([](const std::string& line) {
    const v1::Request request = FakeServer::parse(line);
    if (request.has_hello() && request.hello().accept_framings_size() > 0) {
      // What an older ramguardd answers: it cannot parse the field, so no request id.
      v1::Reply refusal =
          FakeServer::error_reply(v1::Error::UNKNOWN_COMMAND,
                                  "unknown command or field: Cannot find field: acceptFramings");
      return FakeServer::Response{FakeServer::reply_line(v1::Request{}, refusal)};
    }
    return FakeServer::Response{FakeServer::reply_line(request, hello_reply())};
  });
  server.handle_negotiation(true);
  Client client(server.path());
  EXPECT_EQ(client.hello().peer_pid(), 42u);
  EXPECT_EQ(client.hello().peer_pid(), 42u);
  ASSERT_EQ(server.lines().size(), 3u);  // the refused offer, then two plain hellos
  EXPECT_EQ(server.requests()[0].hello().accept_framings(0), v1::FRAMING_PROTOBUF_DELIMITED);
  EXPECT_EQ(server.requests()[1].hello().accept_framings_size(), 0);
  EXPECT_EQ(server.connections(), 1);
}

TEST(Client, AnotherErrorToTheOfferIsThrownWithItsCode) {
  FakeServer server([](const std::string& line) {
    const v1::Request request = FakeServer::parse(line);
    return FakeServer::Response{
        FakeServer::reply_line(request, FakeServer::error_reply(v1::Error::RESOURCE_EXHAUSTED,
                                                                "too many connections")),
        true};
  });
  server.handle_negotiation(true);
  Client client(server.path());
  const ClientError e = expect_client_error([&] { client.status(); });
  EXPECT_EQ(e.kind(), ClientError::Kind::kServer);
  EXPECT_EQ(e.code(), v1::Error::RESOURCE_EXHAUSTED);
  EXPECT_THAT(e.what(), HasSubstr("too many connections"));
}

}  // namespace
}  // namespace ramguard
