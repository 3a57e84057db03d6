// Runs, marks and the RAII PhaseGuard against a fake server that records what it was sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "ramguard/client.hpp"
#include "unit/client/fake_server.hpp"

namespace ramguard {
namespace {

using test_support::FakeServer;
using ::testing::HasSubstr;

// Answers like a daemon that knows run "r-1": every command gets a plausible result.
v1::Reply daemon_like(const v1::Request& request) {
  v1::Reply reply;
  switch (request.command_case()) {
    case v1::Request::kRunStart:
      reply.mutable_run_start()->set_run_id("r-1");
      reply.mutable_run_start()->mutable_baseline()->set_rss_bytes(500'000'000);
      break;
    case v1::Request::kMark:
      if (request.mark().run_id() != "r-1") {
        return FakeServer::error_reply(v1::Error::NOT_FOUND, "unknown run");
      }
      reply.mutable_mark()->set_round(3);
      reply.mutable_mark()->set_phase_peak_bytes(9'600'000'000);
      break;
    case v1::Request::kRunEnd:
      reply.mutable_run_end()->set_peak_bytes(9'600'000'000);
      break;
    case v1::Request::kAdmit:
      reply.mutable_admit()->set_admitted(true);
      reply.mutable_admit()->set_reservation_id("res-1");
      break;
    default:
      break;
  }
  return reply;
}

// Marks the server received, as "begin:phase", "end:phase", "round_end:N".
std::vector<std::string> marks(const FakeServer& server) {
  std::vector<std::string> out;
  for (const v1::Request& r : server.requests()) {
    if (!r.has_mark()) continue;
    switch (r.mark().kind()) {
      case v1::MarkRequest::PHASE_BEGIN:
        out.push_back("begin:" + r.mark().phase());
        break;
      case v1::MarkRequest::PHASE_END:
        out.push_back("end:" + r.mark().phase());
        break;
      case v1::MarkRequest::ROUND_END:
        out.push_back("round_end:" + std::to_string(r.mark().round()));
        break;
      default:
        out.push_back("?");
    }
  }
  return out;
}

TEST(ClientRun, StartRunSendsEveryFieldAndReturnsTheRunId) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run = client.start_run(RunOptions{.pid = 1234,
                                                  .job = "vit-h14",
                                                  .labels = {{"build", "final"}},
                                                  .model_bytes = 2'500'000'000,
                                                  .declared_rounds = 3,
                                                  .hosts = 2,
                                                  .reservation_id = "res-1"});
  EXPECT_EQ(run.id(), "r-1");
  EXPECT_EQ(run.start_reply().baseline().rss_bytes(), 500'000'000u);
  const v1::RunStartRequest sent = server.requests().at(0).run_start();
  EXPECT_EQ(sent.pid(), 1234u);
  EXPECT_EQ(sent.job(), "vit-h14");
  EXPECT_EQ(sent.labels().at("build"), "final");
  EXPECT_EQ(sent.model_bytes(), 2'500'000'000u);
  EXPECT_EQ(sent.declared_rounds(), 3u);
  EXPECT_EQ(sent.hosts(), 2u);
  EXPECT_EQ(sent.reservation_id(), "res-1");
}

TEST(ClientRun, AdmitSendsTheModelAndPlan) {
  FakeServer server(daemon_like);
  Client client(server.path());
  const v1::AdmitReply reply = client.admit(AdmitOptions{.job = "vit",
                                                         .parameter_count = 632'000'000,
                                                         .bytes_per_parameter = 4,
                                                         .plan = "fedavg",
                                                         .hosts = 2});
  EXPECT_TRUE(reply.admitted());
  EXPECT_EQ(reply.reservation_id(), "res-1");
  const v1::AdmitRequest sent = server.requests().at(0).admit();
  EXPECT_EQ(sent.model().parameter_count(), 632'000'000u);
  EXPECT_DOUBLE_EQ(sent.model().bytes_per_parameter(), 4.0);
  EXPECT_EQ(sent.plan(), "fedavg");
  EXPECT_EQ(sent.hosts(), 2u);
  EXPECT_EQ(sent.estimate_bytes(), 0u);
}

TEST(ClientRun, MarksCarryKindPhaseRoundAndClientFacts) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  v1::GcProbe gc;
  gc.set_rss_before_bytes(17'300'000'000);
  gc.set_rss_after_bytes(14'100'000'000);
  const v1::MarkReply reply = run.round_end(2, MarkFacts{.gc = gc});
  EXPECT_EQ(reply.round(), 3u);
  const v1::MarkRequest sent = server.requests().at(0).mark();
  EXPECT_EQ(sent.run_id(), "r-1");
  EXPECT_EQ(sent.kind(), v1::MarkRequest::ROUND_END);
  EXPECT_EQ(sent.round(), 2u);
  EXPECT_EQ(sent.gc().rss_before_bytes(), 17'300'000'000u);
  EXPECT_FALSE(sent.has_allocator());
  EXPECT_EQ(run.end().peak_bytes(), 9'600'000'000u);
  EXPECT_EQ(server.requests().at(1).run_end().run_id(), "r-1");
  EXPECT_FALSE(server.requests().at(1).run_end().has_allocator());
}

TEST(ClientRun, TheEndCarriesTheFailureAndTheAllocatorGcAndTrimFacts) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  v1::AllocatorStats stats;
  stats.set_allocator("glibc");
  stats.set_allocated_bytes(300'000'000);
  stats.set_resident_bytes(1'300'000'000);
  stats.set_retained_bytes(1'000'000'000);
  v1::TrimProbe trim;
  trim.set_rss_before_bytes(1'400'000'000);
  trim.set_rss_after_bytes(400'000'000);
  run.end(RunEndFacts{.failure = "ValueError: bad shape", .allocator = stats, .trim = trim});
  const v1::RunEndRequest sent = server.requests().at(0).run_end();
  EXPECT_EQ(sent.failure(), "ValueError: bad shape");
  EXPECT_EQ(sent.allocator().allocator(), "glibc");
  EXPECT_EQ(sent.allocator().retained_bytes(), 1'000'000'000u);
  EXPECT_EQ(sent.trim().rss_after_bytes(), 400'000'000u);
  EXPECT_FALSE(sent.has_gc());
}

TEST(PhaseGuard, MarksBeginOnConstructionAndEndOnDestruction) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  {
    auto guard = run.phase("aggregation");
    EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:aggregation"}));
  }
  run.round_end();
  EXPECT_EQ(marks(server),
            (std::vector<std::string>{"begin:aggregation", "end:aggregation", "round_end:0"}));
}

TEST(PhaseGuard, MarksEndWhileAnExceptionUnwinds) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  EXPECT_THROW(
      {
        auto guard = run.phase("synchronization");
        throw std::runtime_error("host lost");
      },
      std::runtime_error);
  EXPECT_EQ(marks(server),
            (std::vector<std::string>{"begin:synchronization", "end:synchronization"}));
}

TEST(PhaseGuard, NestedGuardsEndInReverseOrder) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  {
    auto outer = run.phase("load");
    auto inner = run.phase("load.weights");
  }
  EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:load", "begin:load.weights",
                                                     "end:load.weights", "end:load"}));
}

TEST(PhaseGuard, ExplicitEndReturnsThePeakAndTheDestructorDoesNotMarkAgain) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  {
    auto guard = run.phase("save");
    EXPECT_EQ(guard.end().phase_peak_bytes(), 9'600'000'000u);
    EXPECT_THROW(guard.end(), ClientError);  // ended once
  }
  EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:save", "end:save"}));
}

TEST(PhaseGuard, AMovedGuardEndsThePhaseOnce) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  {
    auto first = run.phase("load");
    PhaseGuard second(std::move(first));
  }
  EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:load", "end:load"}));
}

TEST(PhaseGuard, TheDestructorSwallowsAFailedEndMark) {
  int calls = 0;
  FakeServer server([&calls](const v1::Request& request) {
    if (calls++ == 1) return FakeServer::error_reply(v1::Error::FAILED_PRECONDITION, "run ended");
    return daemon_like(request);
  });
  Client client(server.path());
  ramguard::Run run(client, "r-1");
  EXPECT_NO_THROW({ auto guard = run.phase("aggregation"); });
  EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:aggregation", "end:aggregation"}));
}

TEST(PhaseGuard, AFailedBeginThrowsFromTheConstructor) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run(client, "r-unknown");
  try {
    auto guard = run.phase("load");
    FAIL() << "expected ClientError";
  } catch (const ClientError& e) {
    EXPECT_EQ(e.code(), v1::Error::NOT_FOUND);
  }
  EXPECT_EQ(marks(server), (std::vector<std::string>{"begin:load"}));  // no end for no begin
}

TEST(ClientRun, AttachTakesTheRunIdFromRamguardRun) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ::setenv("RAMGUARD_RUN", "r-1", 1);
  ramguard::Run run = ramguard::Run::attach(client);
  ::unsetenv("RAMGUARD_RUN");
  EXPECT_EQ(run.id(), "r-1");
  run.phase_begin("load");
  EXPECT_EQ(server.requests().at(0).mark().run_id(), "r-1");
  EXPECT_EQ(ramguard::Run::attach(client, "r-7").id(), "r-7");  // an explicit id wins
}

TEST(ClientRun, AttachWithoutARunIdSaysWhatToSet) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ::unsetenv("RAMGUARD_RUN");
  try {
    ramguard::Run::attach(client);
    FAIL() << "expected ClientError";
  } catch (const ClientError& e) {
    EXPECT_EQ(e.kind(), ClientError::Kind::kUsage);
    EXPECT_THAT(e.what(), HasSubstr("RAMGUARD_RUN"));
  }
}

TEST(Client, TheSocketPathComesFromRamguardSocketWhenNoneIsGiven) {
  FakeServer server(daemon_like);
  ::setenv("RAMGUARD_SOCKET", server.path().c_str(), 1);
  Client client;
  ::unsetenv("RAMGUARD_SOCKET");
  EXPECT_EQ(client.socket_path(), server.path());
  EXPECT_EQ(client.start_run({}).id(), "r-1");
}

v1::Verdict verdict(const std::string& kind, std::uint32_t round, const std::string& summary) {
  v1::Verdict v;
  v.set_kind(kind);
  v.set_round(round);
  v.set_summary(summary);
  v.set_at_unix_ms(1'714'560'000'000 + round);
  return v;
}

// on_verdict gets each verdict once, whichever reply carried it: a mark's, the end's, or the
// report end() asks for until the release verdict is there.
TEST(ClientRun, LateVerdictsAndTheReleaseReachOnVerdictOnce) {
  int reports = 0;
  FakeServer server([&reports](const v1::Request& request) {
    v1::Reply reply = daemon_like(request);
    if (request.has_mark() && request.mark().kind() == v1::MarkRequest::ROUND_END) {
      *reply.mutable_mark()->add_verdicts() = verdict("growth_warning", 2, "Floor rose");
    }
    if (request.has_report()) {
      ++reports;
      auto* run = reply.mutable_report()->mutable_run();
      *run->add_verdicts() = verdict("growth_warning", 2, "Floor rose");
      if (reports >= 2) *run->add_verdicts() = verdict("release", 3, "Release failed");
    }
    return reply;
  });
  std::vector<std::string> seen;
  Client client(
      ClientOptions{.socket_path = server.path(), .on_verdict = [&seen](const v1::Verdict& v) {
                      seen.push_back(v.kind() + ":" + std::to_string(v.round()));
                    }});
  ramguard::Run run = client.start_run({.job = "vit"});
  run.round_end();
  const v1::RunEndReply end = run.end();
  EXPECT_EQ(seen, (std::vector<std::string>{"growth_warning:2", "release:3"}));
  EXPECT_EQ(reports, 2);
  ASSERT_EQ(end.verdicts_size(), 1);
  EXPECT_EQ(end.verdicts(0).kind(), "release");
}

TEST(ClientRun, WithoutOnVerdictTheEndDoesNotWaitUnlessAsked) {
  FakeServer server(daemon_like);
  Client client(server.path());
  ramguard::Run run = client.start_run({.job = "vit"});
  run.end();
  for (const v1::Request& r : server.requests()) EXPECT_FALSE(r.has_report());
  // Asked: a bounded wait (the fake never has a release verdict).
  ramguard::Run again = client.start_run({.job = "vit"});
  const auto started = std::chrono::steady_clock::now();
  again.end({.release_wait = std::chrono::milliseconds(300)});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
  EXPECT_TRUE(server.requests().back().has_report());
}

}  // namespace
}  // namespace ramguard
