// A census's placement (its ranges against /proc/PID/maps and pagemap) is read on a worker
// before its mark is applied and answered: the coordinator that sent it waits for the reply,
// so its memory is still what the census counted, while the real daemon answers another run's
// marks and a report meanwhile. The census is kept with its placement when the reply comes.
#include <gtest/gtest.h>
#include <poll.h>

#include <thread>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

// 1 TiB of address space, reserved and never touched (no memory): 2 GiB of pagemap entries to
// read, far longer than a few round trips, however fast the machine.
constexpr std::uint64_t kReservedBytes = 1ULL << 40;

std::string start_run(const Daemon& d, pid_t pid) {
  v1::Request r;
  r.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  r.mutable_run_start()->set_job("census-placement");
  const v1::Reply reply = d.call(r);
  EXPECT_FALSE(reply.has_error()) << reply.error().message();
  return reply.run_start().run_id();
}

v1::Request mark(const std::string& run, v1::MarkRequest::Kind kind) {
  v1::Request r;
  r.mutable_mark()->set_run_id(run);
  r.mutable_mark()->set_kind(kind);
  r.mutable_mark()->set_phase("aggregation");
  return r;
}

v1::Request census_mark(const std::string& run, std::uint64_t address) {
  v1::Request r = mark(run, v1::MarkRequest::ROUND_END);
  v1::Census& c = *r.mutable_mark()->mutable_census();
  c.set_mode("roots");
  c.set_storages(1);
  c.set_host_bytes(kReservedBytes);
  v1::CensusGroup& g = *c.add_groups();
  g.set_holder("server.reserved");
  g.set_reachable(true);
  g.set_kind("tensor");
  g.set_bytes(kReservedBytes);
  g.set_storages(1);
  g.set_objects(1);
  v1::CensusRange& range = *g.add_ranges();
  range.set_address(address);
  range.set_nbytes(kReservedBytes);
  return r;
}

std::vector<v1::RoundCensus> censuses_of(const Daemon& d, const std::string& run) {
  v1::Request r;
  r.mutable_report()->set_run_id(run);
  const v1::Reply reply = d.call(r);
  EXPECT_FALSE(reply.has_error()) << reply.error().message();
  const auto& censuses = reply.report().run().censuses();
  return {censuses.begin(), censuses.end()};
}

bool readable(const Wire& wire) {
  pollfd p{wire.fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

TEST(CensusPlacement, PlacedOnAWorkerBeforeItsMarkIsAnsweredWhileOtherRunsAreServed) {
  Daemon::Options o;
  o.config_yaml = "budget: 16GB\n";
  auto d = Daemon::start(o);
  MemChild a;
  MemChild b;
  const std::uint64_t address = a.command("reserve big " + std::to_string(kReservedBytes));
  ASSERT_NE(address, 0U);
  const std::string run_a = start_run(*d, a.pid());
  const std::string run_b = start_run(*d, b.pid());

  Wire wire_a(d->socket_path());
  Wire wire_b(d->socket_path());
  wire_a.send(to_json(census_mark(run_a, address)) + "\n");
  std::this_thread::sleep_for(200ms);  // read by the daemon before run b's calls
  // The other coordinator's marks, and a report, are answered while the census is placed:
  // on the loop, the placement (and the census) would have been done before them.
  for (auto kind :
       {v1::MarkRequest::PHASE_BEGIN, v1::MarkRequest::PHASE_END, v1::MarkRequest::ROUND_END}) {
    const v1::Reply other = wire_b.call(mark(run_b, kind));
    ASSERT_FALSE(other.has_error()) << other.error().message();
  }
  EXPECT_TRUE(censuses_of(*d, run_a).empty()) << "the census was kept before run b was served";
  EXPECT_FALSE(readable(wire_a)) << "the census mark was answered before run b's marks";

  // The reply comes once the worker has placed the ranges, with the census kept: the whole
  // range is anonymous address space, none of it resident.
  const v1::Reply reply = parse_reply(wire_a.read_line());
  ASSERT_FALSE(reply.has_error()) << reply.error().message();
  EXPECT_EQ(reply.mark().warning(), "");
  EXPECT_EQ(reply.mark().round(), 1U);
  const auto censuses = censuses_of(*d, run_a);
  ASSERT_EQ(censuses.size(), 1U);
  const v1::CensusPlacement& placed = censuses[0].placement();
  EXPECT_EQ(placed.anon_bytes(), kReservedBytes);
  EXPECT_EQ(placed.unmapped_bytes(), 0U);
  EXPECT_TRUE(placed.resident_known());
  EXPECT_EQ(placed.resident_bytes(), 0U);
  EXPECT_EQ(placed.error(), "");
}

TEST(CensusPlacement, ACensusMarkForAnUnknownRunIsAnsweredWithItsError) {
  Daemon::Options o;
  o.config_yaml = "budget: 16GB\n";
  auto d = Daemon::start(o);
  const v1::Reply reply = d->call(census_mark("no-such-run", 4096));
  ASSERT_TRUE(reply.has_error());
  EXPECT_NE(reply.error().message().find("no-such-run"), std::string::npos)
      << reply.error().message();
}

}  // namespace
}  // namespace ramguard::testing
