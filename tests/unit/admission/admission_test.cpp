// Admission: the rule at its boundary, reservations through their lifecycle (lease, claim,
// release), budget reloads and restart recovery. Time is a FakeClock.
#include "admission/admission.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "admission/reason.hpp"

namespace ramguard {
namespace {

using std::chrono::seconds;
constexpr std::uint64_t kGB = 1'000'000'000;

class AdmissionTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  Admission admission_{16 * kGB, 1 * kGB, seconds(60), clock_};

  double lease_left(const Reservation& r) const {
    return lease_left_seconds(
        r, std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().wall).count());
  }

  Decision admit(std::uint64_t estimate, std::uint64_t baseline = 0, std::string job = "job") {
    return admission_.admit({std::move(job), estimate, EstimateSource{}, baseline});
  }
};

TEST_F(AdmissionTest, ExactlyEqualAdmitsOneByteOverRefuses) {
  // limit = 16 - 1 = 15 GB; baseline 3 GB, reserved 4 GB: room for exactly 8 GB.
  ASSERT_TRUE(admit(4 * kGB).admitted);
  const Decision over = admit(8 * kGB + 1, 3 * kGB);
  EXPECT_FALSE(over.admitted);
  EXPECT_EQ(over.headroom_bytes, -1);
  EXPECT_EQ(over.reserved_bytes, 4 * kGB);
  EXPECT_NE(over.reason.find("refused: baseline 3.00 GB + reserved 4.00 GB + estimate 8.00 GB"),
            std::string::npos)
      << over.reason;
  EXPECT_NE(over.reason.find("> budget 16.00 GB - margin 1.00 GB"), std::string::npos);
  EXPECT_EQ(admission_.reserved_bytes(), 4 * kGB);  // a refusal reserves nothing

  const Decision equal = admit(8 * kGB, 3 * kGB);
  EXPECT_TRUE(equal.admitted) << equal.reason;
  EXPECT_EQ(equal.headroom_bytes, 0);
  EXPECT_EQ(equal.reserved_bytes, 4 * kGB);  // others only, not itself
  EXPECT_NE(equal.reason.find("= 15.00 GB <= budget 16.00 GB - margin 1.00 GB; headroom 0 B"),
            std::string::npos)
      << equal.reason;
  EXPECT_EQ(equal.lease_seconds, 60.0);
  EXPECT_EQ(admission_.reserved_bytes(), 12 * kGB);
  EXPECT_FALSE(admit(3 * kGB + 1).admitted);  // 12 reserved, 3 GB left under the limit
  EXPECT_TRUE(admit(3 * kGB).admitted);
}

TEST_F(AdmissionTest, ReservationsBlockLaterAdmissions) {
  EXPECT_TRUE(admit(10 * kGB).admitted);
  const Decision second = admit(6 * kGB);
  EXPECT_FALSE(second.admitted);
  EXPECT_EQ(second.reserved_bytes, 10 * kGB);
  EXPECT_EQ(second.headroom_bytes, -static_cast<std::int64_t>(1 * kGB));
}

TEST_F(AdmissionTest, ZeroAndHostileEstimatesAreRefused) {
  const Decision zero = admit(0);
  EXPECT_FALSE(zero.admitted);
  EXPECT_NE(zero.reason.find("estimate of 0 B is refused"), std::string::npos);
  const Decision huge = admit(std::numeric_limits<std::uint64_t>::max(), 5 * kGB);
  EXPECT_FALSE(huge.admitted);  // must not wrap around into "fits"
  EXPECT_LT(huge.headroom_bytes, 0);
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
}

TEST(AdmissionReason, MarginLargerThanBudgetAdmitsNothing) {
  const AdmissionOutcome out = evaluate({0, 0, 1, 10, 20});
  EXPECT_FALSE(out.fits);
  EXPECT_EQ(out.limit_bytes, 0u);
  EXPECT_EQ(out.headroom_bytes, -1);
}

TEST_F(AdmissionTest, UnclaimedReservationExpiresAfterLease) {
  const Decision d = admit(10 * kGB);
  ASSERT_TRUE(d.admitted);
  clock_.advance(seconds(59));
  EXPECT_TRUE(admission_.expire().empty());
  ASSERT_EQ(admission_.reservations().size(), 1u);
  EXPECT_DOUBLE_EQ(lease_left(admission_.reservations()[0]), 1.0);
  EXPECT_FALSE(admit(6 * kGB).admitted);

  clock_.advance(seconds(1));
  // Past its lease it no longer counts, even before expire() drops it ...
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_TRUE(admission_.reservations().empty());
  // ... and expire() reports it once.
  const std::vector<Reservation> gone = admission_.expire();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, d.reservation_id);
  EXPECT_EQ(gone[0].bytes, 10 * kGB);
  EXPECT_EQ(gone[0].job, "job");
  EXPECT_TRUE(admission_.expire().empty());
  Status late = admission_.claim(d.reservation_id, "run-1", Caller{});
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message.find("unknown reservation"), std::string::npos);
  EXPECT_TRUE(admit(6 * kGB).admitted);
}

TEST_F(AdmissionTest, ClaimAfterLeaseButBeforeExpireNamesTheLease) {
  const Decision d = admit(kGB);
  clock_.advance(seconds(61));
  Status s = admission_.claim(d.reservation_id, "run-1", Caller{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("expired: no run claimed it within the 60.00 s lease"),
            std::string::npos)
      << s.error().message;
}

TEST_F(AdmissionTest, ClaimedReservationDoesNotExpireAndEndsWithItsRun) {
  const Decision a = admit(5 * kGB, 0, "a");
  const Decision b = admit(3 * kGB, 0, "b");
  ASSERT_TRUE(a.admitted && b.admitted);
  ASSERT_TRUE(admission_.claim(a.reservation_id, "run-a", Caller{}).ok());
  EXPECT_TRUE(admission_.claim(a.reservation_id, "run-a", Caller{}).ok());  // idempotent
  Status other = admission_.claim(a.reservation_id, "run-x", Caller{});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("already claimed by run run-a"), std::string::npos);

  clock_.advance(std::chrono::hours(24));
  const std::vector<Reservation> gone = admission_.expire();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, b.reservation_id);
  const std::vector<Reservation> left = admission_.reservations();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].run_id, "run-a");
  EXPECT_EQ(lease_left(left[0]), 0.0);
  EXPECT_EQ(admission_.reserved_bytes(), 5 * kGB);

  EXPECT_EQ(admission_.release_run("run-other"), 0u);
  EXPECT_EQ(admission_.release_run("run-a"), 5 * kGB);
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_EQ(admission_.release_run("run-a"), 0u);
}

TEST_F(AdmissionTest, ReleaseByIdAndByRun) {
  const Decision a = admit(2 * kGB);
  const Decision b = admit(3 * kGB);
  const Decision c = admit(4 * kGB);
  ASSERT_TRUE(admission_.claim(b.reservation_id, "run-1", Caller{}).ok());
  ASSERT_TRUE(
      admission_.claim(c.reservation_id, "run-1", Caller{}).ok());  // a run may hold several

  Result<std::uint64_t> freed = admission_.release(a.reservation_id);
  ASSERT_TRUE(freed.ok());
  EXPECT_EQ(*freed, 2 * kGB);
  Result<std::uint64_t> twice = admission_.release(a.reservation_id);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("unknown reservation '" + a.reservation_id + "'"),
            std::string::npos);
  EXPECT_EQ(admission_.release_run("run-1"), 7 * kGB);
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_EQ(admission_.release_run(""), 0u);  // never matches unclaimed reservations
}

// The one claim rule: the owner (or a privileged caller) claims an unexpired reservation no
// other run holds, and learns its bytes and the estimate's plan; each failure names itself.
TEST_F(AdmissionTest, ClaimableIsTheOneClaimRule) {
  const Decision d = admission_.admit(
      {"job", kGB, EstimateSource{EstimateKind::kPlan, "fedavg", ""}, 0, /*owner_uid=*/1000});
  const Caller owner{10, 1000, false};
  auto ok = admission_.claimable(d.reservation_id, "run-1", owner);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->bytes, kGB);
  EXPECT_EQ(ok->source.plan, "fedavg");
  EXPECT_TRUE(admission_.claimable(d.reservation_id, "run-1", Caller{1, 0, true}).ok());

  auto other = admission_.claimable(d.reservation_id, "run-1", Caller{11, 2000, false});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_EQ(admission_.claim(d.reservation_id, "run-1", Caller{11, 2000, false}).error().kind,
            ErrorKind::kPermissionDenied);

  ASSERT_TRUE(admission_.claim(d.reservation_id, "run-1", owner).ok());
  auto taken = admission_.claimable(d.reservation_id, "run-2", owner);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().kind, ErrorKind::kFailedPrecondition);
  EXPECT_NE(taken.error().message.find("already claimed by run run-1"), std::string::npos);

  auto unknown = admission_.claimable("rsv-nope", "run-1", owner);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kFailedPrecondition);

  const Decision late = admission_.admit({"job", kGB, EstimateSource{}, 0, 1000});
  clock_.advance(seconds(61));
  auto expired = admission_.claimable(late.reservation_id, "run-3", owner);
  ASSERT_FALSE(expired.ok());
  EXPECT_NE(expired.error().message.find("expired"), std::string::npos);
}

// The per-user cap: uid 1000's reservations may add up to 5 GB; past that it is refused by the
// user cap though the budget has room. Other UIDs and root are not held by uid 1000's share;
// an expired reservation stops counting; 0 turns the cap off.
TEST_F(AdmissionTest, OneUsersReservationsStopAtItsCap) {
  admission_.set_user_cap(5 * kGB);
  EXPECT_TRUE(admission_.admit({"j", 3 * kGB, EstimateSource{}, 0, 1000}).admitted);
  const Decision over = admission_.admit({"j", 3 * kGB, EstimateSource{}, 0, 1000});
  EXPECT_FALSE(over.admitted);
  EXPECT_EQ(over.binding_cap, BudgetCap::kUser);
  EXPECT_EQ(over.owner_reserved_bytes, 3 * kGB);
  EXPECT_EQ(over.user_cap_bytes, 5 * kGB);
  EXPECT_NE(over.reason.find("refused by the user cap: uid 1000 holds reservations of 3.00 GB + "
                             "estimate 3.00 GB = 6.00 GB > admission.max_reserved_per_user "
                             "5.00 GB"),
            std::string::npos)
      << over.reason;
  EXPECT_TRUE(admission_.admit({"j", 3 * kGB, EstimateSource{}, 0, 2000}).admitted);
  EXPECT_TRUE(admission_.admit({"j", 6 * kGB, EstimateSource{}, 0, 0}).admitted);  // root
  clock_.advance(seconds(61));  // uid 1000's reservation expires unclaimed
  EXPECT_TRUE(admission_.admit({"j", 3 * kGB, EstimateSource{}, 0, 1000}).admitted);
  admission_.set_user_cap(0);
  EXPECT_TRUE(admission_.admit({"j", 3 * kGB, EstimateSource{}, 0, 1000}).admitted);
}

TEST_F(AdmissionTest, UnknownIdsError) {
  EXPECT_FALSE(admission_.release("rsv-000000000000").ok());
  Status s = admission_.claim("rsv-nope", "run-1", Caller{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("rsv-nope"), std::string::npos);
  const Decision d = admit(kGB);
  EXPECT_FALSE(admission_.claim(d.reservation_id, "", Caller{}).ok());
}

TEST_F(AdmissionTest, IdsAreUniqueAndWellFormed) {
  Admission roomy(std::numeric_limits<std::uint64_t>::max(), 0, seconds(60), clock_);
  std::set<std::string> ids;
  for (int i = 0; i < 5000; ++i) {
    const Decision d = roomy.admit({"j", 1, EstimateSource{}, 0});
    ASSERT_TRUE(d.admitted);
    ASSERT_EQ(d.reservation_id.size(), 16u);
    ASSERT_EQ(d.reservation_id.rfind("rsv-", 0), 0u);
    ASSERT_EQ(d.reservation_id.find_first_not_of("0123456789abcdef", 4), std::string::npos);
    ids.insert(d.reservation_id);
  }
  EXPECT_EQ(ids.size(), 5000u);
  // Another instance draws a different sequence: ids are not predictable from order.
  Admission other(std::numeric_limits<std::uint64_t>::max(), 0, seconds(60), clock_);
  EXPECT_FALSE(ids.contains(other.admit({"j", 1, EstimateSource{}, 0}).reservation_id));
}

TEST_F(AdmissionTest, BudgetChangeKeepsReservations) {
  const Decision d = admit(12 * kGB);
  ASSERT_TRUE(d.admitted);
  admission_.set_budget(10 * kGB, 0);
  EXPECT_EQ(admission_.budget_bytes(), 10 * kGB);
  EXPECT_EQ(admission_.margin_bytes(), 0u);
  EXPECT_EQ(admission_.reserved_bytes(), 12 * kGB);  // kept although it no longer fits
  const Decision refused = admit(1);
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.budget_bytes, 10 * kGB);
  EXPECT_EQ(refused.headroom_bytes, -static_cast<std::int64_t>(2 * kGB) - 1);
  admission_.set_budget(64 * kGB, 2 * kGB);
  EXPECT_TRUE(admit(50 * kGB).admitted);
  EXPECT_FALSE(admit(1).admitted);  // 12 + 50 = 62 = 64 - 2

  admission_.set_lease(seconds(5));
  EXPECT_EQ(admission_.lease(), seconds(5));
  clock_.advance(seconds(5));
  EXPECT_EQ(admission_.expire().size(), 2u);
}

TEST_F(AdmissionTest, RestoreRebuildsReservations) {
  ASSERT_TRUE(admission_
                  .restore({"rsv-aaaaaaaaaaaa", "vit", 6 * kGB,
                            EstimateSource{EstimateKind::kPlan, "fedavg", ""}, "run-9"})
                  .ok());
  ASSERT_TRUE(admission_.restore({"rsv-bbbbbbbbbbbb", "vit", 2 * kGB, EstimateSource{}, ""}).ok());
  EXPECT_EQ(admission_.reserved_bytes(), 8 * kGB);
  Status dup = admission_.restore({"rsv-aaaaaaaaaaaa", "vit", 1, EstimateSource{}, ""});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("already exists"), std::string::npos);
  EXPECT_FALSE(admission_.restore({"", "vit", 1, EstimateSource{}, ""}).ok());
  EXPECT_FALSE(admission_.restore({"rsv-cccccccccccc", "vit", 0, EstimateSource{}, ""}).ok());
  // Restored over budget is allowed (admitted before); new admissions see them.
  ASSERT_TRUE(
      admission_.restore({"rsv-dddddddddddd", "big", 20 * kGB, EstimateSource{}, "run-10"}).ok());
  EXPECT_FALSE(admit(1).admitted);

  const std::vector<Reservation> views = admission_.reservations();
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].id, "rsv-aaaaaaaaaaaa");  // restore order
  EXPECT_EQ(views[0].source.text(), "plan:fedavg");
  EXPECT_EQ(views[0].source.plan, "fedavg");
  EXPECT_EQ(lease_left(views[1]), 60.0);  // a fresh lease from the restore

  clock_.advance(seconds(60));
  const std::vector<Reservation> gone = admission_.expire();
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].id, "rsv-bbbbbbbbbbbb");
  EXPECT_EQ(admission_.release_run("run-9"), 6 * kGB);
  EXPECT_TRUE(admission_.claim("rsv-dddddddddddd", "run-10", Caller{}).ok());
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

TEST_F(AdmissionTest, OnlyTheAdmittedUidOrAPrivilegedCallerMayReleaseOrClaim) {
  const Decision d = admission_.admit({"job", 10 * kGB, EstimateSource{}, 0, /*owner_uid=*/0});
  ASSERT_TRUE(d.admitted);
  const Caller other{0, 1000, false};
  const Status claim = admission_.check_owner(d.reservation_id, other, "claim");
  ASSERT_FALSE(claim.ok());
  EXPECT_EQ(claim.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_EQ(claim.error().message, "uid 1000 may not claim reservation " + d.reservation_id +
                                       ": it was admitted for uid 0");
  auto released = admission_.release(d.reservation_id, other);
  ASSERT_FALSE(released.ok());
  EXPECT_EQ(released.error().message, "uid 1000 may not release reservation " + d.reservation_id +
                                          ": it was admitted for uid 0");
  EXPECT_EQ(admission_.reserved_bytes(), 10 * kGB) << "a refused release frees nothing";
  EXPECT_EQ(admission_.check_owner("rsv-none", other, "claim").error().kind, ErrorKind::kNotFound);
  // The owner, and root, may.
  const Decision mine = admission_.admit({"job", kGB, EstimateSource{}, 0, 1000});
  EXPECT_TRUE(admission_.check_owner(mine.reservation_id, other, "claim").ok());
  EXPECT_EQ(*admission_.release(mine.reservation_id, other), kGB);
  EXPECT_EQ(*admission_.release(d.reservation_id, Caller{0, 0, true}), 10 * kGB);
}

TEST_F(AdmissionTest, RestoredReservationsKeepTheirOwner) {
  ASSERT_TRUE(admission_.restore({"rsv-a", "job", kGB, EstimateSource{}, "", 1000}).ok());
  ASSERT_TRUE(admission_.restore({"rsv-b", "job", kGB, EstimateSource{}, ""}).ok());
  const auto views = admission_.reservations();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].owner_uid, 1000u);
  EXPECT_EQ(views[1].owner_uid, 0u) << "an owner the ledger did not keep is root's";
  EXPECT_FALSE(admission_.check_owner("rsv-b", Caller{0, 1000, false}, "release").ok());
}

// After a salvage that lost runs or reservations, nothing is admitted for one lease, and each
// refusal names why; then the sum decides again.
TEST(AdmissionHold, RefusesForOneLeaseAfterALossySalvageAndSaysWhy) {
  FakeClock clock;
  Admission admission(16 * kGB, 1 * kGB, std::chrono::seconds(60), clock);
  admission.hold_for_a_lease("the salvaged ledger may lack reservations");
  EXPECT_TRUE(admission.holding());
  const Decision held = admission.admit({"job", 1 * kGB, EstimateSource{}, 0});
  EXPECT_FALSE(held.admitted);
  EXPECT_TRUE(held.reservation_id.empty());
  EXPECT_EQ(held.binding_cap, BudgetCap::kSalvage);
  EXPECT_NE(held.reason.find("the salvaged ledger may lack reservations"), std::string::npos)
      << held.reason;
  EXPECT_NE(held.reason.find("resumes in 60"), std::string::npos) << held.reason;
  EXPECT_TRUE(admission.reservations().empty());
  clock.advance(std::chrono::seconds(59));
  EXPECT_FALSE(admission.admit({"job", 1 * kGB, EstimateSource{}, 0}).admitted);
  clock.advance(std::chrono::seconds(1));
  EXPECT_FALSE(admission.holding());
  EXPECT_TRUE(admission.admit({"job", 1 * kGB, EstimateSource{}, 0}).admitted);
}

}  // namespace
}  // namespace ramguard
