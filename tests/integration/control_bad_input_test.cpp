// Bad input: every bad request gets an error reply whose code and message name the
// problem, and the daemon still answers afterwards, on the same connection and on a new one.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

struct Runs {
  std::string active;  // has phase "load" open
  std::string ended;
};

struct BadInput {
  const char* name;
  std::function<std::string(const Runs&)> line;
  v1::Error::Code code;
  std::vector<std::string> message_has;  // every one must appear in the message
};

std::string mark(const std::string& run_id, const std::string& kind, const std::string& phase) {
  return R"({"version":1,"mark":{"runId":")" + run_id + R"(","kind":")" + kind + R"(","phase":")" +
         phase + R"("}})";
}

const std::vector<BadInput>& cases() {
  static const std::vector<BadInput> kCases = {
      {"MalformedJson",
       [](const Runs&) { return R"({"version":1,"hello":{)"; },
       v1::Error::MALFORMED,
       {"malformed request"}},
      {"NotAnObject",
       [](const Runs&) { return "hello daemon"; },
       v1::Error::MALFORMED,
       {"not a JSON object", "hello daemon"}},
      {"UnknownMessageType",
       [](const Runs&) { return R"({"version":1,"frobnicate":{}})"; },
       v1::Error::UNKNOWN_COMMAND,
       {"frobnicate", "runStart"}},
      {"NoCommand",
       [](const Runs&) { return R"({"version":1})"; },
       v1::Error::UNKNOWN_COMMAND,
       {"no command", "hello"}},
      {"MissingRunId",
       [](const Runs&) { return R"({"version":1,"mark":{"kind":"PHASE_BEGIN","phase":"load"}})"; },
       v1::Error::INVALID_ARGUMENT,
       {"run id"}},
      {"MissingMarkKind",
       [](const Runs& r) { return R"({"version":1,"mark":{"runId":")" + r.active + R"("}})"; },
       v1::Error::INVALID_ARGUMENT,
       {"kind", "PHASE_BEGIN"}},
      {"MissingReservationId",
       [](const Runs&) { return R"({"version":1,"release":{}})"; },
       v1::Error::INVALID_ARGUMENT,
       {"reservation id"}},
      {"WronglyTypedPid",
       [](const Runs&) { return R"({"version":1,"runStart":{"pid":"not-a-pid"}})"; },
       v1::Error::MALFORMED,
       {"pid"}},
      {"WronglyTypedKind",
       [](const Runs& r) { return mark(r.active, "SIDEWAYS", "load"); },
       v1::Error::MALFORMED,
       {"SIDEWAYS"}},
      {"MissingVersion",
       [](const Runs&) { return R"({"hello":{}})"; },
       v1::Error::UNSUPPORTED_VERSION,
       {"version", "1"}},
      {"WrongVersion",
       [](const Runs&) { return R"({"version":7,"hello":{}})"; },
       v1::Error::UNSUPPORTED_VERSION,
       {"version 7", "version 1"}},
      {"MarkForUnknownRun",
       [](const Runs&) { return mark("r-nope", "PHASE_BEGIN", "load"); },
       v1::Error::NOT_FOUND,
       {"unknown run id 'r-nope'"}},
      {"MarkForFinishedRun",
       [](const Runs& r) { return mark(r.ended, "PHASE_BEGIN", "load"); },
       v1::Error::FAILED_PRECONDITION,
       {"already ended"}},
      {"PhaseEndWithoutBegin",
       [](const Runs& r) { return mark(r.active, "PHASE_END", "aggregation"); },
       v1::Error::FAILED_PRECONDITION,
       {"'aggregation' ended without a begin", "load"}},
      {"DuplicatePhaseBegin",
       [](const Runs& r) { return mark(r.active, "PHASE_BEGIN", "load"); },
       v1::Error::FAILED_PRECONDITION,
       {"'load' is already open"}},
      {"BadPhaseName",
       [](const Runs& r) { return mark(r.active, "PHASE_BEGIN", "Bad Phase!"); },
       v1::Error::INVALID_ARGUMENT,
       {"'Bad Phase!'", "a-z 0-9"}},
      {"PidThatDoesNotExist",
       [](const Runs&) { return R"({"version":1,"runStart":{"pid":4000000}})"; },
       v1::Error::NOT_FOUND,
       {"4000000"}},
      {"AdmitWithUnknownPlan",
       [](const Runs&) {
         return R"({"version":1,"admit":{"plan":"nope","model":{"modelBytes":"1000"}}})";
       },
       v1::Error::INVALID_ARGUMENT,
       {"unknown plan 'nope'", "fedavg"}},
      {"AdmitWithAnAllocatorThatIsNoWord",
       [](const Runs&) {
         return R"({"version":1,"admit":{"plan":"fedavg","allocator":"GNU libc 2.36",)"
                R"("model":{"modelBytes":"1000"}}})";
       },
       v1::Error::INVALID_ARGUMENT,
       {"allocator must be [a-z0-9_.-]{0,32}"}},
      {"AbsurdHostCount",
       [](const Runs&) {
         return R"({"version":1,"admit":{"plan":"fedavg","hosts":4294967295,)"
                R"("model":{"modelBytes":"1000"}}})";
       },
       v1::Error::INVALID_ARGUMENT,
       {"admit.hosts 4294967295 is out of range", "at most 1000000"}},
      {"AbsurdModelSize",
       [](const Runs&) {
         return R"({"version":1,"runStart":{"modelBytes":"18400000000000000000"}})";
       },
       v1::Error::INVALID_ARGUMENT,
       {"runStart.modelBytes 18400000000000000000 is out of range", "1 PB"}},
      {"ProbeDurationNotANumber",
       [](const Runs& r) {
         return R"({"version":1,"mark":{"runId":")" + r.active +
                R"(","kind":"ROUND_END","gc":{"rssBeforeBytes":"1","durationSeconds":"NaN"}}})";
       },
       v1::Error::INVALID_ARGUMENT,
       {"mark.gc.durationSeconds (not finite) is out of range"}},
      {"ReleaseOfUnknownReservation",
       [](const Runs&) { return R"({"version":1,"release":{"reservationId":"rsv-nope"}})"; },
       v1::Error::NOT_FOUND,
       {"unknown reservation 'rsv-nope'"}},
  };
  return kCases;
}

class ControlBadInput : public ::testing::TestWithParam<std::size_t> {
 protected:
  void SetUp() override {
    daemon_ = Daemon::with_args({});
    runs_.active = start_run(active_child_);
    const v1::Reply begun =
        parse_reply(daemon_->request_line(mark(runs_.active, "PHASE_BEGIN", "load")));
    ASSERT_TRUE(begun.has_mark()) << begun.DebugString();
    runs_.ended = start_run(ended_child_);
    v1::Request end;
    end.mutable_run_end()->set_run_id(runs_.ended);
    ASSERT_TRUE(daemon_->call(end).has_run_end());
  }

  std::string start_run(MemChild& child) {
    v1::Request start;
    start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
    const v1::Reply reply = daemon_->call(start);
    if (!reply.has_run_start()) throw std::runtime_error("run start: " + reply.DebugString());
    return reply.run_start().run_id();
  }

  MemChild active_child_, ended_child_;
  std::unique_ptr<Daemon> daemon_;
  Runs runs_;
};

TEST_P(ControlBadInput, ErrorReplyNamesTheProblemAndTheDaemonCarriesOn) {
  const BadInput& bad = cases()[GetParam()];
  Wire wire(daemon_->socket_path());
  // A good request first: the connection is established and served.
  ASSERT_TRUE(wire.call(kHelloLine).has_hello());
  const std::string raw = wire.roundtrip(bad.line(runs_));
  ASSERT_FALSE(raw.empty()) << "no reply to a bad request";
  const v1::Reply reply = parse_reply(raw);
  ASSERT_TRUE(reply.has_error()) << raw;
  EXPECT_EQ(reply.result_case(), v1::Reply::RESULT_NOT_SET) << raw;
  EXPECT_EQ(reply.error().code(), bad.code) << raw;
  for (const auto& part : bad.message_has) {
    EXPECT_NE(reply.error().message().find(part), std::string::npos)
        << "message lacks '" << part << "': " << reply.error().message();
  }
  EXPECT_EQ(reply.version(), 1u);
  EXPECT_FALSE(reply.server_version().empty());
  // The same connection carries on, and a new one is served.
  const v1::Reply same = wire.call(kHelloLine);
  EXPECT_TRUE(same.has_hello()) << same.DebugString();
  EXPECT_EQ(same.request_id(), "still-there");
  Wire fresh(daemon_->socket_path());
  EXPECT_TRUE(fresh.call(kHelloLine).has_hello());
  // Nothing about the good run changed: it is active with its phase still open.
  v1::Request status;
  status.mutable_status()->set_run_id(runs_.active);
  const v1::Reply after = daemon_->call(status);
  ASSERT_EQ(after.status().runs_size(), 1);
  EXPECT_EQ(after.status().runs(0).state(), "active");
  EXPECT_EQ(after.status().runs(0).current_phase(), "load");
}

INSTANTIATE_TEST_SUITE_P(AllBadRequests, ControlBadInput,
                         ::testing::Range<std::size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& param) {
                           return std::string(cases()[param.param].name);
                         });

// A line over the 64 KiB frame cap, sent in pieces, then a good request on the same connection.
TEST(ControlBadInputFrame, OversizedFrameIsRefusedAndTheConnectionCarriesOn) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  const std::string huge =
      R"({"version":1,"hello":{"client":")" + std::string(70 * 1024, 'x') + R"("}})";
  ASSERT_GT(huge.size(), 64u * 1024);
  for (std::size_t at = 0; at < huge.size(); at += 8192) wire.send(huge.substr(at, 8192));
  wire.send("\n");
  const v1::Reply refused = parse_reply(wire.read_line());
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().code(), v1::Error::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error().message().find("frame limit of 65536 bytes"), std::string::npos)
      << refused.error().message();
  // Exactly one reply for the oversized line: the next reply answers the next request.
  EXPECT_TRUE(wire.call(kHelloLine).has_hello());
  Wire fresh(d->socket_path());
  EXPECT_TRUE(fresh.call(kHelloLine).has_hello());
  // A line just under the cap is served.
  const std::string fits =
      R"({"version":1,"hello":{"client":")" + std::string(60 * 1024, 'y') + R"("}})";
  EXPECT_TRUE(wire.call(fits).has_hello());
}

// Several requests in one write, one of them bad: one reply each, in order.
TEST(ControlBadInputFrame, PipelinedRequestsGetOneReplyEachInOrder) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  wire.send(std::string(R"({"version":1,"requestId":"a","hello":{}})") + "\n" + "{oops\n" +
            R"({"version":1,"requestId":"c","status":{}})" + "\n");
  const v1::Reply a = parse_reply(wire.read_line());
  const v1::Reply b = parse_reply(wire.read_line());
  const v1::Reply c = parse_reply(wire.read_line());
  EXPECT_EQ(a.request_id(), "a");
  EXPECT_TRUE(a.has_hello());
  EXPECT_EQ(b.error().code(), v1::Error::MALFORMED);
  EXPECT_EQ(c.request_id(), "c");
  EXPECT_TRUE(c.has_status());
}

// Bytes that are not UTF-8, quoted back in the error, used to make libprotobuf print one line
// per request to the daemon's stderr (61,200 requests grew the log 13.5 MB). Now the reply says
// it, the daemon's log does not grow with the flood, and the daemon carries on.
TEST(ControlBadInputFlood, BytesThatAreNotUtf8DoNotGrowTheLog) {
  auto d = Daemon::with_args({});
  ASSERT_FALSE(d->wait_for_log("daemon.ready").empty());
  const std::size_t log_before = d->log_text().size();
  const std::string bad = "{\"version\":1,\"hello\":{\"client\":\"\xff\xfe\xc3(\"}}\n";
  constexpr int kRequests = 400;  // below the per-connection rate limit's burst
  Wire wire(d->socket_path());
  std::string burst;
  for (int i = 0; i < kRequests; ++i) burst += bad;
  wire.send(burst);
  for (int i = 0; i < kRequests; ++i) {
    const v1::Reply reply = parse_reply(wire.read_line());
    ASSERT_TRUE(reply.has_error()) << i;
    EXPECT_EQ(reply.error().code(), v1::Error::MALFORMED);
  }
  EXPECT_TRUE(wire.call(kHelloLine).has_hello());
  const std::string log = d->log_text();
  EXPECT_EQ(log.find("libprotobuf"), std::string::npos) << log.substr(log_before, 2000);
  EXPECT_LT(log.size() - log_before, 4096u) << log.substr(log_before, 2000);
}

}  // namespace
}  // namespace ramguard::testing
