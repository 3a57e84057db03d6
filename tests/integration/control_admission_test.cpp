// Admission through the protocol: 64 concurrent clients racing for a budget they
// cannot all fit in, lease expiry, release at run end and at process exit, and scenario F's
// arithmetic (tests/scenarios/README.md) (baseline + estimate > budget, every term in the reply).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstring>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include "control_wire.hpp"
#include "harness.hpp"

namespace ramguard::testing {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGB = 1'000'000'000ULL;
constexpr int kClients = 64;

v1::AdmitReply admit(const Daemon& d, std::uint64_t estimate, pid_t pid, const std::string& job) {
  v1::Request request;
  request.mutable_admit()->set_job(job);
  request.mutable_admit()->set_estimate_bytes(estimate);
  request.mutable_admit()->set_pid(static_cast<std::uint32_t>(pid));
  const v1::Reply reply = d.call(request);
  if (!reply.has_admit()) throw std::runtime_error("admit failed: " + reply.DebugString());
  return reply.admit();
}

v1::StatusReply status(const Daemon& d) {
  v1::Request request;
  request.mutable_status();
  return d.call(request).status();
}

// Every client on its own connection (Daemon::call connects per request), all released at once.
std::vector<v1::AdmitReply> race(const Daemon& d, pid_t pid,
                                 const std::function<std::uint64_t(int)>& estimate) {
  std::vector<v1::AdmitReply> replies(kClients);
  std::latch go(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      go.arrive_and_wait();
      replies[static_cast<std::size_t>(i)] = admit(d, estimate(i), pid, "race");
    });
  }
  for (auto& t : clients) t.join();
  return replies;
}

// The refusal states the whole sum in words, each term a number with its unit, in order:
// "refused: baseline X + reserved X + estimate X ... = X > budget X - margin X; headroom -X".
// (Scanned by hand: GCC 12 under the sanitizers warns inside std::regex.)
bool states_the_sum(const std::string& reason) {
  std::size_t at = 0;
  for (const char* term : {"refused: baseline ", " + reserved ", " + estimate ", " = ",
                           " > budget ", " - margin ", "; headroom -"}) {
    at = reason.find(term, at);
    if (at == std::string::npos) return false;
    at += std::strlen(term);
    if (at >= reason.size() || reason[at] < '0' || reason[at] > '9') return false;
    const std::size_t unit = reason.find_first_not_of("0123456789.", at);
    if (unit == std::string::npos) return false;
    const std::string_view rest = std::string_view(reason).substr(unit);
    if (!rest.starts_with(" B") && !rest.starts_with(" MB") && !rest.starts_with(" GB")) {
      return false;
    }
  }
  return true;
}

void expect_terms(const v1::AdmitReply& r) {
  EXPECT_TRUE(states_the_sum(r.reason())) << r.reason();
  EXPECT_GT(r.baseline_bytes() + r.reserved_bytes() + r.estimate_bytes(),
            r.budget_bytes() - r.margin_bytes());
  EXPECT_TRUE(r.reservation_id().empty());
}

TEST(ControlAdmission, SixtyFourRacingClientsNeverOvercommitTheBudget) {
  MemChild child;
  child.command("alloc floor " + std::to_string(32 * kMiB));
  auto d = Daemon::with_config("budget: 8GB\nmargin: 500MB\ncontrol:\n  max_connections: 256\n");
  const std::uint64_t limit = 8 * kGB - 500'000'000;

  // Wave 1: 64 x 1 GB. Exactly as many as fit are admitted, each seeing the ones before it.
  const auto wave1 = race(*d, child.pid(), [](int) { return kGB; });
  std::uint64_t admitted_sum = 0, baseline = 0;
  std::set<std::uint64_t> reserved_seen;
  std::vector<std::string> ids;
  for (const auto& r : wave1) {
    EXPECT_EQ(r.budget_bytes(), 8 * kGB);
    EXPECT_EQ(r.margin_bytes(), 500'000'000u);
    EXPECT_GE(r.baseline_bytes(), 32 * kMiB) << "the baseline is the child's RSS";
    baseline = std::max(baseline, r.baseline_bytes());
    const std::int64_t sum =
        static_cast<std::int64_t>(r.baseline_bytes() + r.reserved_bytes() + r.estimate_bytes());
    EXPECT_EQ(r.headroom_bytes(), static_cast<std::int64_t>(limit) - sum);
    if (r.admitted()) {
      admitted_sum += r.estimate_bytes();
      EXPECT_TRUE(reserved_seen.insert(r.reserved_bytes()).second)
          << "two admissions saw the same reserved total: decisions interleaved";
      EXPECT_LE(r.baseline_bytes() + r.reserved_bytes() + r.estimate_bytes(), limit);
      ids.push_back(r.reservation_id());
    } else {
      expect_terms(r);
    }
  }
  const std::uint64_t fit = (limit - baseline) / kGB;
  EXPECT_EQ(ids.size(), fit) << "every client that fits is admitted, and no more";
  EXPECT_LE(admitted_sum + baseline, limit);
  v1::StatusReply st = status(*d);
  EXPECT_EQ(st.reserved_bytes(), admitted_sum);
  EXPECT_EQ(static_cast<std::size_t>(st.reservations_size()), ids.size());
  for (const auto& rv : st.reservations()) {
    EXPECT_EQ(rv.bytes(), kGB);
    EXPECT_TRUE(rv.run_id().empty());
    EXPECT_GT(rv.expires_in_seconds(), 0.0);
  }

  // Wave 2, after releasing everything: mixed sizes, 0.25 to 1.5 GB.
  for (const auto& id : ids) {
    v1::Request release;
    release.mutable_release()->set_reservation_id(id);
    ASSERT_EQ(d->call(release).release().released_bytes(), kGB);
  }
  ASSERT_EQ(status(*d).reserved_bytes(), 0u);
  const auto wave2 =
      race(*d, child.pid(), [](int i) { return static_cast<std::uint64_t>(i % 6 + 1) * kGB / 4; });
  std::uint64_t sum2 = 0;
  for (const auto& r : wave2) {
    if (r.admitted())
      sum2 += r.estimate_bytes();
    else
      expect_terms(r);
  }
  st = status(*d);
  EXPECT_LE(sum2 + baseline, limit);
  EXPECT_EQ(st.reserved_bytes(), sum2);
  // No false refusals: reserved only grew, so each refused estimate exceeds the final headroom.
  for (const auto& r : wave2) {
    if (!r.admitted()) {
      EXPECT_GT(r.estimate_bytes(), limit - baseline - sum2);
    }
  }
}

TEST(ControlAdmission, UnclaimedReservationExpiresAfterTheLeaseAndItsBytesAreFree) {
  MemChild child;
  auto d = Daemon::with_config("budget: 8GB\nadmission:\n  lease: 1s\n");
  const auto first = admit(*d, 7 * kGB, child.pid(), "lease");
  ASSERT_TRUE(first.admitted()) << first.reason();
  EXPECT_DOUBLE_EQ(first.lease_seconds(), 1.0);
  auto st = status(*d);
  ASSERT_EQ(st.reservations_size(), 1);
  EXPECT_EQ(st.reservations(0).reservation_id(), first.reservation_id());
  EXPECT_LE(st.reservations(0).expires_in_seconds(), 1.0);
  const auto second = admit(*d, 7 * kGB, child.pid(), "lease");
  EXPECT_FALSE(second.admitted());
  EXPECT_EQ(second.reserved_bytes(), 7 * kGB);

  ASSERT_TRUE(eventually(
      [&] {
        const auto s = status(*d);
        return s.reservations_size() == 0 && s.reserved_bytes() == 0;
      },
      5s));
  const auto third = admit(*d, 7 * kGB, child.pid(), "lease");
  EXPECT_TRUE(third.admitted()) << third.reason();
  EXPECT_EQ(third.reserved_bytes(), 0u);
  // The expired reservation cannot be claimed any more.
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_reservation_id(first.reservation_id());
  const v1::Reply refused = d->call(start);
  ASSERT_TRUE(refused.has_error()) << refused.DebugString();
  EXPECT_EQ(refused.error().code(), v1::Error::FAILED_PRECONDITION);
  EXPECT_NE(refused.error().message().find(first.reservation_id()), std::string::npos);
  EXPECT_NE(refused.error().message().find("expired"), std::string::npos);
}

v1::RunStatus only_run(const Daemon& d) {
  const auto s = status(d);
  if (s.runs_size() != 1) throw std::runtime_error("expected one run: " + s.DebugString());
  return s.runs(0);
}

std::string start_claiming(const Daemon& d, pid_t pid, const std::string& reservation_id) {
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(pid));
  start.mutable_run_start()->set_job("claim");
  start.mutable_run_start()->set_reservation_id(reservation_id);
  const v1::Reply reply = d.call(start);
  if (!reply.has_run_start()) throw std::runtime_error("run start: " + reply.DebugString());
  return reply.run_start().run_id();
}

TEST(ControlAdmission, ClaimedReservationOutlivesTheLeaseAndEndsWithTheRun) {
  MemChild child;
  auto d = Daemon::with_config("budget: 8GB\nadmission:\n  lease: 1s\n");
  const auto admitted = admit(*d, 2 * kGB, child.pid(), "claim");
  ASSERT_TRUE(admitted.admitted());
  const std::string run_id = start_claiming(*d, child.pid(), admitted.reservation_id());
  auto st = status(*d);
  ASSERT_EQ(st.reservations_size(), 1);
  EXPECT_EQ(st.reservations(0).run_id(), run_id);
  EXPECT_EQ(st.reservations(0).bytes(), 2 * kGB);
  EXPECT_EQ(st.reservations(0).expires_in_seconds(), 0.0) << "claimed: no lease any more";
  EXPECT_EQ(st.runs(0).estimate_bytes(), 2 * kGB);
  // Past the lease, a claimed reservation still holds its bytes (it ends with its run).
  std::this_thread::sleep_for(2s);
  st = status(*d);
  ASSERT_EQ(st.reservations_size(), 1) << st.DebugString();
  EXPECT_EQ(st.reserved_bytes(), 2 * kGB);

  v1::Request end;
  end.mutable_run_end()->set_run_id(run_id);
  ASSERT_TRUE(d->call(end).has_run_end());
  st = status(*d);
  EXPECT_EQ(st.reservations_size(), 0) << st.DebugString();
  EXPECT_EQ(st.reserved_bytes(), 0u);
}

TEST(ControlAdmission, ProcessExitReleasesTheReservationWithAnExitedVerdict) {
  MemChild child;
  auto d = Daemon::with_config("budget: 8GB\n");
  const auto admitted = admit(*d, 3 * kGB, child.pid(), "claim");
  ASSERT_TRUE(admitted.admitted());
  const std::string run_id = start_claiming(*d, child.pid(), admitted.reservation_id());
  v1::Request begin;
  begin.mutable_mark()->set_run_id(run_id);
  begin.mutable_mark()->set_kind(v1::MarkRequest::PHASE_BEGIN);
  begin.mutable_mark()->set_phase("aggregation");
  ASSERT_TRUE(d->call(begin).has_mark());
  ASSERT_EQ(status(*d).reserved_bytes(), 3 * kGB);

  child.kill(SIGKILL);
  child.wait();
  ASSERT_TRUE(eventually([&] { return only_run(*d).state() == "exited"; }, 5s));
  const auto st = status(*d);
  EXPECT_EQ(st.reservations_size(), 0) << st.DebugString();
  EXPECT_EQ(st.reserved_bytes(), 0u);
  const v1::RunStatus run = st.runs(0);
  const auto exited = std::find_if(run.verdicts().begin(), run.verdicts().end(),
                                   [](const v1::Verdict& v) { return v.kind() == "exited"; });
  ASSERT_NE(exited, run.verdicts().end()) << run.DebugString();
  EXPECT_NE(exited->summary().find("aggregation"), std::string::npos) << exited->summary();
  EXPECT_NE(exited->summary().find("9"), std::string::npos) << "names the signal";
  const std::string logged = d->wait_for_log("event=verdict kind=exited", 5s);
  EXPECT_NE(logged.find("run=" + run_id), std::string::npos) << logged;
  // Its bytes are free again.
  EXPECT_TRUE(admit(*d, 7 * kGB, ::getpid(), "after").admitted());
}

TEST(ControlAdmission, ScenarioFRefusesWithEveryTermOfTheSum) {
  MemChild child;
  const std::uint64_t floor_rss = child.command("alloc floor " + std::to_string(64 * kMiB));
  auto d = Daemon::with_config(
      "budget: 64GB\nplans:\n  load2x:\n    overhead: 0\n    phases:\n"
      "      load: { weights: 1, staging: 1 }\n");
  // Given estimate: weights 34 GB, a load needs two copies: 68 GB.
  const auto given = admit(*d, 68 * kGB, child.pid(), "vit");
  EXPECT_FALSE(given.admitted());
  EXPECT_EQ(given.estimate_bytes(), 68 * kGB);
  EXPECT_EQ(given.budget_bytes(), 64 * kGB);
  EXPECT_EQ(given.margin_bytes(), 0u);
  EXPECT_EQ(given.reserved_bytes(), 0u);
  EXPECT_GE(given.baseline_bytes(), 64 * kMiB);
  EXPECT_LE(given.baseline_bytes(), floor_rss + 8 * kMiB);
  // Measured against the effective budget: on a node with less than 64 GB free the node cap
  // (docs/admission.md) is below the configured budget and binds.
  EXPECT_LE(given.effective_budget_bytes(), 64 * kGB);
  EXPECT_EQ(given.headroom_bytes(),
            static_cast<std::int64_t>(given.effective_budget_bytes()) -
                static_cast<std::int64_t>(given.baseline_bytes() + 68 * kGB));
  EXPECT_EQ(given.estimate_source(), "given");
  expect_terms(given);
  EXPECT_NE(given.reason().find("estimate 68.00 GB"), std::string::npos) << given.reason();
  EXPECT_NE(given.reason().find("configured 64.00 GB"), std::string::npos) << given.reason();
  EXPECT_NE(given.reason().find("reserved 0 B"), std::string::npos) << given.reason();

  // The same through a model description and a plan.
  v1::Request request;
  auto* a = request.mutable_admit();
  a->set_job("vit");
  a->set_pid(static_cast<std::uint32_t>(child.pid()));
  a->set_plan("load2x");
  a->mutable_model()->set_model_bytes(34 * kGB);
  const v1::Reply planned = d->call(request);
  ASSERT_TRUE(planned.has_admit()) << planned.DebugString();
  EXPECT_FALSE(planned.admit().admitted());
  EXPECT_EQ(planned.admit().estimate_bytes(), 68 * kGB);
  EXPECT_EQ(planned.admit().estimate_source(), "plan:load2x");
  expect_terms(planned.admit());
  EXPECT_EQ(status(*d).reservations_size(), 0);
}

}  // namespace
}  // namespace ramguard::testing
