#include "control/codec.hpp"

#include <gtest/gtest.h>

namespace ramguard::control {
namespace {

v1::Error error_of(std::string_view line) {
  Decoded d = decode_request(line);
  EXPECT_TRUE(std::holds_alternative<v1::Error>(d)) << line;
  return std::holds_alternative<v1::Error>(d) ? std::get<v1::Error>(d) : v1::Error{};
}

TEST(DecodeRequest, AcceptsEveryCommandWithNumbersOrStringsForInt64) {
  Decoded d = decode_request(
      R"({"version":1,"requestId":"7","runStart":{"pid":12,"job":"vit","modelBytes":"2500000000","labels":{"build":"final"}}})");
  ASSERT_TRUE(std::holds_alternative<v1::Request>(d));
  const auto& r = std::get<v1::Request>(d);
  EXPECT_EQ(r.request_id(), "7");
  EXPECT_EQ(r.run_start().model_bytes(), 2'500'000'000ULL);
  EXPECT_EQ(r.run_start().labels().at("build"), "final");
  EXPECT_EQ(command_name(r), "runStart");

  Decoded d2 = decode_request(R"({"version":1,"admit":{"estimateBytes":11100000000}})");
  ASSERT_TRUE(std::holds_alternative<v1::Request>(d2));
  EXPECT_EQ(std::get<v1::Request>(d2).admit().estimate_bytes(), 11'100'000'000ULL);

  const std::string id64(64, '7');  // a request id at its limit is taken
  Decoded d3 = decode_request(R"({"version":1,"requestId":")" + id64 + R"(","hello":{}})");
  ASSERT_TRUE(std::holds_alternative<v1::Request>(d3));
  EXPECT_EQ(std::get<v1::Request>(d3).request_id(), id64);
}

TEST(DecodeRequest, NamesTheProblem) {
  struct Case {
    const char* line;
    v1::Error::Code code;
    const char* needle;
  };
  const Case cases[] = {
      {"", v1::Error::MALFORMED, "empty"},
      {"hello", v1::Error::MALFORMED, "not a JSON object"},
      {"{\"version\":1,", v1::Error::MALFORMED, "malformed"},
      {R"({"status":{}})", v1::Error::UNSUPPORTED_VERSION, "no \"version\""},
      {R"({"version":2,"status":{}})", v1::Error::UNSUPPORTED_VERSION, "version 2"},
      {R"({"version":1})", v1::Error::UNKNOWN_COMMAND, "no command"},
      {R"({"version":1,"frobnicate":{}})", v1::Error::UNKNOWN_COMMAND, "frobnicate"},
      {R"({"version":1,"runStart":{"pid":"abc"}})", v1::Error::MALFORMED, "pid"},
      {R"({"version":1,"mark":{"kind":"SIDEWAYS"}})", v1::Error::MALFORMED, "kind"},
      {R"({"version":1,"runStart":{"modelBytes":-5}})", v1::Error::MALFORMED, "model_bytes"},
      {R"({"version":1,"requestId":"12345678901234567890123456789012345678901234567890123456789012345","hello":{}})",
       v1::Error::INVALID_ARGUMENT, "requestId of 65 bytes is out of range: at most 64 bytes"},
  };
  for (const Case& c : cases) {
    v1::Error e = error_of(c.line);
    EXPECT_EQ(e.code(), c.code) << c.line << " -> " << e.message();
    EXPECT_NE(e.message().find(c.needle), std::string::npos) << c.line << " -> " << e.message();
  }
}

TEST(DecodeRequest, SurvivesHostileInput) {
  std::string deep(10000, '[');
  (void)decode_request("{\"version\":1,\"hello\":" + deep);
  std::string binary("{\"version\":1,\"hello\":{\"client\":\"\xff\xfe\x00\x01\"}}", 38);
  (void)decode_request(binary);
  std::string huge = R"({"version":1,"hello":{"client":")" + std::string(1 << 20, 'x') + "\"}}";
  Decoded d = decode_request(huge);
  EXPECT_TRUE(std::holds_alternative<v1::Request>(d));
}

TEST(DecodeRequest, AnErrorQuotingBytesThatAreNotUtf8IsValidUtf8) {
  const v1::Error e = error_of("{\"version\":1,\"hello\":{\"client\":\"\xff\xfe\"}}");
  EXPECT_EQ(e.code(), v1::Error::MALFORMED);
  EXPECT_NE(e.message().find("\\xff\\xfe"), std::string::npos) << e.message();
  std::string wire;
  EXPECT_TRUE(e.SerializeToString(&wire));  // protobuf would log, and refuse to parse it back
  v1::Error back;
  EXPECT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(back.message(), e.message());
}

TEST(EncodeReply, PrintsZeroValuesAndEndsWithNewline) {
  v1::Reply reply;
  reply.set_version(1);
  reply.mutable_admit()->set_admitted(false);
  const std::string line = encode_reply(reply);
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(line.find("\"admitted\":false"), std::string::npos) << line;
}

}  // namespace
}  // namespace ramguard::control
