// The dispatcher with the real registry, admission and store, without a socket: typed
// requests in, typed replies out.
#include "control/dispatcher.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "runs/admission_sources.hpp"
#include "store/job_history.hpp"
#include "store/ledger_journal.hpp"
#include "unit/procfs/test_child.hpp"

namespace ramguard::control {
namespace {

using namespace std::chrono_literals;
using ramguard::testing::TestChild;
using ::testing::HasSubstr;

constexpr std::uint64_t kGB = 1'000'000'000;

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    dir_ = std::filesystem::temp_directory_path() /
           ("ramguard-dispatcher-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    auto opened = Store::open(dir_);
    EXPECT_TRUE(opened.ok());
    store_ = std::move(*opened);
    journal_ = std::make_unique<LedgerJournal>(*store_);
    registry_.add_observer(journal_.get());
    DeskSettings settings;
    settings.plans["fedavg"] = MemoryPlan{
        "fedavg",
        {{"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}}},
        1'100'000'000};
    desk_.set_settings(std::move(settings));
    history_ = std::make_unique<StoreJobHistory>(*store_);
    desk_.set_history(history_.get());
    dispatcher_ =
        std::make_unique<Dispatcher>(registry_, admission_, desk_, machine_, store_.get());
    EXPECT_TRUE(child_.hold(0));
  }
  ~DispatcherTest() override { std::filesystem::remove_all(dir_); }

  // As the server does: the reply is built once the group commit (if any) is done.
  v1::Reply send(const v1::Request& request, const Peer& peer) {
    const RequestHandler::Answer answer = dispatcher_->handle(request, peer);
    const bool durable = !dispatcher_->writes_pending() || dispatcher_->flush_writes();
    v1::Reply reply;
    answer(reply, durable);
    return reply;
  }
  v1::Reply send(const v1::Request& request) { return send(request, root_); }

  static v1::Request request() {
    v1::Request r;
    r.set_version(1);
    return r;
  }

  std::filesystem::path dir_;
  TestChild child_;
  asio::io_context io_;
  SystemClock clock_;
  ProcFs procfs_;
  Sampler sampler_{io_, procfs_, clock_, 50ms};
  ExitWatcher exits_{io_};
  Admission admission_{16 * kGB, 0, 60s, clock_};
  RunRegistry registry_{io_, clock_, sampler_, exits_, admission_, RunParams{}};
  std::unique_ptr<Store> store_;
  std::unique_ptr<LedgerJournal> journal_;
  ProcLoadBaselines baselines_{procfs_, registry_};
  RegistryMachineState machine_{procfs_, registry_};
  AdmissionDesk desk_{admission_, baselines_, machine_, {}};
  std::unique_ptr<StoreJobHistory> history_;
  std::unique_ptr<Dispatcher> dispatcher_;
  Peer root_{::getpid(), 0, true, false, "test root"};
};

TEST_F(DispatcherTest, HelloTellsTheVersionBudgetAndWhoAsked) {
  auto r = request();
  r.mutable_hello();
  const v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_hello());
  EXPECT_EQ(reply.hello().protocol_version(), 1u);
  EXPECT_EQ(reply.hello().budget_bytes(), 16 * kGB);
  EXPECT_EQ(reply.hello().peer_pid(), static_cast<std::uint32_t>(::getpid()));
}

TEST_F(DispatcherTest, ARequestWithoutACommandIsAnErrorNamingIt) {
  const v1::Reply reply = send(request());
  ASSERT_TRUE(reply.has_error());
  EXPECT_FALSE(reply.error().message().empty());
}

TEST_F(DispatcherTest, AdmissionRefusesWithEveryTermAndAdmitsWhatFits) {
  auto r = request();
  r.mutable_admit()->set_job("vit");
  r.mutable_admit()->set_estimate_bytes(20 * kGB);
  r.mutable_admit()->set_pid(static_cast<std::uint32_t>(child_.pid()));
  v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_admit()) << reply.error().message();
  EXPECT_FALSE(reply.admit().admitted());
  EXPECT_EQ(reply.admit().estimate_bytes(), 20 * kGB);
  EXPECT_GT(reply.admit().baseline_bytes(), 0u);
  EXPECT_THAT(reply.admit().reason(), HasSubstr("GB"));

  // A plan estimate: 2.5 GB model, 2 hosts -> 4 copies + 1.1 GB = 11.1 GB.
  r.mutable_admit()->set_estimate_bytes(0);
  r.mutable_admit()->set_plan("fedavg");
  r.mutable_admit()->set_hosts(2);
  r.mutable_admit()->mutable_model()->set_model_bytes(2'500'000'000);
  reply = send(r);
  ASSERT_TRUE(reply.has_admit()) << reply.error().message();
  EXPECT_TRUE(reply.admit().admitted());
  EXPECT_EQ(reply.admit().estimate_bytes(), 11'100'000'000u);
  ASSERT_EQ(store_->load_reservations()->size(), 1u);  // persisted at once

  r.mutable_admit()->set_plan("nope");
  reply = send(r);
  ASSERT_TRUE(reply.has_error());
  EXPECT_THAT(reply.error().message(), HasSubstr("unknown plan 'nope'"));

  // An unknown scope is refused where the request is read, before anything is reserved.
  r.mutable_admit()->set_plan("fedavg");
  r.mutable_admit()->set_scope("pod");
  reply = send(r);
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().code(), v1::Error::INVALID_ARGUMENT);
  EXPECT_THAT(reply.error().message(), HasSubstr("scope 'pod' is not known"));
  EXPECT_EQ(store_->load_reservations()->size(), 1u);
}

TEST_F(DispatcherTest, ARunStartedMarkedAndEndedIsInStatusAndTheLedger) {
  auto r = request();
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child_.pid()));
  r.mutable_run_start()->set_job("fedavg");
  v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_run_start()) << reply.error().message();
  const std::string id = reply.run_start().run_id();

  auto m = request();
  m.mutable_mark()->set_run_id(id);
  m.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  reply = send(m);
  ASSERT_TRUE(reply.has_mark()) << reply.error().message();
  EXPECT_TRUE(reply.mark().stored());
  EXPECT_EQ(reply.mark().round(), 1u);

  auto s = request();
  s.mutable_status()->set_run_id(id);
  reply = send(s);
  ASSERT_TRUE(reply.has_status());
  ASSERT_EQ(reply.status().runs_size(), 1);
  EXPECT_EQ(reply.status().runs(0).round(), 1u);
  EXPECT_TRUE(reply.status().store_available());

  auto e = request();
  e.mutable_run_end()->set_run_id(id);
  reply = send(e);
  ASSERT_TRUE(reply.has_run_end()) << reply.error().message();
  EXPECT_TRUE(reply.run_end().stored());

  auto l = request();
  l.mutable_list_runs();
  reply = send(l);
  ASSERT_TRUE(reply.has_list_runs());
  ASSERT_EQ(reply.list_runs().runs_size(), 1);
  EXPECT_EQ(reply.list_runs().runs(0).run_id(), id);
  EXPECT_EQ(reply.list_runs().runs(0).state(), "ended");
}

// Group commit: a reply is built once its batch's fate is known. A batch that commits makes
// the mark stored; one that is rolled back makes the next mark's reply say it is not, and why.
TEST_F(DispatcherTest, AMarkWhoseGroupCommitFailedIsAnsweredNotStored) {
  dispatcher_->set_group_commit(true);
  auto r = request();
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child_.pid()));
  v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_run_start()) << reply.error().message();
  EXPECT_TRUE(reply.run_start().stored());
  auto m = request();
  m.mutable_mark()->set_run_id(reply.run_start().run_id());
  m.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  reply = send(m);
  ASSERT_TRUE(reply.has_mark()) << reply.error().message();
  EXPECT_TRUE(reply.mark().stored());
  EXPECT_EQ(reply.mark().warning(), "");

  const RequestHandler::Answer answer = dispatcher_->handle(m, root_);
  ASSERT_TRUE(dispatcher_->writes_pending());  // the mark waits in the open batch
  store_->fail_next_commit_for_testing();
  EXPECT_FALSE(dispatcher_->flush_writes());
  reply.Clear();
  reply.set_request_id("m2");
  answer(reply, /*durable=*/false);
  ASSERT_TRUE(reply.has_mark()) << reply.error().message();
  EXPECT_EQ(reply.request_id(), "m2");
  EXPECT_EQ(reply.mark().round(), 2u);
  EXPECT_FALSE(reply.mark().stored());
  EXPECT_THAT(reply.mark().warning(),
              HasSubstr("the ledger commit failed: this record is not stored yet"));
}

TEST_F(DispatcherTest, ARunEndedOnAFailureGetsAFailedVerdictAndBadFailuresAreRefused) {
  auto r = request();
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child_.pid()));
  v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_run_start()) << reply.error().message();
  const std::string id = reply.run_start().run_id();

  auto e = request();
  e.mutable_run_end()->set_run_id(id);
  e.mutable_run_end()->set_failure(std::string(257, 'x'));
  reply = send(e);
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().code(), v1::Error::INVALID_ARGUMENT);
  EXPECT_THAT(reply.error().message(), HasSubstr("257 bytes long; at most 256"));
  e.mutable_run_end()->set_failure("KeyError:\n'host'");
  reply = send(e);
  ASSERT_TRUE(reply.has_error());
  EXPECT_THAT(reply.error().message(), HasSubstr("control character"));

  e.mutable_run_end()->set_failure("KeyError: 'host lost'");
  reply = send(e);
  ASSERT_TRUE(reply.has_run_end()) << reply.error().message();
  ASSERT_GE(reply.run_end().verdicts_size(), 1);
  const v1::Verdict& failed = reply.run_end().verdicts(0);
  EXPECT_EQ(failed.kind(), "failed");
  EXPECT_EQ(failed.severity(), v1::CRITICAL);
  EXPECT_FALSE(failed.passed());
  EXPECT_THAT(failed.summary(), HasSubstr("ended the run on a failure: KeyError: 'host lost'"));

  auto s = request();
  s.mutable_report()->set_run_id(id);
  reply = send(s);
  ASSERT_TRUE(reply.has_report()) << reply.error().message();
  EXPECT_EQ(reply.report().run().state(), "ended");
  bool kept = false;
  for (const auto& v : reply.report().run().verdicts()) kept = kept || v.kind() == "failed";
  EXPECT_TRUE(kept) << "the failed verdict is in the ledger";
}

TEST_F(DispatcherTest, AnotherUsersRunCannotBeMarked) {
  auto r = request();
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child_.pid()));
  v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_run_start());
  auto m = request();
  m.mutable_mark()->set_run_id(reply.run_start().run_id());
  m.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  const Peer stranger{1, 4242, true, false, "pid 1 uid 4242"};
  reply = send(m, stranger);
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().code(), v1::Error::PERMISSION_DENIED);
  EXPECT_THAT(reply.error().message(), HasSubstr("uid 4242"));
}

TEST_F(DispatcherTest, UnknownRunsAreNotFound) {
  auto r = request();
  r.mutable_report()->set_run_id("r-missing");
  const v1::Reply reply = send(r);
  ASSERT_TRUE(reply.has_error());
  EXPECT_EQ(reply.error().code(), v1::Error::NOT_FOUND);
  EXPECT_THAT(reply.error().message(), HasSubstr("r-missing"));
}

}  // namespace
}  // namespace ramguard::control
