// The binary framing (FRAMING_PROTOBUF_DELIMITED) through the real daemon: libramguard offers it
// and drives a run over it, a client that does not offer it keeps JSON lines, and a bad frame
// after the switch gets an Error reply naming the problem before the connection is closed.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>

#include "control_wire.hpp"
#include "harness.hpp"
#include "ramguard/client.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
const std::string kOffer =
    R"({"version":1,"requestId":"h","hello":{"acceptFramings":["FRAMING_PROTOBUF_DELIMITED"]}})";

std::string frame_of(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  (void)google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &stream);
  return out;
}

// The next reply frame on the connection; nothing when the daemon closed it. Read through the
// Wire's buffer: a frame may arrive in the same read as the hello reply line before it.
std::optional<v1::Reply> read_frame(Wire& wire) {
  const auto payload = wire.read_frame_payload();
  if (!payload) return std::nullopt;
  v1::Reply reply;
  if (!reply.ParseFromString(*payload))
    throw std::runtime_error("the daemon sent a frame that is not a Reply");
  return reply;
}

bool closed_by_daemon(int fd) {
  char byte;
  return ::recv(fd, &byte, 1, 0) == 0;
}

v1::Request status_request(const std::string& id) {
  v1::Request request;
  request.set_version(1);
  request.set_request_id(id);
  request.mutable_status();
  return request;
}

TEST(ControlFraming, LibramguardNegotiatesTheBinaryFramingAndRunsStartMarkEnd) {
  auto d = Daemon::with_config("");
  MemChild child;
  ramguard::Client client(d->socket_path().string());
  ramguard::Run run =
      client.start_run({.pid = static_cast<std::uint32_t>(child.pid()), .job = "framing"});
  EXPECT_GT(run.start_reply().baseline().rss_bytes(), 0u);
  const v1::MarkReply begin = run.phase_begin("aggregation");
  const std::uint64_t held = child.command("alloc update " + std::to_string(64 * kMiB));
  const v1::MarkReply end = run.phase_end("aggregation");
  EXPECT_GE(end.reading().rss_bytes(), begin.reading().rss_bytes() + 60 * kMiB);
  EXPECT_GE(static_cast<double>(end.phase_peak_bytes()), static_cast<double>(held) - 4.0 * kMiB);
  EXPECT_TRUE(end.stored());
  EXPECT_EQ(run.round_end().round(), 1u);
  const v1::RunEndReply ended = run.end();
  EXPECT_GE(ended.peak_bytes(), end.phase_peak_bytes());
  // That connection speaks the binary framing: a hello on it says so.
  EXPECT_EQ(client.hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);

  // Forced JSON lines see the same ledger.
  ramguard::Client json(
      ramguard::ClientOptions{.socket_path = d->socket_path().string(), .force_json_lines = true});
  EXPECT_EQ(json.hello().framing(), v1::FRAMING_JSON_LINES);
  const v1::StatusReply status = json.status(run.id());
  ASSERT_EQ(status.runs_size(), 1);
  EXPECT_EQ(status.runs(0).peak_bytes(), ended.peak_bytes());
  // A caller's own hello with the offer switches that connection too, and the client follows.
  v1::Request offer;
  offer.mutable_hello()->add_accept_framings(v1::FRAMING_PROTOBUF_DELIMITED);
  EXPECT_EQ(json.call(offer).hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
  EXPECT_EQ(json.status(run.id()).runs(0).peak_bytes(), ended.peak_bytes());
}

TEST(ControlFraming, AClientThatOffersNothingKeepsJsonLines) {
  auto d = Daemon::with_config("");
  Wire wire(d->socket_path());
  const v1::Reply hello = wire.call(R"({"version":1,"requestId":"1","hello":{"client":"socat"}})");
  ASSERT_TRUE(hello.has_hello());
  EXPECT_EQ(hello.hello().framing(), v1::FRAMING_JSON_LINES);
  const std::string line = wire.roundtrip(R"({"version":1,"requestId":"2","status":{}})");
  EXPECT_EQ(line.front(), '{');  // still a JSON line
  EXPECT_TRUE(parse_reply(line).has_status());
}

TEST(ControlFraming, AfterTheSwitchBothDirectionsAreFramesAndABadFrameIsNamedThenClosed) {
  auto d = Daemon::with_config("");
  Wire wire(d->socket_path());
  // The hello and a first frame in one write: the daemon reads the frame in the new framing.
  wire.send(kOffer + "\n" + frame_of(status_request("s1")));
  const v1::Reply hello = parse_reply(wire.read_line());
  EXPECT_EQ(hello.request_id(), "h");
  EXPECT_EQ(hello.hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
  auto status = read_frame(wire);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->request_id(), "s1");
  EXPECT_TRUE(status->has_status());

  // A well-framed request with a bad version: an error, and the connection carries on.
  v1::Request old = status_request("v2");
  old.set_version(2);
  wire.send(frame_of(old));
  auto refused = read_frame(wire);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error().code(), v1::Error::UNSUPPORTED_VERSION);
  wire.send(frame_of(status_request("s2")));
  ASSERT_TRUE(read_frame(wire).has_value());

  // A JSON line now is a frame of 123 bytes that is no Request: named, then the end.
  wire.send(std::string(R"({"version":1,"requestId":"late","status":{}})") + "\n" +
            std::string(100, ' '));
  auto garbled = read_frame(wire);
  ASSERT_TRUE(garbled.has_value());
  EXPECT_EQ(garbled->error().code(), v1::Error::MALFORMED);
  EXPECT_NE(garbled->error().message().find("request frame of 123 bytes is not a binary "
                                            "ramguard.v1.Request"),
            std::string::npos)
      << garbled->error().message();
  EXPECT_TRUE(closed_by_daemon(wire.fd()));
}

TEST(ControlFraming, AGarbledOrOversizedFrameGetsItsErrorAndTheConnectionCloses) {
  auto d = Daemon::with_config("");
  {
    Wire wire(d->socket_path());
    ASSERT_EQ(wire.call(kOffer).hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
    wire.send(std::string("\x03\x00\xff\xff", 4));  // a length, then an invalid tag
    auto reply = read_frame(wire);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->error().code(), v1::Error::MALFORMED);
    EXPECT_NE(reply->error().message().find("not a binary ramguard.v1.Request"), std::string::npos)
        << reply->error().message();
    EXPECT_TRUE(closed_by_daemon(wire.fd()));
  }
  {
    Wire wire(d->socket_path());
    ASSERT_EQ(wire.call(kOffer).hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
    std::string header;
    {
      google::protobuf::io::StringOutputStream stream(&header);
      google::protobuf::io::CodedOutputStream out(&stream);
      out.WriteVarint32(10 * 1024 * 1024);  // 10 MiB announced; the limit is 64 KiB
    }
    wire.send(header);
    auto reply = read_frame(wire);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->error().code(), v1::Error::RESOURCE_EXHAUSTED);
    EXPECT_NE(reply->error().message().find("10485760 bytes exceeds the frame limit of 65536"),
              std::string::npos)
        << reply->error().message();
    EXPECT_TRUE(closed_by_daemon(wire.fd()));
  }
  {
    // The client half-closes inside a frame: the error names the truncation.
    Wire wire(d->socket_path());
    ASSERT_EQ(wire.call(kOffer).hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
    const std::string frame = frame_of(status_request("cut"));
    wire.send(frame.substr(0, frame.size() - 2));
    ::shutdown(wire.fd(), SHUT_WR);
    auto reply = read_frame(wire);
    ASSERT_TRUE(reply.has_value());
    EXPECT_NE(reply->error().message().find("truncated request frame"), std::string::npos)
        << reply->error().message();
  }
  // The daemon serves on.
  EXPECT_TRUE(d->call(status_request("after")).has_status());
}

TEST(ControlFraming, OnTheTcpListenerEveryFrameStillNeedsTheToken) {
  const auto dir = make_temp_dir("framing-token");
  const std::string token = "s3cret-token-0123456789abcdef";
  std::ofstream(dir / "token") << token << "\n";
  const std::uint16_t port = free_loopback_port();
  auto d = Daemon::with_config(
      "control:\n  tcp:\n    enabled: true\n    listen: \"127.0.0.1:" + std::to_string(port) +
      "\"\n    token_file: \"" + (dir / "token").string() + "\"\n");
  Wire wire(port);
  const v1::Reply hello =
      wire.call(R"({"version":1,"token":")" + token +
                R"(","hello":{"acceptFramings":["FRAMING_PROTOBUF_DELIMITED"]}})");
  ASSERT_EQ(hello.hello().framing(), v1::FRAMING_PROTOBUF_DELIMITED);
  wire.send(frame_of(status_request("no-token")));
  auto refused = read_frame(wire);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->error().code(), v1::Error::PERMISSION_DENIED);
  v1::Request with_token = status_request("with-token");
  with_token.set_token(token);
  wire.send(frame_of(with_token));
  auto served = read_frame(wire);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->request_id(), "with-token");
  EXPECT_TRUE(served->has_status());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ramguard::testing
