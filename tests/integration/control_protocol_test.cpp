// The control protocol: a whole run driven through raw JSON lines and typed requests against the
// real daemon, with phase peaks and boundary readings checked against what a real child
// process allocated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
// Peaks are of counted memory: the kernel's high-water mark less what is not counted at the
// mark. The kernel's RSS counters are per-CPU and read approximately (a few dozen pages either
// way), so a 256 MiB spike may read a few pages short of it.
constexpr std::uint64_t kSpikeFloorBytes = 256 * kMiB - kMiB;

const v1::PhaseStat* find_phase(const v1::RunStatus& run, const std::string& name) {
  for (const auto& p : run.phases()) {
    if (p.phase() == name) return &p;
  }
  return nullptr;
}

std::string mark_line(const std::string& run_id, const std::string& kind, const std::string& phase,
                      const std::string& request_id) {
  return R"({"version":1,"requestId":")" + request_id + R"(","mark":{"runId":")" + run_id +
         R"(","kind":")" + kind + R"(","phase":")" + phase + R"("}})";
}

v1::RunStatus run_status(const Daemon& d, const std::string& run_id) {
  v1::Request request;
  request.mutable_status()->set_run_id(run_id);
  const v1::Reply reply = d.call(request);
  if (!reply.has_status() || reply.status().runs_size() != 1) {
    throw std::runtime_error("no status for run " + run_id);
  }
  return reply.status().runs(0);
}

TEST(ControlProtocol, RunWithExactPhasePeaksBoundariesAndEnd) {
  MemChild child;
  auto d = Daemon::with_config("growth:\n  settle: 200ms\n");
  Wire wire(d->socket_path());

  // Run start over a raw line, 64-bit values written as strings (protobuf's JSON mapping).
  const v1::Reply started = wire.call(
      R"({"version":1,"requestId":"s1","runStart":{"pid":)" + std::to_string(child.pid()) +
      R"(,"job":"proto-test","labels":{"build":"final"},"modelBytes":"67108864","declaredRounds":2}})");
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  EXPECT_EQ(started.request_id(), "s1");
  EXPECT_EQ(started.version(), 1u);
  EXPECT_FALSE(started.server_version().empty());
  const std::string run_id = started.run_start().run_id();
  ASSERT_FALSE(run_id.empty());
  EXPECT_TRUE(started.run_start().exact_peaks()) << "root may reset the high-water mark";
  EXPECT_GT(started.run_start().baseline().rss_bytes(), 0u);
  EXPECT_LT(started.run_start().baseline().rss_bytes(), 64 * kMiB);

  // aggregation: 256 MiB allocated and freed inside the phase. The end reading is low, the
  // phase peak is the full allocation (kernel high-water mark, not a sample).
  const v1::Reply agg_begin = wire.call(mark_line(run_id, "PHASE_BEGIN", "aggregation", "m1"));
  ASSERT_TRUE(agg_begin.has_mark()) << agg_begin.DebugString();
  EXPECT_EQ(agg_begin.request_id(), "m1");
  EXPECT_EQ(agg_begin.mark().round(), 1u);
  EXPECT_TRUE(agg_begin.mark().stored());
  child.command("alloc updates " + std::to_string(256 * kMiB));
  child.command("free updates");
  const v1::Reply agg_end = wire.call(mark_line(run_id, "PHASE_END", "aggregation", "m2"));
  ASSERT_TRUE(agg_end.has_mark()) << agg_end.DebugString();
  EXPECT_GE(agg_end.mark().phase_peak_bytes(), kSpikeFloorBytes);
  EXPECT_LT(agg_end.mark().reading().rss_bytes(), 64 * kMiB);
  EXPECT_TRUE(agg_end.mark().reading().complete());
  EXPECT_TRUE(agg_end.mark().peak_exact());
  EXPECT_GT(agg_end.mark().phase_duration_seconds(), 0.0);
  EXPECT_TRUE(agg_end.mark().stored());

  // synchronization, through typed requests: a 300 ms spike is caught at full size.
  v1::Request begin;
  begin.mutable_mark()->set_run_id(run_id);
  begin.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  begin.mutable_mark()->set_phase("synchronization");
  ASSERT_TRUE(d->call(begin).has_mark());
  child.command("spike " + std::to_string(256 * kMiB) + " 300");
  v1::Request end = begin;
  end.mutable_mark()->set_kind(v1::MarkRequest::PHASE_END);
  const v1::Reply sync_end = d->call(end);
  ASSERT_TRUE(sync_end.has_mark()) << sync_end.DebugString();
  EXPECT_GE(sync_end.mark().phase_peak_bytes(), kSpikeFloorBytes);
  EXPECT_LT(sync_end.mark().reading().rss_bytes(), 64 * kMiB);
  EXPECT_GE(sync_end.mark().phase_duration_seconds(), 0.3);

  // Round 1 ends holding 96 MiB; round 2 ends after it was freed.
  child.command("alloc held " + std::to_string(96 * kMiB));
  const v1::Reply round1 = wire.call(mark_line(run_id, "ROUND_END", "", "r1"));
  ASSERT_TRUE(round1.has_mark()) << round1.DebugString();
  EXPECT_EQ(round1.mark().round(), 1u);
  EXPECT_GE(round1.mark().reading().rss_bytes(), 96 * kMiB);
  child.command("free held");
  const v1::Reply round2 = wire.call(mark_line(run_id, "ROUND_END", "", "r2"));
  ASSERT_TRUE(round2.has_mark()) << round2.DebugString();
  EXPECT_EQ(round2.mark().round(), 2u);
  EXPECT_LT(round2.mark().reading().rss_bytes(), 64 * kMiB);

  // Status shows the phases with their exact peaks and both boundaries with settled floors.
  ASSERT_TRUE(eventually(
      [&] {
        const auto run = run_status(*d, run_id);
        return run.boundaries_size() == 2 && run.boundaries(1).floor_bytes() > 0;
      },
      5s));
  const v1::RunStatus run = run_status(*d, run_id);
  EXPECT_EQ(run.state(), "active");
  EXPECT_EQ(run.job(), "proto-test");
  EXPECT_EQ(run.labels().at("build"), "final");
  EXPECT_EQ(run.pid(), static_cast<std::uint32_t>(child.pid()));
  EXPECT_EQ(run.model_bytes(), 64 * kMiB);
  EXPECT_EQ(run.declared_rounds(), 2u);
  EXPECT_EQ(run.round(), 2u) << "status names the last round reached";
  const v1::PhaseStat* agg = find_phase(run, "aggregation");
  const v1::PhaseStat* sync = find_phase(run, "synchronization");
  ASSERT_NE(agg, nullptr) << run.DebugString();
  ASSERT_NE(sync, nullptr) << run.DebugString();
  EXPECT_EQ(agg->peak_bytes(), agg_end.mark().phase_peak_bytes());
  EXPECT_TRUE(agg->peak_exact());
  EXPECT_EQ(agg->round(), 1u);
  EXPECT_GE(sync->peak_bytes(), kSpikeFloorBytes);
  EXPECT_GE(sync->begin_seconds(), agg->begin_seconds() + agg->duration_seconds());
  EXPECT_EQ(run.boundaries(0).round(), 1u);
  EXPECT_GE(run.boundaries(0).reading().rss_bytes(), 96 * kMiB);
  EXPECT_LT(run.boundaries(1).floor_bytes(), 64 * kMiB);
  EXPECT_GE(run.peak_bytes(), kSpikeFloorBytes);
  EXPECT_TRUE(run.peak_exact());

  // Run end: the run's exact peak, then the run is no longer active.
  const v1::Reply ended =
      wire.call(R"({"version":1,"requestId":"e1","runEnd":{"runId":")" + run_id + R"("}})");
  ASSERT_TRUE(ended.has_run_end()) << ended.DebugString();
  EXPECT_GE(ended.run_end().peak_bytes(), kSpikeFloorBytes);
  EXPECT_LT(ended.run_end().reading().rss_bytes(), 64 * kMiB);
  EXPECT_TRUE(ended.run_end().stored());
  EXPECT_EQ(run_status(*d, run_id).state(), "ended");
}

TEST(ControlProtocol, HelloAndRunStartDefaultToTheCallerSeenThroughPeerCredentials) {
  auto d = Daemon::with_args({});
  Wire wire(d->socket_path());
  const v1::Reply hello = wire.call(R"({"version":1,"hello":{"client":"control-test"}})");
  ASSERT_TRUE(hello.has_hello()) << hello.DebugString();
  EXPECT_EQ(hello.hello().protocol_version(), 1u);
  EXPECT_EQ(hello.hello().peer_pid(), static_cast<std::uint32_t>(::getpid()));
  EXPECT_EQ(hello.hello().peer_uid(), ::getuid());
  EXPECT_EQ(hello.hello().budget_bytes(), 16'000'000'000u) << "the embedded default budget (16 GB)";

  // No pid: the run is on the caller's own process, as the socket reports it.
  const v1::Reply started = wire.call(R"({"version":1,"runStart":{"job":"self"}})");
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  const v1::RunStatus run = run_status(*d, started.run_start().run_id());
  EXPECT_EQ(run.pid(), static_cast<std::uint32_t>(::getpid()));
  // Numbers given as strings and as numbers mean the same (JSON mapping of 64-bit fields).
  const v1::Reply admitted =
      wire.call(R"({"version":1,"admit":{"job":"self","estimateBytes":1000000000}})");
  const v1::Reply admitted_str =
      wire.call(R"({"version":1,"admit":{"job":"self","estimateBytes":"1000000000"}})");
  ASSERT_TRUE(admitted.has_admit() && admitted_str.has_admit());
  EXPECT_EQ(admitted.admit().estimate_bytes(), 1'000'000'000u);
  EXPECT_EQ(admitted_str.admit().estimate_bytes(), 1'000'000'000u);
  const v1::Reply ended =
      wire.call(R"({"version":1,"runEnd":{"runId":")" + started.run_start().run_id() + R"("}})");
  EXPECT_TRUE(ended.has_run_end()) << ended.DebugString();
}

}  // namespace
}  // namespace ramguard::testing
