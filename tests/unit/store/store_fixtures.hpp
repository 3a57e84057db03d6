#pragma once
// Shared helpers for the store tests: a temp state directory and ledgers with every field set
// to a distinct value, so a column mix-up in the store shows up as a mismatch.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "model/ledger.hpp"
#include "store/store.hpp"

namespace ramguard::testing {

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("ramguard-store-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline Instant at_seconds(std::int64_t s, std::int64_t extra_ns = 0) {
  using namespace std::chrono;
  return {seconds(1000 + s) + nanoseconds(extra_ns),
          seconds(1'700'000'000 + s) + nanoseconds(extra_ns)};
}

inline MemoryReading reading(std::uint64_t rss, std::int64_t at_s, std::uint64_t salt = 0) {
  MemoryReading r;
  r.at = at_seconds(at_s, 123);
  r.source = ReadingSource::kMark;
  r.rss_bytes = rss;
  r.anon_bytes = rss - 1000 - salt;
  r.file_bytes = 700 + salt;
  r.shmem_bytes = 300 + salt;
  r.swap_bytes = 11 + salt;
  r.hwm_bytes = rss + 5000 + salt;
  return r;
}

inline MarkRecord mark(std::uint64_t seq, MarkKind kind, std::string phase, std::uint32_t round) {
  MarkRecord m;
  m.seq = seq;
  m.kind = kind;
  m.phase = std::move(phase);
  m.round = round;
  m.reading = reading(1'000'000'000 + seq * 1000, static_cast<std::int64_t>(seq), seq);
  return m;
}

inline RunLedger sample_ledger(const std::string& run_id, const std::string& job = "vit-h14") {
  RunLedger l;
  l.info.run_id = run_id;
  l.info.job = job;
  l.info.labels = {{"build", "final"}, {"model", "vit-h/14"}};
  l.info.target = {4242, 987654321};
  l.info.owner_uid = 1001;
  l.info.model_bytes = 2'500'000'000;
  l.info.declared_rounds = 3;
  l.info.hosts = 2;
  l.info.estimate_bytes = 11'100'000'000;
  l.info.plan = "fedavg";
  l.info.reservation_id = "res-" + run_id;
  l.state = RunState::kActive;
  l.started = at_seconds(0, 7);
  l.baseline = reading(600'000'000, 0, 1);
  l.baseline.source = ReadingSource::kPeriodic;
  l.last = reading(9'600'000'000, 50, 2);
  l.peak_bytes = 9'600'000'000;
  l.peak_exact = true;
  return l;
}

// A ledger with records of every type, including optional facts and a NaN figure.
inline RunLedger full_ledger(const std::string& run_id) {
  RunLedger l = sample_ledger(run_id);
  l.marks.push_back(mark(1, MarkKind::kRunStart, "", 0));
  l.marks.push_back(mark(2, MarkKind::kPhaseBegin, "aggregation", 1));
  MarkRecord end = mark(3, MarkKind::kPhaseEnd, "aggregation", 1);
  end.allocator = AllocatorFacts{100, 200, 300, 400};
  l.marks.push_back(end);
  MarkRecord round_end = mark(4, MarkKind::kRoundEnd, "", 1);
  round_end.gc = GcFacts{17'300'000'000, 14'100'000'000, 12345, 0.75};
  l.marks.push_back(round_end);

  PhaseRecord p{"aggregation", 1, at_seconds(2, 1), at_seconds(3, 2), 9'600'000'000, true};
  l.phases.push_back(p);
  l.phases.push_back(
      PhaseRecord{"synchronization", 1, at_seconds(4), std::nullopt, 8'000'000'000, false});

  BoundaryRecord b;
  b.round = 1;
  b.reading = reading(6'400'000'000, 4, 3);
  b.floor_bytes = 6'300'000'000;
  b.settled = true;
  b.allocator = AllocatorFacts{1, 2, 3, 4};
  b.gc = GcFacts{5, 6, 7, 0.5};
  l.boundaries.push_back(b);

  Verdict v;
  v.kind = verdict_kind::kGrowthWarning;
  v.severity = Severity::kWarning;
  v.passed = false;
  v.round = 1;
  v.phase = "aggregation";
  v.summary = "RSS grew 3.20 GB in round 1";
  v.figures = {{"growth_bytes", 3.2e9}, {"copies_per_round", 1.28}, {"fit_r2", std::nan("")}};
  v.at = at_seconds(5, 9);
  l.verdicts.push_back(v);
  return l;
}

// The store tests run twice (tests/unit/store/CMakeLists.txt): on the coalescing WAL VFS, the
// daemon's default, and on SQLite's own (RAMGUARD_TEST_WAL_VFS=sqlite, as with
// `store.coalesce_wal_writes: false`).
inline StoreOptions test_vfs(StoreOptions options = {}) {
  const char* vfs = std::getenv("RAMGUARD_TEST_WAL_VFS");
  options.coalesce_wal_writes = vfs == nullptr || std::string_view(vfs) != "sqlite";
  return options;
}

inline std::unique_ptr<Store> open_store(const std::filesystem::path& dir,
                                         const StoreOptions& options = test_vfs()) {
  auto store = Store::open(dir, options);
  EXPECT_TRUE(store.ok()) << (store.ok() ? "" : store.error().message);
  if (!store) return nullptr;
  return std::move(*store);
}

// ---- field-by-field comparisons (the ledger types have no operator==) ----

inline void expect_same(const Instant& a, const Instant& b, const std::string& where) {
  EXPECT_EQ(a.monotonic.count(), b.monotonic.count()) << where;
  EXPECT_EQ(a.wall.count(), b.wall.count()) << where;
}

inline void expect_same(const MemoryReading& a, const MemoryReading& b, const std::string& where) {
  expect_same(a.at, b.at, where + ".at");
  EXPECT_EQ(a.source, b.source) << where;
  EXPECT_EQ(a.rss_bytes, b.rss_bytes) << where;
  EXPECT_EQ(a.anon_bytes, b.anon_bytes) << where;
  EXPECT_EQ(a.file_bytes, b.file_bytes) << where;
  EXPECT_EQ(a.shmem_bytes, b.shmem_bytes) << where;
  EXPECT_EQ(a.swap_bytes, b.swap_bytes) << where;
  EXPECT_EQ(a.hwm_bytes, b.hwm_bytes) << where;
}

inline void expect_same(const std::optional<AllocatorFacts>& a,
                        const std::optional<AllocatorFacts>& b, const std::string& where) {
  ASSERT_EQ(a.has_value(), b.has_value()) << where;
  if (!a) return;
  EXPECT_EQ(a->allocated_bytes, b->allocated_bytes) << where;
  EXPECT_EQ(a->active_bytes, b->active_bytes) << where;
  EXPECT_EQ(a->resident_bytes, b->resident_bytes) << where;
  EXPECT_EQ(a->retained_bytes, b->retained_bytes) << where;
}

inline void expect_same(const std::optional<GcFacts>& a, const std::optional<GcFacts>& b,
                        const std::string& where) {
  ASSERT_EQ(a.has_value(), b.has_value()) << where;
  if (!a) return;
  EXPECT_EQ(a->rss_before_bytes, b->rss_before_bytes) << where;
  EXPECT_EQ(a->rss_after_bytes, b->rss_after_bytes) << where;
  EXPECT_EQ(a->collected_objects, b->collected_objects) << where;
  EXPECT_EQ(a->duration_seconds, b->duration_seconds) << where;
}

inline void expect_same(const Verdict& a, const Verdict& b, const std::string& where) {
  EXPECT_EQ(a.kind, b.kind) << where;
  EXPECT_EQ(a.severity, b.severity) << where;
  EXPECT_EQ(a.passed, b.passed) << where;
  EXPECT_EQ(a.round, b.round) << where;
  EXPECT_EQ(a.phase, b.phase) << where;
  EXPECT_EQ(a.summary, b.summary) << where;
  EXPECT_EQ(a.cleared, b.cleared) << where;
  expect_same(a.at, b.at, where + ".at");
  ASSERT_EQ(a.figures.size(), b.figures.size()) << where;
  for (const auto& [name, value] : a.figures) {
    ASSERT_TRUE(b.figures.contains(name)) << where << " figure " << name;
    const double other = b.figures.at(name);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(other)) << where << " figure " << name;
    } else {
      EXPECT_EQ(value, other) << where << " figure " << name;
    }
  }
}

inline void expect_same(const RunLedger& a, const RunLedger& b) {
  EXPECT_EQ(a.info.run_id, b.info.run_id);
  EXPECT_EQ(a.info.job, b.info.job);
  EXPECT_EQ(a.info.labels, b.info.labels);
  EXPECT_EQ(a.info.target, b.info.target);
  EXPECT_EQ(a.info.owner_uid, b.info.owner_uid);
  EXPECT_EQ(a.info.model_bytes, b.info.model_bytes);
  EXPECT_EQ(a.info.declared_rounds, b.info.declared_rounds);
  EXPECT_EQ(a.info.hosts, b.info.hosts);
  EXPECT_EQ(a.info.estimate_bytes, b.info.estimate_bytes);
  EXPECT_EQ(a.info.plan, b.info.plan);
  EXPECT_EQ(a.info.reservation_id, b.info.reservation_id);
  EXPECT_EQ(a.state, b.state);
  expect_same(a.started, b.started, "started");
  ASSERT_EQ(a.ended.has_value(), b.ended.has_value());
  if (a.ended) expect_same(*a.ended, *b.ended, "ended");
  expect_same(a.baseline, b.baseline, "baseline");
  expect_same(a.last, b.last, "last");
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_EQ(a.peak_exact, b.peak_exact);
  ASSERT_EQ(a.marks.size(), b.marks.size());
  for (std::size_t i = 0; i < a.marks.size(); ++i) {
    const std::string where = "mark " + std::to_string(i);
    EXPECT_EQ(a.marks[i].seq, b.marks[i].seq) << where;
    EXPECT_EQ(a.marks[i].kind, b.marks[i].kind) << where;
    EXPECT_EQ(a.marks[i].phase, b.marks[i].phase) << where;
    EXPECT_EQ(a.marks[i].round, b.marks[i].round) << where;
    expect_same(a.marks[i].reading, b.marks[i].reading, where);
    expect_same(a.marks[i].allocator, b.marks[i].allocator, where);
    expect_same(a.marks[i].gc, b.marks[i].gc, where);
  }
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (std::size_t i = 0; i < a.phases.size(); ++i) {
    const std::string where = "phase " + std::to_string(i);
    EXPECT_EQ(a.phases[i].phase, b.phases[i].phase) << where;
    EXPECT_EQ(a.phases[i].round, b.phases[i].round) << where;
    expect_same(a.phases[i].begin, b.phases[i].begin, where);
    ASSERT_EQ(a.phases[i].end.has_value(), b.phases[i].end.has_value()) << where;
    if (a.phases[i].end) expect_same(*a.phases[i].end, *b.phases[i].end, where);
    EXPECT_EQ(a.phases[i].peak_bytes, b.phases[i].peak_bytes) << where;
    EXPECT_EQ(a.phases[i].peak_exact, b.phases[i].peak_exact) << where;
  }
  ASSERT_EQ(a.boundaries.size(), b.boundaries.size());
  for (std::size_t i = 0; i < a.boundaries.size(); ++i) {
    const std::string where = "boundary " + std::to_string(i);
    EXPECT_EQ(a.boundaries[i].round, b.boundaries[i].round) << where;
    expect_same(a.boundaries[i].reading, b.boundaries[i].reading, where);
    EXPECT_EQ(a.boundaries[i].floor_bytes, b.boundaries[i].floor_bytes) << where;
    EXPECT_EQ(a.boundaries[i].settled, b.boundaries[i].settled) << where;
    expect_same(a.boundaries[i].allocator, b.boundaries[i].allocator, where);
    expect_same(a.boundaries[i].gc, b.boundaries[i].gc, where);
  }
  ASSERT_EQ(a.verdicts.size(), b.verdicts.size());
  for (std::size_t i = 0; i < a.verdicts.size(); ++i) {
    expect_same(a.verdicts[i], b.verdicts[i], "verdict " + std::to_string(i));
  }
}

}  // namespace ramguard::testing
