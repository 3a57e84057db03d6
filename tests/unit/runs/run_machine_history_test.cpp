// A long run's footprint is bounded whatever its marks: ended phases past the held count are
// folded into totals by name (open ones stay), verdicts past theirs are dropped keeping the
// worst, and a run's distinct phase names are capped.
#include <gtest/gtest.h>

#include "runs/run_machine.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RunHistoryTest : public ::testing::Test {
 protected:
  RunHistoryTest() {
    params_.held_marks = 256;
    params_.held_phases = 32;
    params_.held_verdicts = 32;
    params_.max_phase_names = 4;
    // Every aggregation end to synchronization begin over 1 s is a phase-gap verdict.
    params_.detectors.phase_gaps = {
        {"aggregation", MarkEdge::kEnd, "synchronization", MarkEdge::kBegin, 1}};
    observers_.add(&observer_);
  }

  std::unique_ptr<RunMachine> start() {
    RunInfo info;
    info.run_id = "r-long";
    info.job = "fedavg";
    info.target = {42, 1234};
    auto run = RunMachine::start(info, /*end_on_exit=*/false, process_, params_, observers_);
    EXPECT_TRUE(run.ok());
    return std::move(*run);
  }

  Result<MarkOutcome> mark(RunMachine& run, MarkKind kind, const std::string& phase) {
    MarkInput in;
    in.run_id = run.run_id();
    in.kind = kind;
    in.phase = phase;
    return run.mark(in, process_);
  }

  // One phase of `name` lasting `length`, peaking at `peak_bytes`.
  void phase(RunMachine& run, const std::string& name, std::chrono::nanoseconds length,
             std::uint64_t peak_bytes = 2 * kGB) {
    ASSERT_TRUE(mark(run, MarkKind::kPhaseBegin, name).ok());
    process_.spike(peak_bytes);
    clock_.advance(length);
    ASSERT_TRUE(mark(run, MarkKind::kPhaseEnd, name).ok());
  }

  FakeClock clock_;
  ScriptedProcess process_{clock_, 2 * kGB};
  RunParams params_;
  RecordingObserver observer_;
  ObserverSet observers_;
};

TEST_F(RunHistoryTest, EndedPhasesPastTheHeldCountBecomeTotalsByNameAndOpenOnesStay) {
  auto run = start();
  // An outer phase open for the whole run, then 1,000 short phases of two names.
  ASSERT_TRUE(mark(*run, MarkKind::kPhaseBegin, "training").ok());
  for (int i = 0; i < 500; ++i) {
    phase(*run, "aggregation", milliseconds(100), 3 * kGB + static_cast<std::uint64_t>(i));
    phase(*run, "synchronization", milliseconds(200));
  }
  const RunLedger& l = run->ledger();
  // Held: at most 1.25x the count + 1, whatever the number of phases.
  EXPECT_LE(l.phases.size(), 32u + 8u + 1u);
  EXPECT_EQ(l.phase_count(), 1001u);
  EXPECT_EQ(l.earlier_phases + l.phases.size(), 1001u);
  // The open outer phase is still held, still open, still the run's outermost.
  ASSERT_EQ(run->open_phases().size(), 1u);
  EXPECT_EQ(l.phases[run->open_phases()[0]].phase, "training");
  EXPECT_FALSE(l.phases[run->open_phases()[0]].end.has_value());
  // Totals by name account for every phase no longer held.
  ASSERT_EQ(l.earlier_phase_totals.size(), 2u);
  const PhaseTotals& agg = l.earlier_phase_totals.at("aggregation");
  const PhaseTotals& sync = l.earlier_phase_totals.at("synchronization");
  EXPECT_EQ(agg.count + sync.count, l.earlier_phases);
  EXPECT_NEAR(agg.total_seconds, 0.1 * static_cast<double>(agg.count), 1e-6);
  EXPECT_NEAR(sync.total_seconds, 0.2 * static_cast<double>(sync.count), 1e-6);
  EXPECT_EQ(agg.max_peak_bytes, 3 * kGB + agg.count - 1);  // the last dropped one peaked highest

  // The outer phase still ends with the run's peak folded in.
  ASSERT_TRUE(mark(*run, MarkKind::kPhaseEnd, "training").ok());
  EXPECT_TRUE(run->open_phases().empty());
}

TEST_F(RunHistoryTest, VerdictsPastTheHeldCountAreDroppedKeepingTheWorstAndReplyingEachOnce) {
  auto run = start();
  std::size_t replied = 0;
  for (int i = 0; i < 300; ++i) {
    phase(*run, "aggregation", milliseconds(10));
    clock_.advance(seconds(2));  // over the 1 s gap: one phase_gap verdict per round
    auto begin = mark(*run, MarkKind::kPhaseBegin, "synchronization");
    ASSERT_TRUE(begin.ok());
    replied += begin->verdicts.size();
    ASSERT_TRUE(mark(*run, MarkKind::kPhaseEnd, "synchronization").ok());
  }
  const RunLedger& l = run->ledger();
  EXPECT_EQ(replied, 300u) << "every gap verdict went out in a reply, once";
  EXPECT_LE(l.verdicts.size(), 32u + 8u + 1u);
  EXPECT_EQ(l.earlier_verdicts + l.verdicts.size(), 300u);
  ASSERT_TRUE(l.worst_earlier_verdict.has_value());
  EXPECT_EQ(l.worst_earlier_verdict->kind, verdict_kind::kPhaseGap);
  EXPECT_EQ(observer_.verdicts.size(), 300u) << "every verdict reached the store";
}

TEST_F(RunHistoryTest, ANewPhaseNamePastTheLimitIsRefusedWithTheReasonAndOldNamesGoOn) {
  auto run = start();
  for (const char* name : {"load", "train", "aggregation", "save"}) {
    phase(*run, name, milliseconds(10));
  }
  auto refused = mark(*run, MarkKind::kPhaseBegin, "step-17");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("already uses 4 phase names, the limit"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("'step-17'"), std::string::npos);
  phase(*run, "train", milliseconds(10));  // a name already used goes on
  EXPECT_EQ(run->ledger().phase_count(), 5u);
}

// A ledger's records as a stream that counts what was read: recovery reads the marks it holds
// and no more.
class CountingRecords final : public RunRecords {
 public:
  explicit CountingRecords(const RunLedger& ledger) : whole_(ledger) {}
  Result<std::uint64_t> mark_count() override { return whole_.mark_count(); }
  Status newest_marks(std::uint64_t count, const std::function<void(MarkRecord)>& take) override {
    marks_asked = count;
    return whole_.newest_marks(count, take);
  }
  Status phases(const std::function<void(PhaseRecord)>& take) override {
    return whole_.phases(take);
  }
  Status boundaries(const std::function<void(BoundaryRecord)>& take) override {
    return whole_.boundaries(take);
  }
  Status verdicts(const std::function<void(Verdict)>& take) override {
    return whole_.verdicts(take);
  }
  std::uint64_t marks_asked = 0;

 private:
  LedgerRecords whole_;
};

// A long run read back after a restart as a stream holds exactly what the same ledger read
// whole and trimmed once held (the recovery before streaming): the same held records, the
// same totals of the rest, the same worst earlier verdict and rounds, and the next mark goes
// on from there. Only the newest marks are read.
TEST_F(RunHistoryTest, AResumedLongRunStreamedHoldsWhatItHeldReadWhole) {
  RunLedger stored;
  stored.info.run_id = "r-stored";
  stored.info.job = "fedavg";
  stored.info.target = {42, 1234};
  stored.started = clock_.now();
  stored.baseline = stored.last = process_.read(true).value();
  stored.peak_bytes = 3 * kGB;
  Instant at = clock_.now();
  const auto step = [&] {
    at.monotonic += milliseconds(10);
    at.wall += milliseconds(10);
    return at;
  };
  for (std::uint64_t seq = 1; seq <= 5000; ++seq) {
    MarkRecord m;
    m.seq = seq;
    m.kind = seq == 1 ? MarkKind::kRunStart : MarkKind::kPhaseBegin;
    m.phase = "train";
    m.reading = stored.last;
    m.reading.at = step();
    stored.marks.push_back(m);
  }
  for (std::uint32_t i = 0; i < 1000; ++i) {
    PhaseRecord p{i % 3 == 0 ? "train" : "eval", i / 10 + 1, step(), step(),
                  kGB + i * 1'000'000,           true};
    if (i == 7) p.end.reset();  // an outer phase open since early on
    stored.phases.push_back(p);
  }
  for (std::uint32_t round = 1; round <= 300; ++round) {
    BoundaryRecord b;
    b.round = round;
    b.reading = stored.last;
    b.reading.at = step();
    b.floor_bytes = kGB + (round % 17) * 1'000'000;
    b.settled = round != 300;  // the last was settling when the daemon died
    stored.boundaries.push_back(b);
  }
  for (std::uint32_t i = 0; i < 200; ++i) {
    Verdict v;
    v.kind = i == 50 ? verdict_kind::kOverBudget : verdict_kind::kGrowthClass;
    v.severity = i == 50 ? Severity::kCritical : Severity::kInfo;
    v.round = i + 101;  // rounds 101-300: the last round is classified already
    v.summary = "v" + std::to_string(i);
    v.at = step();
    stored.verdicts.push_back(v);
  }

  // Before: the whole ledger in memory, trimmed once by the running machine's rules.
  const std::size_t held_phases = params_.held_phases, held_verdicts = params_.held_verdicts;
  std::map<std::string, PhaseTotals> totals;
  std::vector<std::string> held_phase_names;
  std::size_t ended_to_drop = stored.phases.size() - held_phases;
  for (const PhaseRecord& p : stored.phases) {
    if (ended_to_drop > 0 && p.end) {
      totals[p.phase].add(p);
      --ended_to_drop;
    } else {
      held_phase_names.push_back(p.phase + "/" + std::to_string(p.round));
    }
  }

  CountingRecords records(stored);
  auto resumed = RunMachine::resume(head_of(stored), records, params_, observers_);
  ASSERT_TRUE(resumed) << resumed.error().message;
  RunMachine& run = **resumed;
  const RunLedger& l = run.ledger();
  EXPECT_EQ(records.marks_asked, params_.held_marks);
  EXPECT_EQ(l.mark_count(), 5000u);
  EXPECT_EQ(l.marks.size(), params_.held_marks);
  EXPECT_EQ(l.marks.back().seq, 5000u);
  EXPECT_EQ(l.phase_count(), 1000u);
  ASSERT_EQ(l.phases.size(), held_phases);
  std::vector<std::string> names;
  for (const PhaseRecord& p : l.phases) names.push_back(p.phase + "/" + std::to_string(p.round));
  EXPECT_EQ(names, held_phase_names);
  ASSERT_EQ(run.open_phases().size(), 1u);
  EXPECT_FALSE(l.phases[run.open_phases()[0]].end.has_value());
  ASSERT_EQ(l.earlier_phase_totals.size(), totals.size());
  for (const auto& [name, t] : totals) {
    EXPECT_EQ(l.earlier_phase_totals.at(name).count, t.count) << name;
    EXPECT_EQ(l.earlier_phase_totals.at(name).max_peak_bytes, t.max_peak_bytes) << name;
    EXPECT_DOUBLE_EQ(l.earlier_phase_totals.at(name).total_seconds, t.total_seconds) << name;
  }
  EXPECT_EQ(l.boundary_count(), 300u);
  EXPECT_EQ(l.boundaries.size(), std::max<std::size_t>(params_.held_boundaries, 2));
  BoundarySummary summary;
  for (std::size_t i = 0; i < 300 - l.boundaries.size(); ++i) summary.add(stored.boundaries[i]);
  EXPECT_EQ(l.earlier_boundaries.min_floor_bytes, summary.min_floor_bytes);
  EXPECT_EQ(l.earlier_boundaries.max_floor_bytes, summary.max_floor_bytes);
  EXPECT_EQ(l.earlier_boundaries.last_round, summary.last_round);
  EXPECT_TRUE(l.boundaries.back().settled);
  EXPECT_EQ(run.rounds_ended(), 300u);
  // Verdicts: the newest held, the worst of the rest kept; none said again.
  EXPECT_EQ(l.earlier_verdicts + l.verdicts.size(), 200u);
  ASSERT_EQ(l.verdicts.size(), held_verdicts);
  EXPECT_EQ(l.verdicts.back().summary, "v199");
  ASSERT_TRUE(l.worst_earlier_verdict.has_value());
  EXPECT_EQ(l.worst_earlier_verdict->summary, "v50");
  EXPECT_TRUE(observer_.verdicts.empty());
  // The run goes on after its last mark and round.
  auto next = mark(run, MarkKind::kRoundEnd, "");
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->mark.seq, 5001u);
  EXPECT_EQ(next->mark.round, 301u);
}

}  // namespace
}  // namespace ramguard::test
