// The protocol's phase name rule, which marks, plan phases and gap rules share.
#include "ramguard/base/protocol.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ramguard {
namespace {

TEST(PhaseName, MarksAndPlansAcceptTheSameNames) {
  for (const char* ok : {"load", "aggregation", "agg.step-2", "save_0", "a"}) {
    EXPECT_TRUE(protocol::is_phase_name(ok)) << ok;
  }
  EXPECT_TRUE(protocol::is_phase_name(std::string(protocol::kMaxPhaseBytes, 'x')));
  for (const char* bad : {"", "Load", "two words", "load/step", "fase\xc3\xa9"}) {
    EXPECT_FALSE(protocol::is_phase_name(bad)) << bad;
  }
  EXPECT_FALSE(protocol::is_phase_name(std::string(protocol::kMaxPhaseBytes + 1, 'x')));
  static_assert(protocol::is_phase_name("aggregation"));  // usable at compile time
}

}  // namespace
}  // namespace ramguard
