// The ramguard binary against a fake server: exit codes, output, and exec's status propagation.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "unit/cli/run_cli.hpp"
#include "unit/client/fake_server.hpp"

namespace ramguard {
namespace {

using test_support::FakeServer;
using ::testing::HasSubstr;
using ::testing::Not;

// A daemon-like fake: admits up to 10 GB estimates, starts runs as r-1, remembers run starts.
v1::Reply fake_daemon(const v1::Request& request) {
  v1::Reply reply;
  switch (request.command_case()) {
    case v1::Request::kAdmit: {
      v1::AdmitReply& a = *reply.mutable_admit();
      a.set_baseline_bytes(500'000'000);
      a.set_reserved_bytes(2'000'000'000);
      a.set_estimate_bytes(request.admit().estimate_bytes());
      a.set_budget_bytes(16'000'000'000);
      a.set_margin_bytes(1'000'000'000);
      a.set_estimate_source("given");
      a.set_admitted(request.admit().estimate_bytes() <= 10'000'000'000);
      a.set_headroom_bytes(12'500'000'000 - static_cast<std::int64_t>(a.estimate_bytes()));
      if (a.admitted()) a.set_reservation_id("res-1");
      break;
    }
    case v1::Request::kRunStart:
      reply.mutable_run_start()->set_run_id("r-1");
      break;
    case v1::Request::kRunEnd:
      reply.mutable_run_end()->set_peak_bytes(3'000'000'000);
      break;
    case v1::Request::kMark:
      if (request.mark().run_id() != "r-1") {
        return FakeServer::error_reply(v1::Error::NOT_FOUND,
                                       "unknown run '" + request.mark().run_id() + "'");
      }
      reply.mutable_mark()->set_round(1);
      reply.mutable_mark()->set_phase_peak_bytes(9'600'000'000);
      reply.mutable_mark()->set_peak_exact(true);
      reply.mutable_mark()->set_phase_duration_seconds(6.75);
      if (request.mark().phase() == "trainig") {
        reply.mutable_mark()->set_warning("phase 'trainig' is not in plan fedavg");
      }
      break;
    case v1::Request::kHello:
      reply.mutable_hello()->set_protocol_version(1);
      reply.mutable_hello()->set_budget_bytes(16'000'000'000);
      break;
    default:
      break;
  }
  return reply;
}

std::vector<v1::Request> of_kind(const FakeServer& server, v1::Request::CommandCase kind) {
  std::vector<v1::Request> out;
  for (const v1::Request& r : server.requests()) {
    if (r.command_case() == kind) out.push_back(r);
  }
  return out;
}

TEST(Cli, UsageErrorsExit2NamingTheProblem) {
  const Outcome o = run_cli({"admit", "--estimate", "16gb"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_THAT(o.err, HasSubstr("invalid size '16gb'"));
  EXPECT_TRUE(o.out.empty());
}

TEST(Cli, VersionPrintsTheProjectVersionWithoutADaemon) {
  const Outcome o = run_cli({"--socket", "/nonexistent/ramguard.sock", "--version"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, std::string("ramguard ") + RAMGUARD_PROJECT_VERSION + "\n");
  EXPECT_EQ(o.err, "");
}

TEST(Cli, AnUnreachableDaemonExits1NamingTheSocket) {
  const std::string path = "/tmp/ramguard-cli-test-none-" + std::to_string(::getpid()) + ".sock";
  const Outcome o = run_cli({"--socket", path, "status"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.err, HasSubstr(path));
}

TEST(Cli, AdmittedExits0AndPrintsEveryTerm) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "admit", "--estimate", "9.6GB"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("admitted: reservation res-1"));
  EXPECT_THAT(o.out, HasSubstr("+ estimate             9.60 GB  (given)\n"));
  EXPECT_THAT(o.out, HasSubstr("= total               12.10 GB\n"));
  EXPECT_EQ(of_kind(server, v1::Request::kAdmit).at(0).admit().estimate_bytes(), 9'600'000'000u);
}

TEST(Cli, RefusedExits3AndPrintsEveryTerm) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "admit", "--estimate", "11.1GB"});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_EQ(o.out,
            "refused: the estimate does not fit the budget\n"
            "  baseline             0.50 GB\n"
            "+ reserved             2.00 GB\n"
            "+ estimate            11.10 GB  (given)\n"
            "= total               13.60 GB\n"
            "  budget - margin     15.00 GB  (16.00 GB - 1.00 GB)\n"
            "  headroom             1.40 GB\n");
}

TEST(Cli, JsonPrintsTheReplyWithEveryField) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "admit", "--estimate", "11.1GB", "--json"});
  EXPECT_EQ(o.exit_code, 3);
  v1::AdmitReply reply;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(o.out, &reply).ok()) << o.out;
  EXPECT_FALSE(reply.admitted());
  EXPECT_EQ(reply.estimate_bytes(), 11'100'000'000u);
  EXPECT_THAT(o.out, HasSubstr("\"admitted\":false"));  // defaults are printed too
}

TEST(Cli, StartPrintsOnlyTheRunId) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "start", "--pid", "1", "--job", "vit",
                             "--label", "build=final", "--rounds", "3"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "r-1\n");
  const v1::RunStartRequest sent = of_kind(server, v1::Request::kRunStart).at(0).run_start();
  EXPECT_EQ(sent.labels().at("build"), "final");
  EXPECT_EQ(sent.declared_rounds(), 3u);
}

TEST(Cli, MarkPrintsThePhasePeakAndDaemonErrorsExit1) {
  FakeServer server(fake_daemon);
  const Outcome ok = run_cli({"--socket", server.path(), "mark", "r-1", "end", "aggregation"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "phase aggregation ended (round 1): peak 9.60 GB (exact), 6.75 s, RSS 0 B\n");
  const Outcome warned = run_cli({"--socket", server.path(), "mark", "r-1", "begin", "trainig"});
  EXPECT_EQ(warned.exit_code, 0) << "a warning is no failure";
  EXPECT_THAT(warned.out, HasSubstr("\nwarning: phase 'trainig' is not in plan fedavg\n"));
  const Outcome bad = run_cli({"--socket", server.path(), "round-end", "r-404"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("NOT_FOUND: unknown run 'r-404'"));
}

TEST(Cli, TheSocketComesFromRamguardSocket) {
  FakeServer server(fake_daemon);
  ::setenv("RAMGUARD_SOCKET", server.path().c_str(), 1);
  const Outcome o = run_cli({"hello", "--json"});
  ::unsetenv("RAMGUARD_SOCKET");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_THAT(o.out, HasSubstr("\"budgetBytes\":\"16000000000\""));
}

TEST(CliExec, ExitsWithTheChildsStatusAndEndsTheRun) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "exec", "--job", "vit", "--estimate", "2GB",
                             "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(o.exit_code, 7) << o.err;
  const auto starts = of_kind(server, v1::Request::kRunStart);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0].run_start().reservation_id(), "res-1");  // the run claims the reservation
  EXPECT_EQ(starts[0].run_start().job(), "vit");
  EXPECT_EQ(of_kind(server, v1::Request::kRunEnd).size(), 1u);
}

TEST(CliExec, TheChildRunsUnderItsOwnPidWithTheRunInItsEnvironment) {
  FakeServer server(fake_daemon);
  const std::string file = ::testing::TempDir() + "exec-env-" + std::to_string(::getpid());
  const Outcome o = run_cli({"--socket", server.path(), "exec", "--", "sh", "-c",
                             "echo $$ $RAMGUARD_RUN $RAMGUARD_SOCKET > " + file});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  const std::string seen = slurp(file);
  std::filesystem::remove(file);
  const auto starts = of_kind(server, v1::Request::kRunStart);
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(seen, std::to_string(starts[0].run_start().pid()) + " r-1 " + server.path() + "\n");
  EXPECT_TRUE(of_kind(server, v1::Request::kAdmit).empty());  // no estimate: no admission
}

TEST(CliExec, AChildKilledBySignalGives128PlusTheSignal) {
  FakeServer server(fake_daemon);
  const Outcome o = run_cli({"--socket", server.path(), "exec", "--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(o.exit_code, 128 + SIGKILL) << o.err;
  EXPECT_EQ(of_kind(server, v1::Request::kRunEnd).size(), 1u);
}

TEST(CliExec, RefusedAdmissionExits3WithoutRunningTheCommand) {
  FakeServer server(fake_daemon);
  const std::string marker = ::testing::TempDir() + "exec-ran-" + std::to_string(::getpid());
  const Outcome o =
      run_cli({"--socket", server.path(), "exec", "--estimate", "11.1GB", "--", "touch", marker});
  EXPECT_EQ(o.exit_code, 3);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_THAT(o.err, HasSubstr("refused"));
  EXPECT_THAT(o.err, HasSubstr("not starting 'touch'"));
  EXPECT_TRUE(of_kind(server, v1::Request::kRunStart).empty());
}

TEST(CliExec, AFailedRunStartReleasesTheReservationAndNeverRunsTheCommand) {
  FakeServer server([](const v1::Request& request) {
    if (request.has_run_start()) {
      return FakeServer::error_reply(v1::Error::PERMISSION_DENIED, "not your process");
    }
    return fake_daemon(request);
  });
  const std::string marker = ::testing::TempDir() + "exec-ran2-" + std::to_string(::getpid());
  const Outcome o =
      run_cli({"--socket", server.path(), "exec", "--estimate", "1GB", "--", "touch", marker});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_THAT(o.err, HasSubstr("not your process"));
  EXPECT_FALSE(std::filesystem::exists(marker));
  const auto releases = of_kind(server, v1::Request::kRelease);
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].release().reservation_id(), "res-1");
}

TEST(CliExec, ARunTheDaemonAlreadyEndedIsNoFailure) {
  FakeServer server([](const v1::Request& request) {
    if (request.has_run_end()) {
      return FakeServer::error_reply(v1::Error::FAILED_PRECONDITION, "run r-1 already ended");
    }
    return fake_daemon(request);
  });
  const Outcome o = run_cli({"--socket", server.path(), "exec", "--", "true"});
  EXPECT_EQ(o.exit_code, 0);
  // The normal case of a run that ends with its process: no message that reads like an error,
  // one summary.
  EXPECT_THAT(o.err, Not(HasSubstr("already ended")));
  EXPECT_THAT(o.err, Not(HasSubstr("could not end run")));
  EXPECT_THAT(o.err, HasSubstr("ramguard: run r-1 ended: true exited with code 0 after"));
  EXPECT_THAT(o.err, HasSubstr("  release:  pending: see `ramguard report r-1`"));
}

TEST(CliExec, AMissingCommandExits127) {
  FakeServer server(fake_daemon);
  const Outcome o =
      run_cli({"--socket", server.path(), "exec", "--", "/nonexistent/ramguard-test-cmd"});
  EXPECT_EQ(o.exit_code, 127);
  EXPECT_THAT(o.err, HasSubstr("cannot run '/nonexistent/ramguard-test-cmd'"));
}

}  // namespace
}  // namespace ramguard
