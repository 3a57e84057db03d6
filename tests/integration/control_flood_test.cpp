// Log lines no client can flood or forge, against the real daemon: each line a request causes
// is charged to its user (a burst, then a trickle) and the drops counted on /metrics; nothing is
// logged about a run before the caller is known to own it; line separators and bidi controls
// in a run id never reach the log raw; malformed requests spend the rate limit; times, ids and
// gc figures are ranged before anything computes with them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "control_wire.hpp"
#include "harness.hpp"
#include "other_uid.hpp"

namespace ramguard::testing {
namespace {

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string late_mark(const std::string& run_id) {
  // A deadline of 1 us after 1970: every read of it is late.
  return R"({"version":1,"mark":{"runId":")" + run_id +
         R"(","kind":"PHASE_BEGIN","phase":"load","deadlineUnixUs":"1"}})";
}

std::string start_root_run(const Daemon& d, const MemChild& child) {
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_job("root-job");
  const v1::Reply r = d.call(start);
  if (!r.has_run_start()) throw std::runtime_error(r.DebugString());
  return r.run_start().run_id();
}

// The attack: 500 late marks on the user's own run, each an info line before. Now the user
// gets its burst, the rest are counted, and root's next line is still written.
TEST(ControlFlood, AUsersLinesAreLimitedAndCountedAndOtherUsersStillLog) {
  auto d = daemon_open_to_all();
  const std::string text = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    const v1::Reply started = wire.call(R"({"version":1,"runStart":{"job":"flood"}})");
    if (!started.has_run_start()) return "start: " + started.DebugString();
    std::string out;
    for (int i = 0; i < 500; ++i) {
      const v1::Reply r = wire.call(late_mark(started.run_start().run_id()));
      if (r.error().code() != v1::Error::DEADLINE_EXCEEDED) return "mark: " + r.DebugString();
    }
    // A token comes back after half a second: the next line says how many were dropped.
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    (void)wire.call(late_mark(started.run_start().run_id()));
    return std::string("ok");
  });
  ASSERT_EQ(text, "ok");
  ASSERT_FALSE(d->wait_for_log("event=log.peer_lines_suppressed").empty()) << d->log_text();
  const std::string log = d->log_text();
  const std::size_t written = count_of(log, "event=run.mark_dropped_late");
  EXPECT_GE(written, 20u) << "the burst is written";
  EXPECT_LE(written, 25u) << "20 at once, then 2 per second";
  EXPECT_NE(log.find("peer=\"uid 65534\""), std::string::npos) << log;
  EXPECT_GE(metric_value(d->scrape_metrics(), "ramguard_log_lines_suppressed_total"),
            static_cast<double>(501 - written));

  MemChild child;
  const std::string root_run = start_root_run(*d, child);
  EXPECT_FALSE(d->wait_for_log("run=" + root_run).empty()) << "root's lines still come";
}

// Before: the deadline was checked before the run and its owner, so any user could write lines
// naming root's runs, or any text.
TEST(ControlFlood, NothingIsLoggedAboutARunBeforeTheCallerIsKnownToOwnIt) {
  auto d = daemon_open_to_all();
  MemChild child;
  const std::string root_run = start_root_run(*d, child);
  const std::string text = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    std::string out = wire.roundtrip(late_mark(root_run)) + "\n";
    out += wire.roundtrip(late_mark("r-any-text-at-all")) + "\n";
    return out;
  });
  const auto got = replies_of(text);
  ASSERT_EQ(got.size(), 2u) << text;
  EXPECT_EQ(got[0].error().code(), v1::Error::PERMISSION_DENIED) << text;
  EXPECT_EQ(got[1].error().code(), v1::Error::NOT_FOUND) << text;
  // Root's own late mark is still logged: the line follows the owner check, it is not gone.
  Wire root(d->socket_path());
  EXPECT_EQ(root.call(late_mark(root_run)).error().code(), v1::Error::DEADLINE_EXCEEDED);
  ASSERT_FALSE(d->wait_for_log("event=run.mark_dropped_late").empty());
  const std::string log = d->log_text();
  EXPECT_EQ(count_of(log, "event=run.mark_dropped_late"), 1u) << log;
  EXPECT_EQ(log.find("r-any-text-at-all"), std::string::npos) << log;
}

// U+2028 starts a line for a Unicode-aware reader and U+202E reverses what follows: neither
// reaches the log (debug, so every request's error is written), a reply or a job label raw.
TEST(ControlFlood, SeparatorsAndBidiControlsNeverReachTheLogRaw) {
  auto d = daemon_open_to_all("log:\n  level: debug\n");
  const std::string forged =
      "x\xe2\x80\xa8level=error event=forged \xe2\x80\xae"
      "evil\xe2\x81\xa6";
  Wire wire(d->socket_path());
  const std::string mark_reply = wire.roundtrip(late_mark(forged));
  EXPECT_EQ(parse_reply(mark_reply).error().code(), v1::Error::NOT_FOUND) << mark_reply;
  EXPECT_NE(mark_reply.find("\\u2028"), std::string::npos) << mark_reply;
  const std::string job_reply =
      wire.roundtrip(R"({"version":1,"runStart":{"job":"j\u2028level=error"}})");
  EXPECT_EQ(parse_reply(job_reply).error().code(), v1::Error::INVALID_ARGUMENT) << job_reply;
  EXPECT_NE(job_reply.find("control character (\\\\u2028)"), std::string::npos) << job_reply;
  ASSERT_FALSE(d->wait_for_log("event=control.error").empty());
  const std::string log = d->log_text();
  for (const char* raw : {"\xe2\x80\xa8", "\xe2\x80\xae", "\xe2\x81\xa6"}) {
    EXPECT_EQ(log.find(raw), std::string::npos) << log;
  }
  EXPECT_NE(log.find("\\u2028level=error"), std::string::npos) << log;
}

// Before: 9,257 malformed requests a second, past the limit that bounds the well-formed ones.
TEST(ControlFlood, MalformedRequestsSpendTheRateLimit) {
  auto d = daemon_open_to_all("  max_requests_per_second: 50\n");
  Wire wire(d->socket_path());
  std::string burst;
  for (int i = 0; i < 200; ++i) burst += "{not json\n";
  wire.send(burst);
  int limited = 0, malformed = 0;
  for (int i = 0; i < 200; ++i) {
    const v1::Reply r = parse_reply(wire.read_line());
    if (r.error().code() == v1::Error::RESOURCE_EXHAUSTED) ++limited;
    if (r.error().code() == v1::Error::MALFORMED) ++malformed;
  }
  EXPECT_GE(limited, 140) << "a burst of 50, then 50 a second";
  EXPECT_LE(malformed, 60);
  EXPECT_GE(malformed, 50);
}

TEST(ControlFlood, TimesBeyondWhatNanosecondsHoldAreRangedBeforeTheyAreConverted) {
  auto d = daemon_open_to_all();
  MemChild child;
  const std::string run = start_root_run(*d, child);
  Wire wire(d->socket_path());
  const auto mark = [&](const std::string& kind, const std::string& field,
                        const std::string& value) {
    return wire.call(R"({"version":1,"mark":{"runId":")" + run + R"(","kind":")" + kind +
                     R"(","phase":"load",")" + field + R"(":")" + value + R"("}})");
  };
  // 2^63-1 us: converted to nanoseconds it wrapped into the past and was taken.
  const v1::Reply at = mark("PHASE_BEGIN", "atUnixUs", "9223372036854775807");
  EXPECT_EQ(at.error().code(), v1::Error::INVALID_ARGUMENT) << at.DebugString();
  EXPECT_NE(at.error().message().find("mark.atUnixUs 9223372036854775807 is out of range"),
            std::string::npos);
  // A far-future deadline is no reason to drop a mark, below the bound or past it.
  const v1::Reply far = mark("PHASE_BEGIN", "deadlineUnixUs", "4611686018427387904");
  EXPECT_TRUE(far.has_mark()) << far.DebugString();
  const v1::Reply farthest = mark("PHASE_END", "deadlineUnixUs", "9223372036854775807");
  EXPECT_TRUE(farthest.has_mark()) << farthest.DebugString();
}

// "gc.collect() freed 1000000.00 GB": below the 1 PB bound, above any node's memory.
TEST(ControlFlood, AGcFigureAboveTheNodesMemoryIsRefused) {
  auto d = daemon_open_to_all();
  MemChild child;
  const std::string run = start_root_run(*d, child);
  Wire wire(d->socket_path());
  const v1::Reply r = wire.call(
      R"({"version":1,"mark":{"runId":")" + run +
      R"(","kind":"ROUND_END","gc":{"rssBeforeBytes":"1000000000000000","rssAfterBytes":"1000"}}})");
  EXPECT_EQ(r.error().code(), v1::Error::INVALID_ARGUMENT) << r.DebugString();
  EXPECT_NE(r.error().message().find("mark.gc.rssBeforeBytes 1000000000000000 is out of range: "
                                     "at most this node's memory"),
            std::string::npos)
      << r.error().message();
}

// Before: 60 KB run ids, each looked up, echoed in the error and logged: 43.5 MB/s of log.
TEST(ControlFlood, LongIdentifiersAreRefusedBeforeAnyUse) {
  auto d = daemon_open_to_all("log:\n  level: debug\n");
  const std::string id(60'000, 'q');
  Wire wire(d->socket_path());
  for (const std::string& line :
       {late_mark(id), R"({"version":1,"runEnd":{"runId":")" + id + R"("}})",
        R"({"version":1,"release":{"reservationId":")" + id + R"("}})",
        R"({"version":1,"report":{"runId":")" + id + R"("}})"}) {
    const std::string reply = wire.roundtrip(line);
    EXPECT_EQ(parse_reply(reply).error().code(), v1::Error::INVALID_ARGUMENT) << reply.size();
    EXPECT_LT(reply.size(), 400u) << "the id is not echoed";
  }
  ASSERT_FALSE(d->wait_for_log("of 60000 bytes is out of range").empty());
  EXPECT_EQ(d->log_text().find(std::string(100, 'q')), std::string::npos);
}

}  // namespace
}  // namespace ramguard::testing
