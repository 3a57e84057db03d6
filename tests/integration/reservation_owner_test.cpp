// Reservations belong to the UID that was admitted: another member of the socket's group can
// neither release nor claim root's reservation, so root's budget is never overcommitted; and
// control.peers_read decides what other UIDs may read (own by default, or all).
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

constexpr std::uint64_t kGB = 1'000'000'000;

std::unique_ptr<Daemon> open_daemon(const std::string& extra_control = "") {
  return daemon_open_to_all(extra_control + "budget: 16GB\n");
}

v1::Reply admit(const Daemon& d, std::uint64_t bytes) {
  v1::Request r;
  r.mutable_admit()->set_job("root-job");
  r.mutable_admit()->set_estimate_bytes(bytes);
  return d.call(r);
}

TEST(ReservationOwner, AnotherUidCannotReleaseOrClaimRootsReservation) {
  auto d = open_daemon();
  const v1::Reply first = admit(*d, 10 * kGB);
  ASSERT_TRUE(first.admit().admitted()) << first.DebugString();
  const std::string rsv = first.admit().reservation_id();

  const std::string replies = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    std::string out;
    out += wire.roundtrip(R"({"version":1,"release":{"reservationId":")" + rsv + R"("}})") + "\n";
    // Its own process (pid 0: the caller), but root's reservation.
    out += wire.roundtrip(R"({"version":1,"runStart":{"reservationId":")" + rsv + R"("}})") + "\n";
    return out;
  });
  const auto got = replies_of(replies);
  ASSERT_EQ(got.size(), 2u) << replies;
  EXPECT_EQ(got[0].error().code(), v1::Error::PERMISSION_DENIED) << replies;
  EXPECT_EQ(got[0].error().message(),
            "uid 65534 may not release reservation " + rsv + ": it was admitted for uid 0");
  EXPECT_EQ(got[1].error().code(), v1::Error::PERMISSION_DENIED) << replies;
  EXPECT_EQ(got[1].error().message(),
            "uid 65534 may not claim reservation " + rsv + ": it was admitted for uid 0");

  // Root's 10 GB still count: 12 GB more would overcommit 16 GB and is refused.
  const v1::Reply second = admit(*d, 12 * kGB);
  EXPECT_FALSE(second.admit().admitted()) << second.DebugString();
  EXPECT_EQ(second.admit().reserved_bytes(), 10 * kGB);

  // Root itself claims it for its run, and the status shows who owns it.
  MemChild child;
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  start.mutable_run_start()->set_reservation_id(rsv);
  const v1::Reply started = d->call(start);
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  v1::Request status;
  status.mutable_status();
  const v1::Reply s = d->call(status);
  ASSERT_EQ(s.status().reservations_size(), 1) << s.DebugString();
  EXPECT_EQ(s.status().reservations(0).run_id(), started.run_start().run_id());
  EXPECT_EQ(s.status().reservations(0).owner_uid(), 0u);
  EXPECT_EQ(s.status().reserved_bytes(), 10 * kGB);
}

TEST(ReservationOwner, AnotherUidReleasesItsOwnAndRootMayReleaseAnyones) {
  auto d = open_daemon();
  const std::string replies = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    std::string out;
    out +=
        wire.roundtrip(R"({"version":1,"admit":{"job":"a","estimateBytes":"2000000000"}})") + "\n";
    const v1::Reply admitted = parse_reply(out.substr(0, out.size() - 1));
    const std::string id = admitted.admit().reservation_id();
    out += wire.roundtrip(R"({"version":1,"release":{"reservationId":")" + id + R"("}})") + "\n";
    out +=
        wire.roundtrip(R"({"version":1,"admit":{"job":"b","estimateBytes":"3000000000"}})") + "\n";
    return out;
  });
  const auto got = replies_of(replies);
  ASSERT_EQ(got.size(), 3u) << replies;
  ASSERT_TRUE(got[0].admit().admitted()) << replies;
  EXPECT_EQ(got[1].release().released_bytes(), 2 * kGB) << replies;
  ASSERT_TRUE(got[2].admit().admitted()) << replies;
  // Root (privileged) may release another UID's reservation.
  v1::Request release;
  release.mutable_release()->set_reservation_id(got[2].admit().reservation_id());
  const v1::Reply released = d->call(release);
  EXPECT_EQ(released.release().released_bytes(), 3 * kGB) << released.DebugString();
}

TEST(ReservationOwner, OwnerSurvivesARestart) {
  auto state = make_temp_dir("owner-state");
  std::string rsv;
  {
    Daemon::Options o;
    o.config_yaml = "budget: 16GB\ncontrol:\n  socket_mode: \"0666\"\n";
    o.state_dir = state;
    auto d = Daemon::start(o);
    const v1::Reply first = admit(*d, 10 * kGB);
    ASSERT_TRUE(first.admit().admitted());
    rsv = first.admit().reservation_id();
    d->kill_hard();
  }
  Daemon::Options o;
  o.config_yaml = "budget: 16GB\ncontrol:\n  socket_mode: \"0666\"\n";
  o.state_dir = state;
  auto d = Daemon::start(o);
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string replies = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    return wire.roundtrip(R"({"version":1,"release":{"reservationId":")" + rsv + R"("}})");
  });
  const v1::Reply got = parse_reply(replies);
  EXPECT_EQ(got.error().code(), v1::Error::PERMISSION_DENIED) << replies;
  EXPECT_NE(got.error().message().find("it was admitted for uid 0"), std::string::npos);
  EXPECT_FALSE(admit(*d, 12 * kGB).admit().admitted());
  std::filesystem::remove_all(state);
}

// A reservation admitted on a plan keeps its plan over kill -9: the run that claims it after the
// restart is judged by the plan's phases (its aggregation's plan_bytes: 3 copies of 50 MB +
// 0.16 GB), as a run claiming it before the restart would be.
TEST(ReservationOwner, ARunClaimingARestoredReservationHasItsPlan) {
  auto state = make_temp_dir("plan-state");
  std::string rsv;
  Daemon::Options o;
  o.config_yaml = "budget: 16GB\n";
  o.state_dir = state;
  {
    auto d = Daemon::start(o);
    v1::Request ask;
    ask.mutable_admit()->set_job("restored-plan");
    ask.mutable_admit()->set_plan("fedavg");
    ask.mutable_admit()->set_hosts(1);
    ask.mutable_admit()->mutable_model()->set_model_bytes(50'000'000);
    const v1::Reply first = d->call(ask);
    ASSERT_TRUE(first.admit().admitted()) << first.DebugString();
    EXPECT_EQ(first.admit().estimate_source(), "plan:fedavg");
    rsv = first.admit().reservation_id();
    d->kill_hard();
  }
  auto d = Daemon::start(o);
  MemChild coordinator;
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(coordinator.pid()));
  start.mutable_run_start()->set_job("restored-plan");
  start.mutable_run_start()->set_model_bytes(50'000'000);
  start.mutable_run_start()->set_hosts(1);
  start.mutable_run_start()->set_reservation_id(rsv);
  const v1::Reply started = d->call(start);
  ASSERT_TRUE(started.has_run_start()) << started.DebugString();
  const std::string run_id = started.run_start().run_id();
  for (auto kind : {v1::MarkRequest::PHASE_BEGIN, v1::MarkRequest::PHASE_END}) {
    v1::Request mark;
    mark.mutable_mark()->set_run_id(run_id);
    mark.mutable_mark()->set_kind(kind);
    mark.mutable_mark()->set_phase("aggregation");
    const v1::Reply marked = d->call(mark);
    ASSERT_TRUE(marked.has_mark()) << marked.DebugString();
    EXPECT_TRUE(marked.mark().warning().empty()) << marked.mark().warning();
  }
  v1::Request status;
  status.mutable_status()->set_run_id(run_id);
  const v1::Reply got = d->call(status);
  ASSERT_EQ(got.status().runs_size(), 1) << got.DebugString();
  ASSERT_EQ(got.status().runs(0).phases_size(), 1) << got.DebugString();
  EXPECT_EQ(got.status().runs(0).phases(0).plan_bytes(), 310'000'000u) << got.DebugString();
  std::filesystem::remove_all(state);
}

// Calibration is unpoisonable: uid 65534 ends a tiny run under the job name "vit"; its own
// calibrated admission uses it (so the run is on record), root's does not (uid 65534 is not in
// admission.trusted_uids) and keeps the given estimate.
TEST(Calibration, AnotherUsersRunUnderTheJobNameDoesNotSetItsEstimate) {
  Daemon::Options o;
  o.config_yaml = "budget: 16GB\ncontrol:\n  socket_mode: \"0666\"\n";
  auto d = Daemon::start(o);
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string text = as_uid_nobody([&] {
    Wire wire(d->socket_path());
    const v1::Reply started =
        parse_reply(wire.roundtrip(R"({"version":1,"runStart":{"job":"vit"}})"));
    if (!started.has_run_start()) return "start: " + started.DebugString();
    std::string out = wire.roundtrip(R"({"version":1,"runEnd":{"runId":")" +
                                     started.run_start().run_id() + R"("}})") +
                      "\n";
    out += wire.roundtrip(
        R"({"version":1,"admit":{"job":"vit","estimateBytes":"2000000000","useCalibrated":true}})");
    return out + "\n";
  });
  const std::vector<v1::Reply> theirs = replies_of(text);
  ASSERT_EQ(theirs.size(), 2u) << text;
  ASSERT_TRUE(theirs[0].has_run_end()) << text;
  ASSERT_TRUE(theirs[1].has_admit()) << text;
  EXPECT_EQ(theirs[1].admit().estimate_source().rfind("calibrated:", 0), 0u) << text;
  EXPECT_LT(theirs[1].admit().estimate_bytes(), 1 * kGB) << "the tiny run's peak x 1.1";

  v1::Request ask;
  ask.mutable_admit()->set_job("vit");
  ask.mutable_admit()->set_estimate_bytes(2 * kGB);
  ask.mutable_admit()->set_use_calibrated(true);
  const v1::Reply mine = d->call(ask);
  ASSERT_TRUE(mine.has_admit()) << mine.DebugString();
  EXPECT_EQ(mine.admit().estimate_source(), "given") << mine.admit().reason();
  EXPECT_EQ(mine.admit().estimate_bytes(), 2 * kGB);
}

// Fairness: with a 1 GB cap per user and one active run per user, uid 65534 gets 0.6 GB and
// then is refused 0.6 GB more by the user cap (the budget had room), and its second run is
// refused; root, the operator, is not capped.
TEST(UserCaps, OneUserCannotHoldTheBudgetOrFillTheGuardWithRuns) {
  Daemon::Options o;
  o.config_yaml =
      "budget: 16GB\ncontrol:\n  socket_mode: \"0666\"\nadmission:\n"
      "  max_reserved_per_user: 1GB\n  max_active_runs_per_user: 1\n";
  auto d = Daemon::start(o);
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string text = as_uid_nobody([&] {
    const pid_t sleeper = ::fork();  // a second process of uid 65534's
    if (sleeper == 0) {
      ::pause();
      ::_exit(0);
    }
    Wire wire(d->socket_path());
    const std::string admit = R"({"version":1,"admit":{"job":"j","estimateBytes":"600000000"}})";
    std::string out = wire.roundtrip(admit) + "\n";
    out += wire.roundtrip(admit) + "\n";
    out += wire.roundtrip(R"({"version":1,"runStart":{"job":"j"}})") + "\n";
    out += wire.roundtrip(R"({"version":1,"runStart":{"job":"j","pid":)" + std::to_string(sleeper) +
                          "}}") +
           "\n";
    ::kill(sleeper, SIGKILL);
    ::waitpid(sleeper, nullptr, 0);
    return out;
  });
  const std::vector<v1::Reply> got = replies_of(text);
  ASSERT_EQ(got.size(), 4u) << text;
  EXPECT_TRUE(got[0].admit().admitted()) << text;
  EXPECT_FALSE(got[1].admit().admitted()) << text;
  EXPECT_EQ(got[1].admit().budget_cap(), "user") << text;
  EXPECT_NE(got[1].admit().reason().find("refused by the user cap: uid 65534 holds reservations "
                                         "of 0.60 GB + estimate 0.60 GB = 1.20 GB > "
                                         "admission.max_reserved_per_user 1.00 GB"),
            std::string::npos)
      << text;
  EXPECT_TRUE(got[2].has_run_start()) << text;
  EXPECT_EQ(got[3].error().code(), v1::Error::RESOURCE_EXHAUSTED) << text;
  EXPECT_NE(got[3].error().message().find("max_active_runs_per_user"), std::string::npos) << text;

  EXPECT_TRUE(admit(*d, 3 * kGB).admit().admitted()) << "root is not capped";
}

// A default install: one group member reserved 15.97 GB and 253 of 256 run slots, and root was
// refused. Now 75% of the budget and 32 active runs are a user's by default; each refusal is
// logged and counted.
TEST(UserCaps, AreOnByDefaultAndTheirRefusalsLoggedAndCounted) {
  auto d = Daemon::with_config("budget: 2GB\ncontrol:\n  socket_mode: \"0666\"\n");
  std::filesystem::permissions(d->socket_path().parent_path(), std::filesystem::perms(0755));
  const std::string text = as_uid_nobody([&] {
    std::vector<pid_t> sleepers;
    for (int i = 0; i < 33; ++i) {
      const pid_t p = ::fork();
      if (p == 0) {
        ::pause();
        ::_exit(0);
      }
      sleepers.push_back(p);
    }
    Wire wire(d->socket_path());
    std::string out;
    out +=
        wire.roundtrip(R"({"version":1,"admit":{"job":"j","estimateBytes":"1400000000"}})") + "\n";
    out +=
        wire.roundtrip(R"({"version":1,"admit":{"job":"j","estimateBytes":"200000000"}})") + "\n";
    for (const pid_t p : sleepers) {
      // The refusal's line is limited like any line of this user's: its 33 lines so far took
      // the burst, and a second gives the refusal a token back.
      if (p == sleepers.back()) std::this_thread::sleep_for(std::chrono::seconds(1));
      out += wire.roundtrip(R"({"version":1,"runStart":{"job":"j","pid":)" + std::to_string(p) +
                            "}}") +
             "\n";
    }
    for (const pid_t p : sleepers) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    return out;
  });
  const std::vector<v1::Reply> got = replies_of(text);
  ASSERT_EQ(got.size(), 35u) << text;
  EXPECT_TRUE(got[0].admit().admitted()) << text;
  EXPECT_FALSE(got[1].admit().admitted()) << text;
  EXPECT_EQ(got[1].admit().budget_cap(), "user") << got[1].DebugString();
  EXPECT_NE(got[1].admit().reason().find("admission.max_reserved_per_user 1.50 GB"),
            std::string::npos)
      << got[1].admit().reason();
  for (std::size_t i = 2; i < 34; ++i) EXPECT_TRUE(got[i].has_run_start()) << i << text;
  EXPECT_EQ(got[34].error().code(), v1::Error::RESOURCE_EXHAUSTED) << text;
  EXPECT_NE(got[34].error().message().find("uid 65534 has 32 active runs"), std::string::npos);

  const std::string refused = d->wait_for_log("event=run.start_refused");
  EXPECT_NE(refused.find("cap=user owner_uid=65534"), std::string::npos) << refused;
  const std::string scrape = d->scrape_metrics();
  EXPECT_EQ(metric_value(scrape, "ramguard_run_refusals_by_cap_total{cap=\"user\"}"), 1.0);
  EXPECT_EQ(metric_value(scrape, "ramguard_admission_refusals_by_cap_total{cap=\"user\"}"), 1.0);
  EXPECT_TRUE(admit(*d, kGB / 2).admit().admitted()) << "root keeps the rest of the budget";
}

// Root's run and reservation, as seen by uid 65534 under each peers_read setting.
struct PeerView {
  std::vector<v1::Reply> replies;
  std::string run_id;
  std::string rsv;
};

PeerView peer_view(const Daemon& d, const MemChild& child) {
  v1::Request start;
  start.mutable_run_start()->set_pid(static_cast<std::uint32_t>(child.pid()));
  const v1::Reply started = d.call(start);
  if (!started.has_run_start()) throw std::runtime_error(started.DebugString());
  PeerView view;
  view.run_id = started.run_start().run_id();
  view.rsv = admit(d, kGB).admit().reservation_id();
  const std::string text = as_uid_nobody([&] {
    Wire wire(d.socket_path());
    std::string out;
    out += wire.roundtrip(R"({"version":1,"status":{}})") + "\n";
    out += wire.roundtrip(R"({"version":1,"status":{"runId":")" + view.run_id + R"("}})") + "\n";
    out += wire.roundtrip(R"({"version":1,"report":{"runId":")" + view.run_id + R"("}})") + "\n";
    out += wire.roundtrip(R"({"version":1,"listRuns":{}})") + "\n";
    out += wire.roundtrip(R"({"version":1,"admit":{"estimateBytes":"1000","pid":)" +
                          std::to_string(child.pid()) + "}}") +
           "\n";
    out += wire.roundtrip(R"({"version":1,"admit":{"estimateBytes":"1000"}})") + "\n";
    return out;
  });
  view.replies = replies_of(text);
  if (view.replies.size() != 6) throw std::runtime_error("replies: " + text);
  return view;
}

TEST(PeersRead, AllLetsGroupMembersReadEveryRunButNotChangeIt) {
  MemChild child;
  auto d = open_daemon("  peers_read: all\n");
  const PeerView v = peer_view(*d, child);
  EXPECT_EQ(v.replies[0].status().runs_size(), 1);
  EXPECT_EQ(v.replies[0].status().reservations_size(), 1);
  EXPECT_EQ(v.replies[1].status().runs(0).run_id(), v.run_id);
  EXPECT_EQ(v.replies[2].report().run().run_id(), v.run_id);
  EXPECT_GE(v.replies[3].list_runs().runs_size(), 1);
  // Admitting with root's PID is allowed (its RSS is the baseline); the reservation is the
  // caller's, not root's.
  ASSERT_TRUE(v.replies[4].admit().admitted()) << v.replies[4].DebugString();
  EXPECT_GT(v.replies[4].admit().baseline_bytes(), 0u);
  v1::Request status;
  status.mutable_status();
  const v1::Reply root_view = d->call(status);
  ASSERT_EQ(root_view.status().reservations_size(), 3) << root_view.DebugString();
  for (const auto& r : root_view.status().reservations()) {
    EXPECT_EQ(r.owner_uid(), r.reservation_id() == v.rsv ? 0u : kNobodyUid) << r.DebugString();
  }
}

TEST(PeersRead, OwnByDefaultHidesOtherUidsRunsReservationsAndProcesses) {
  MemChild child;
  auto d = open_daemon();  // the default: private
  const PeerView v = peer_view(*d, child);
  const v1::StatusReply& all = v.replies[0].status();
  EXPECT_EQ(all.runs_size(), 0) << all.DebugString();
  EXPECT_EQ(all.reservations_size(), 0) << all.DebugString();
  EXPECT_EQ(all.reserved_bytes(), kGB) << "totals stay visible: every admission states them";
  EXPECT_EQ(all.budget_bytes(), 16 * kGB);
  const std::string denied = "uid 65534 may not read run " + v.run_id +
                             ": it belongs to uid 0 (control.peers_read is own)";
  EXPECT_EQ(v.replies[1].error().code(), v1::Error::PERMISSION_DENIED);
  EXPECT_EQ(v.replies[1].error().message(), denied);
  EXPECT_EQ(v.replies[2].error().code(), v1::Error::PERMISSION_DENIED);
  EXPECT_EQ(v.replies[2].error().message(), denied);
  EXPECT_EQ(v.replies[3].list_runs().runs_size(), 0);
  EXPECT_EQ(v.replies[4].error().code(), v1::Error::PERMISSION_DENIED);
  EXPECT_EQ(v.replies[4].error().message(),
            "uid 65534 may not admit with PID " + std::to_string(child.pid()) +
                ": it is owned by uid 0 (control.peers_read is own)");
  // Its own admission works, and root still sees everything.
  EXPECT_TRUE(v.replies[5].admit().admitted()) << v.replies[5].DebugString();
  v1::Request status;
  status.mutable_status();
  const v1::Reply root_view = d->call(status);
  EXPECT_EQ(root_view.status().runs_size(), 1);
  EXPECT_EQ(root_view.status().reservations_size(), 2) << "root's and the one nobody was allowed";
}

}  // namespace
}  // namespace ramguard::testing
