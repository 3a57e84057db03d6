// The binary framing's pure parts: decode_frame / encode_reply_frame (frame_codec.hpp) and the
// RequestReader that splits a connection's bytes into requests in either framing.
#include "control/frame_codec.hpp"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "control/request_reader.hpp"

namespace ramguard::control {
namespace {

using Status = FrameDecoded::Status;
using google::protobuf::util::MessageDifferencer;
constexpr std::size_t kMax = 64 * 1024;

std::string frame_of(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  EXPECT_TRUE(google::protobuf::util::SerializeDelimitedToZeroCopyStream(message, &stream));
  return out;
}

v1::Request mark_request() {
  v1::Request request;
  request.set_version(1);
  request.set_request_id("cpp-1-7");
  request.mutable_mark()->set_run_id("r-20261201-abcd");
  request.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  request.mutable_mark()->set_phase("aggregation");
  request.mutable_mark()->mutable_allocator()->set_allocated_bytes(1234567890);
  return request;
}

const v1::Error& error_in(const FrameDecoded& frame) {
  EXPECT_TRUE(std::holds_alternative<v1::Error>(frame.decoded));
  static const v1::Error kNone;
  const auto* error = std::get_if<v1::Error>(&frame.decoded);
  return error != nullptr ? *error : kNone;
}

TEST(FrameCodec, ARequestFrameRoundTripsAndEveryPrefixIsIncomplete) {
  const v1::Request request = mark_request();
  const std::string frame = frame_of(request);
  for (std::size_t n = 0; n < frame.size(); ++n) {
    const FrameDecoded partial = decode_frame(std::string_view(frame).substr(0, n), kMax);
    ASSERT_EQ(partial.status, Status::kIncomplete) << n << " of " << frame.size() << " bytes";
  }
  // Two frames back to back: the first is consumed exactly.
  const FrameDecoded whole = decode_frame(frame + frame, kMax);
  ASSERT_EQ(whole.status, Status::kComplete);
  EXPECT_EQ(whole.consumed_bytes, frame.size());
  ASSERT_TRUE(std::holds_alternative<v1::Request>(whole.decoded)) << error_in(whole).message();
  EXPECT_TRUE(MessageDifferencer::Equals(std::get<v1::Request>(whole.decoded), request));
}

TEST(FrameCodec, ATruncatedFrameWaitsAndAtTheEndIsNamed) {
  const std::string frame = frame_of(mark_request());
  const std::string_view cut = std::string_view(frame).substr(0, frame.size() - 5);
  EXPECT_EQ(decode_frame(cut, kMax).status, Status::kIncomplete);
  const v1::Error error = truncated_frame_error(cut);
  EXPECT_EQ(error.code(), v1::Error::MALFORMED);
  const std::string body = std::to_string(frame.size() - 1);  // one header byte
  EXPECT_NE(error.message().find("after " + std::to_string(frame.size() - 6) + " of its " + body),
            std::string::npos)
      << error.message();
  EXPECT_NE(truncated_frame_error("\x80").message().find("inside its varint length"),
            std::string::npos);
}

TEST(FrameCodec, AnOversizedLengthIsFatalBeforeTheBodyArrives) {
  std::string header;
  google::protobuf::io::StringOutputStream stream(&header);
  {
    google::protobuf::io::CodedOutputStream out(&stream);
    out.WriteVarint32(100'000);
  }
  const FrameDecoded frame = decode_frame(header, kMax);
  ASSERT_EQ(frame.status, Status::kFatal);
  EXPECT_EQ(error_in(frame).code(), v1::Error::RESOURCE_EXHAUSTED);
  EXPECT_NE(error_in(frame).message().find("100000 bytes exceeds the frame limit of 65536"),
            std::string::npos)
      << error_in(frame).message();
}

TEST(FrameCodec, GarbageIsFatalAndNamed) {
  // Eleven bytes with the continuation bit: no varint.
  const FrameDecoded endless = decode_frame(std::string(11, '\xff'), kMax);
  ASSERT_EQ(endless.status, Status::kFatal);
  EXPECT_NE(error_in(endless).message().find("does not start with a varint length"),
            std::string::npos);
  // A valid length around a body protobuf cannot parse (an invalid tag, field number 0).
  const FrameDecoded garbled = decode_frame(std::string("\x03\x00\xff\xff", 4), kMax);
  ASSERT_EQ(garbled.status, Status::kFatal);
  EXPECT_EQ(error_in(garbled).code(), v1::Error::MALFORMED);
  EXPECT_NE(error_in(garbled).message().find("not a binary ramguard.v1.Request"),
            std::string::npos);
  EXPECT_NE(error_in(garbled).message().find(": 00ffff"), std::string::npos)
      << error_in(garbled).message();
  // A JSON line sent after the switch: '{' is a length of 123, and the text is no Request.
  const std::string json = R"({"version":1,"status":{}})"
                           "\n" +
                           std::string(200, ' ');
  const FrameDecoded text = decode_frame(json, kMax);
  EXPECT_NE(text.status, Status::kIncomplete);
  EXPECT_FALSE(error_in(text).message().empty());
}

TEST(FrameCodec, AMessageThatIsNotARequestNamesTheUnknownField) {
  v1::Reply reply;  // a Reply sent back at the daemon: field 4 (error) is no Request field
  reply.set_version(1);
  reply.mutable_error()->set_code(v1::Error::INTERNAL);
  const FrameDecoded frame = decode_frame(frame_of(reply), kMax);
  ASSERT_EQ(frame.status, Status::kComplete);  // the frame was whole: the connection goes on
  EXPECT_EQ(error_in(frame).code(), v1::Error::UNKNOWN_COMMAND);
  EXPECT_NE(error_in(frame).message().find("request field number 4"), std::string::npos)
      << error_in(frame).message();
  // A HelloReply where a HelloRequest goes: field 1 is a number, not the client string.
  v1::Reply hello;
  hello.set_version(1);
  hello.mutable_hello()->set_protocol_version(1);
  const FrameDecoded nested = decode_frame(frame_of(hello), kMax);
  EXPECT_NE(error_in(nested).message().find("request.hello field number 1"), std::string::npos)
      << error_in(nested).message();
}

TEST(FrameCodec, TheEnvelopeIsCheckedAsForJsonLines) {
  v1::Request no_version = mark_request();
  no_version.set_version(0);
  EXPECT_EQ(error_in(decode_frame(frame_of(no_version), kMax)).code(),
            v1::Error::UNSUPPORTED_VERSION);
  v1::Request no_command;
  no_command.set_version(1);
  EXPECT_NE(error_in(decode_frame(frame_of(no_command), kMax)).message().find("no command"),
            std::string::npos);
}

TEST(FrameCodec, ReplyFramesParseAsDelimitedReplies) {
  v1::Reply reply;
  reply.set_version(1);
  reply.set_request_id("x");
  reply.mutable_mark()->mutable_reading()->set_rss_bytes(1ULL << 40);
  const std::string frame = encode_reply_in(reply, v1::FRAMING_PROTOBUF_DELIMITED);
  google::protobuf::io::ArrayInputStream stream(frame.data(), static_cast<int>(frame.size()));
  v1::Reply parsed;
  ASSERT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&parsed, &stream, nullptr));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, reply));
  EXPECT_EQ(encode_reply_in(reply, v1::FRAMING_JSON_LINES).back(), '\n');
}

TEST(FrameCodec, TheBinaryFramingIsChosenOnlyWhenOffered) {
  v1::HelloRequest hello;
  EXPECT_EQ(choose_framing(hello, v1::FRAMING_JSON_LINES), v1::FRAMING_JSON_LINES);
  hello.add_accept_framings(v1::FRAMING_PROTOBUF_DELIMITED);
  EXPECT_EQ(choose_framing(hello, v1::FRAMING_JSON_LINES), v1::FRAMING_PROTOBUF_DELIMITED);
  // No way back: a later hello without the offer keeps the binary framing.
  EXPECT_EQ(choose_framing(v1::HelloRequest{}, v1::FRAMING_PROTOBUF_DELIMITED),
            v1::FRAMING_PROTOBUF_DELIMITED);
}

TEST(RequestReader, SwitchesAfterTheHelloEvenWithinOneRead) {
  RequestReader reader(kMax);
  const std::string hello =
      R"({"version":1,"hello":{"acceptFramings":["FRAMING_PROTOBUF_DELIMITED"]}})"
      "\n";
  const std::string frame = frame_of(mark_request());
  reader.append(hello + frame + frame.substr(0, 3));
  auto first = reader.next();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(std::holds_alternative<v1::Request>(first->decoded));
  EXPECT_EQ(first->framing, v1::FRAMING_JSON_LINES);
  reader.use_framing(v1::FRAMING_PROTOBUF_DELIMITED);  // as the session does after the reply
  auto second = reader.next();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->framing, v1::FRAMING_PROTOBUF_DELIMITED);
  ASSERT_TRUE(std::holds_alternative<v1::Request>(second->decoded));
  EXPECT_EQ(std::get<v1::Request>(second->decoded).mark().phase(), "aggregation");
  EXPECT_FALSE(reader.next().has_value());  // 3 bytes of the next frame
  reader.append(frame.substr(3));
  EXPECT_TRUE(reader.next().has_value());
  reader.append(frame.substr(0, 7));
  EXPECT_FALSE(reader.next().has_value());
  auto last = reader.finish();
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->close_after);
  EXPECT_NE(std::get<v1::Error>(last->decoded).message().find("truncated request frame"),
            std::string::npos);
}

TEST(RequestReader, AFatalFrameEndsReadingAndAnOversizedLineIsSkipped) {
  RequestReader lines(16);
  lines.append(std::string(40, 'x'));
  EXPECT_FALSE(lines.next().has_value());  // dropped while it lasts
  lines.append("yy\n{\"version\":1,\"status\":{}}\n");
  auto too_long = lines.next();
  ASSERT_TRUE(too_long.has_value());
  EXPECT_NE(std::get<v1::Error>(too_long->decoded).message().find("longer than the frame limit"),
            std::string::npos);
  EXPECT_FALSE(too_long->close_after);
  auto after = lines.next();  // the next line is 25 bytes: also over this tiny limit
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(std::holds_alternative<v1::Error>(after->decoded));

  RequestReader frames(kMax);
  frames.use_framing(v1::FRAMING_PROTOBUF_DELIMITED);
  frames.append(std::string(12, '\xff') + frame_of(mark_request()));
  auto fatal = frames.next();
  ASSERT_TRUE(fatal.has_value());
  EXPECT_TRUE(fatal->close_after);
  EXPECT_FALSE(frames.next().has_value());  // nothing after a lost frame is served
  EXPECT_FALSE(frames.finish().has_value());
}

}  // namespace
}  // namespace ramguard::control
