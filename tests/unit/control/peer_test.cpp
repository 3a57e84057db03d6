// A Peer nobody filled in once acted as root. It must fail closed.
#include "control/peer.hpp"

#include <gtest/gtest.h>

#include "control/connection_slots.hpp"

namespace ramguard::control {
namespace {

TEST(Peer, DefaultConstructedIsNotPrivileged) {
  const Peer peer;
  EXPECT_FALSE(peer.privileged());
  EXPECT_NE(peer.uid, 0u);
}

TEST(Peer, RootAndTokenPeersArePrivilegedOthersNot) {
  Peer root;
  root.credentials_known = true;
  root.uid = 0;
  EXPECT_TRUE(root.privileged());
  Peer user = root;
  user.uid = 1000;
  EXPECT_FALSE(user.privileged());
  Peer tcp;
  tcp.token_verified = true;
  EXPECT_TRUE(tcp.privileged());
  // Kernel credentials win over a stray token flag: a uid-1000 peer stays uid 1000.
  user.token_verified = true;
  EXPECT_FALSE(user.privileged());
}

TEST(ConnectionSlots, ShareReservedSlotsAndRelease) {
  ServerLimits limits;
  limits.max_connections = 4;
  limits.reserved_connections = 1;
  limits.max_connections_per_uid = 2;
  auto slots = std::make_shared<ConnectionSlots>(/*daemon_uid=*/500);
  auto user = [](uid_t uid) {
    Peer p;
    p.credentials_known = true;
    p.uid = uid;
    return p;
  };
  using SlotPtr = std::unique_ptr<ConnectionSlots::Slot>;
  std::vector<SlotPtr> held;
  auto take = [&](const Peer& p) -> std::string {
    auto got = ConnectionSlots::take(slots, p, limits);
    if (auto* refusal = std::get_if<std::string>(&got)) return *refusal;
    held.push_back(std::move(std::get<SlotPtr>(got)));
    return "ok";
  };
  EXPECT_EQ(take(user(1000)), "ok");
  EXPECT_EQ(take(user(1000)), "ok");
  EXPECT_NE(take(user(1000)).find("from uid 1000 (limit 2 per user)"), std::string::npos);
  EXPECT_EQ(take(user(1001)), "ok");
  EXPECT_NE(take(user(1002)).find("of which 1 are kept for root"), std::string::npos);
  EXPECT_EQ(take(user(500)), "ok") << "the daemon's own uid gets the reserved slot";
  EXPECT_NE(take(user(0)).find("too many connections (limit 4)"), std::string::npos);
  EXPECT_EQ(slots->total(), 4u);
  held.clear();
  EXPECT_EQ(slots->total(), 0u);
  EXPECT_EQ(take(user(1002)), "ok");
}

}  // namespace
}  // namespace ramguard::control
