// Durability: kill -9 the daemon during a run and restart it on the same state
// directory; and kill -9 while many coordinators mark at once (group commit: the replies of one
// loop turn share a COMMIT, none may be sent before it). Every acknowledged mark is still there
// (count and seq), so are the verdicts raised before the kill, and the run resumes: active, taking
// marks, ending. A run whose coordinator died while the daemon was down ends `lost` with a `lost`
// verdict.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "store/store.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// Small thresholds so a growth warning is raised (and stored) before the kill.
const char* kConfig =
    "sampling:\n  interval: 100ms\n"
    "growth:\n  min_bytes: 8MB\n  settle: 300ms\n"
    "release:\n  slack: 16MB\n  grace: 3s\n";

std::unique_ptr<Daemon> start_on(const std::filesystem::path& state_dir) {
  Daemon::Options o;
  o.config_yaml = kConfig;
  o.state_dir = state_dir;
  return Daemon::start(std::move(o));
}

v1::Reply ok(const Daemon& d, const v1::Request& req) {
  v1::Reply reply = d.call(req);
  EXPECT_FALSE(reply.has_error()) << reply.error().message();
  return reply;
}

std::string start_run(const Daemon& d, pid_t pid, const std::string& job) {
  v1::Request req;
  req.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  req.mutable_run_start()->set_job(job);
  req.mutable_run_start()->set_model_bytes(16 * kMiB);
  return ok(d, req).run_start().run_id();
}

v1::MarkReply mark(const Daemon& d, const std::string& run, v1::MarkRequest::Kind kind,
                   const std::string& phase = "") {
  v1::Request req;
  req.mutable_mark()->set_run_id(run);
  req.mutable_mark()->set_kind(kind);
  req.mutable_mark()->set_phase(phase);
  return ok(d, req).mark();
}

v1::RunStatus status(const Daemon& d, const std::string& run) {
  v1::Request req;
  req.mutable_status()->set_run_id(run);
  const v1::Reply reply = ok(d, req);
  return reply.status().runs_size() == 1 ? reply.status().runs(0) : v1::RunStatus();
}

v1::RunStatus report(const Daemon& d, const std::string& run) {
  v1::Request req;
  req.mutable_report()->set_run_id(run);
  return ok(d, req).report().run();
}

TEST(Durability, AcknowledgedMarksAndVerdictsSurviveKill9AndTheRunResumes) {
  const auto state_dir = make_temp_dir("durability");
  auto daemon = start_on(state_dir);
  MemChild child;   // lives through the daemon's death
  MemChild doomed;  // dies while the daemon is down
  child.command("alloc floor " + std::to_string(32 * kMiB));
  const std::string run = start_run(*daemon, child.pid(), "durable");
  const std::string lost_run = start_run(*daemon, doomed.pid(), "doomed");

  // Rounds of aggregation; the floor steps up 16 MiB in round 2 (a growth warning).
  std::size_t acknowledged = 0;
  for (int r = 1; r <= 4; ++r) {
    EXPECT_TRUE(mark(*daemon, run, v1::MarkRequest::PHASE_BEGIN, "aggregation").stored());
    if (r == 2) child.command("alloc floor " + std::to_string(48 * kMiB));
    EXPECT_TRUE(mark(*daemon, run, v1::MarkRequest::PHASE_END, "aggregation").stored());
    EXPECT_TRUE(mark(*daemon, run, v1::MarkRequest::ROUND_END).stored());
    acknowledged += 3;
  }
  EXPECT_TRUE(mark(*daemon, run, v1::MarkRequest::PHASE_BEGIN, "synchronization").stored());
  ++acknowledged;  // the run is mid-phase when the daemon dies
  v1::RunStatus before;
  ASSERT_TRUE(eventually(
      [&] {
        before = report(*daemon, run);
        for (const auto& v : before.verdicts()) {
          if (v.kind() == "growth_warning") return true;
        }
        return false;
      },
      10s))
      << "no growth warning before the kill";

  daemon->kill_hard();
  doomed.kill(SIGKILL);
  doomed.wait();

  // The ledger on disk: the run-start mark (seq 1) and every acknowledged mark, in order.
  {
    auto store = Store::open(state_dir);
    ASSERT_TRUE(store) << store.error().message;
    auto ledger = (*store)->load_run(run);
    ASSERT_TRUE(ledger) << ledger.error().message;
    ASSERT_EQ(ledger->marks.size(), acknowledged + 1);
    for (std::size_t i = 0; i < ledger->marks.size(); ++i) {
      EXPECT_EQ(ledger->marks[i].seq, i + 1);
    }
    EXPECT_EQ(ledger->marks.back().kind, MarkKind::kPhaseBegin);
    EXPECT_EQ(ledger->marks.back().phase, "synchronization");
  }

  auto restarted = start_on(state_dir);
  EXPECT_FALSE(restarted->wait_for_log("event=recovery.resumed run=" + run).empty())
      << restarted->log_text();
  const v1::RunStatus after = report(*restarted, run);
  EXPECT_EQ(after.state(), "active");
  EXPECT_EQ(after.current_phase(), "synchronization");
  // Every mark is in the report: 4 aggregations plus the open synchronization, 4 boundaries.
  ASSERT_EQ(after.phases_size(), before.phases_size());
  EXPECT_EQ(after.phases_size(), 5);
  ASSERT_EQ(after.boundaries_size(), 4);
  for (int i = 0; i < after.boundaries_size(); ++i) {
    EXPECT_EQ(after.boundaries(i).round(), static_cast<std::uint32_t>(i + 1));
    EXPECT_EQ(after.boundaries(i).reading().rss_bytes(),
              before.boundaries(i).reading().rss_bytes());
  }
  // Every verdict raised before the kill is still there, unchanged.
  for (const auto& v : before.verdicts()) {
    bool found = false;
    for (const auto& w : after.verdicts()) {
      found = found || (w.kind() == v.kind() && w.round() == v.round() &&
                        w.summary() == v.summary() && w.cleared() == v.cleared());
    }
    EXPECT_TRUE(found) << "lost verdict " << v.kind() << ": " << v.summary();
  }

  // The run resumed: it takes further marks and ends.
  EXPECT_TRUE(mark(*restarted, run, v1::MarkRequest::PHASE_END, "synchronization").stored());
  const v1::MarkReply round5 = mark(*restarted, run, v1::MarkRequest::ROUND_END);
  EXPECT_EQ(round5.round(), 5u);
  EXPECT_TRUE(round5.stored());
  v1::Request end;
  end.mutable_run_end()->set_run_id(run);
  EXPECT_TRUE(ok(*restarted, end).run_end().stored());
  EXPECT_EQ(report(*restarted, run).state(), "ended");

  // The run whose coordinator died meanwhile ended lost, with a verdict that says so.
  const v1::RunStatus lost = report(*restarted, lost_run);
  EXPECT_EQ(lost.state(), "lost");
  int lost_verdicts = 0;
  for (const auto& v : lost.verdicts()) lost_verdicts += v.kind() == "lost" ? 1 : 0;
  EXPECT_EQ(lost_verdicts, 1) << lost.DebugString();

  restarted.reset();
  std::filesystem::remove_all(state_dir);
}

// A run past its held counts (more phases and boundaries than a running run keeps in memory)
// comes back from a kill -9 with the same figures: a restart streams its records and folds the
// oldest into totals as the running run did, so its report has the same counts, peak, round,
// phase, boundary summary and verdicts (none lost, none said twice: a restart used to say the
// run's plateau again).
TEST(Durability, ARunPastItsHeldCountsResumesWithTheSameReportFigures) {
  const auto state_dir = make_temp_dir("durability-long");
  Daemon::Options o;
  o.config_yaml = std::string(kConfig) + "control:\n  max_requests_per_second: 1000000\n";
  o.state_dir = state_dir;
  auto daemon = Daemon::start(std::move(o));
  MemChild child;
  child.command("alloc floor " + std::to_string(32 * kMiB));
  const std::string run = start_run(*daemon, child.pid(), "durable-long");
  constexpr int kRounds = 200;  // past the 128 boundaries and phases a running run holds
  for (int r = 1; r <= kRounds; ++r) {
    mark(*daemon, run, v1::MarkRequest::PHASE_BEGIN, "aggregation");
    if (r == 2) child.command("alloc floor " + std::to_string(48 * kMiB));
    mark(*daemon, run, v1::MarkRequest::PHASE_END, "aggregation");
    mark(*daemon, run, v1::MarkRequest::ROUND_END);
  }
  mark(*daemon, run, v1::MarkRequest::PHASE_BEGIN, "synchronization");
  std::this_thread::sleep_for(500ms);  // the last round's floor settles
  // The status is what the daemon holds (the newest records, totals of the rest); the report
  // reads the ledger whole.
  const v1::RunStatus before = status(*daemon, run);
  const v1::RunStatus reported = report(*daemon, run);
  ASSERT_GT(before.earlier_phases(), 0u) << "the run does not pass its held phases";
  ASSERT_GT(before.earlier_boundaries().count(), 0u) << "nor its held boundaries";
  daemon->kill_hard();

  auto restarted = start_on(state_dir);
  EXPECT_FALSE(restarted->wait_for_log("event=recovery.resumed run=" + run).empty())
      << restarted->log_text();
  const v1::RunStatus after = status(*restarted, run);
  EXPECT_EQ(after.state(), "active");
  EXPECT_EQ(after.peak_bytes(), before.peak_bytes());
  EXPECT_EQ(after.peak_exact(), before.peak_exact());
  EXPECT_EQ(after.round(), before.round());
  EXPECT_EQ(after.current_phase(), "synchronization");
  EXPECT_EQ(after.phases_size() + after.earlier_phases(),
            before.phases_size() + before.earlier_phases());
  EXPECT_EQ(after.boundaries_size() + after.earlier_boundaries().count(),
            before.boundaries_size() + before.earlier_boundaries().count());
  EXPECT_EQ(after.earlier_boundaries().first_round(), before.earlier_boundaries().first_round());
  EXPECT_EQ(after.earlier_boundaries().min_floor_bytes(),
            before.earlier_boundaries().min_floor_bytes());
  EXPECT_EQ(after.earlier_boundaries().max_floor_bytes(),
            before.earlier_boundaries().max_floor_bytes());
  EXPECT_EQ(after.boundaries(after.boundaries_size() - 1).floor_bytes(),
            before.boundaries(before.boundaries_size() - 1).floor_bytes());
  EXPECT_EQ(after.verdicts_size() + after.earlier_verdicts(),
            before.verdicts_size() + before.earlier_verdicts());
  ASSERT_EQ(after.earlier_phase_totals_size(), before.earlier_phase_totals_size());
  // The report: the same verdicts, in the same order, with the same figures.
  const v1::RunStatus again = report(*restarted, run);
  EXPECT_EQ(again.phases_size(), reported.phases_size());
  EXPECT_EQ(again.boundaries_size(), reported.boundaries_size());
  ASSERT_EQ(again.verdicts_size(), reported.verdicts_size());
  for (int i = 0; i < again.verdicts_size(); ++i) {
    const auto& v = reported.verdicts(i);
    const auto& w = again.verdicts(i);
    EXPECT_EQ(w.kind(), v.kind());
    EXPECT_EQ(w.round(), v.round());
    EXPECT_EQ(w.summary(), v.summary());
    EXPECT_EQ(w.cleared(), v.cleared());
    using Figures = std::map<std::string, double>;
    EXPECT_EQ(Figures(w.figures().begin(), w.figures().end()),
              Figures(v.figures().begin(), v.figures().end()))
        << v.kind();
  }
  // And it goes on from its last round.
  EXPECT_EQ(mark(*restarted, run, v1::MarkRequest::ROUND_END).round(),
            static_cast<std::uint32_t>(kRounds + 1));
  restarted.reset();
  std::filesystem::remove_all(state_dir);
}

// 64 coordinators mark concurrently (their marks share ledger transactions, and the log is
// checkpointed on its own thread meanwhile) until the daemon is killed mid-stream: every mark
// whose reply said stored is in the ledger, in seq order.
TEST(Durability, ConcurrentAcknowledgedMarksSurviveKill9) {
  constexpr int kCoordinators = 64;
  const auto state_dir = make_temp_dir("durability-concurrent");
  auto daemon = start_on(state_dir);
  std::vector<std::unique_ptr<MemChild>> children;
  std::vector<std::string> runs;
  for (int i = 0; i < kCoordinators; ++i) {
    children.push_back(std::make_unique<MemChild>());
    runs.push_back(start_run(*daemon, children.back()->pid(), "busy-" + std::to_string(i)));
  }
  const auto db_file = state_dir / Store::kFileName;
  const auto db_bytes_before = std::filesystem::file_size(db_file);
  std::vector<std::size_t> acknowledged(kCoordinators, 0);
  std::atomic<bool> failed_reply{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < kCoordinators; ++i) {
    threads.emplace_back([&, i] {
      const v1::MarkRequest::Kind kinds[] = {
          v1::MarkRequest::PHASE_BEGIN, v1::MarkRequest::PHASE_END, v1::MarkRequest::ROUND_END};
      for (std::size_t n = 0;; ++n) {
        v1::Request req;
        req.mutable_mark()->set_run_id(runs[i]);
        req.mutable_mark()->set_kind(kinds[n % 3]);
        if (n % 3 != 2) req.mutable_mark()->set_phase("train");
        v1::Reply reply;
        try {
          reply = daemon->call(req);
        } catch (const std::exception&) {
          return;  // the daemon is gone: this mark was not acknowledged
        }
        if (reply.has_error() || !reply.mark().stored()) {
          failed_reply = failed_reply || !reply.has_error();
          return;
        }
        ++acknowledged[i];
      }
    });
  }
  std::this_thread::sleep_for(1500ms);
  daemon->kill_hard();
  for (auto& t : threads) t.join();
  EXPECT_FALSE(failed_reply) << "a mark was answered stored=false before the kill";
  // Only a checkpoint writes the database file while the daemon runs: some ran mid-stream.
  EXPECT_GT(std::filesystem::file_size(db_file), db_bytes_before)
      << "no checkpoint ran while the coordinators marked";

  auto store = Store::open(state_dir);
  ASSERT_TRUE(store) << store.error().message;
  std::size_t total = 0;
  for (int i = 0; i < kCoordinators; ++i) {
    auto ledger = (*store)->load_run(runs[i]);
    ASSERT_TRUE(ledger) << ledger.error().message;
    // The run-start mark (seq 1) and every acknowledged one; a mark stored whose reply the kill
    // cut off may be there too.
    EXPECT_GE(ledger->marks.size(), acknowledged[i] + 1) << runs[i];
    for (std::size_t m = 0; m < ledger->marks.size(); ++m) {
      EXPECT_EQ(ledger->marks[m].seq, m + 1) << runs[i];
    }
    total += acknowledged[i];
  }
  EXPECT_GT(total, static_cast<std::size_t>(kCoordinators)) << "the coordinators hardly marked";
  store->reset();
  std::filesystem::remove_all(state_dir);
}

}  // namespace
}  // namespace ramguard::testing
