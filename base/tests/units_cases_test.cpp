// The base's units against the case table the Python client is held to as well.
#include "unit/common/units_cases.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::number;
using testing::where;

TEST(UnitsCases, TableCoversEveryKind) {
  std::set<std::string> kinds;
  for (const auto& c : testing::read_units_cases()) kinds.insert(c.kind);
  EXPECT_EQ(kinds, (std::set<std::string>{"size", "size_rejected", "duration", "duration_rejected",
                                          "bytes", "bytes_binary", "seconds"}));
}

TEST(UnitsCases, BaseAgreesWithTheTable) {
  for (const auto& c : testing::read_units_cases()) {
    if (c.kind == "size") {
      auto r = parse_size_bytes(c.input);
      ASSERT_TRUE(r.ok()) << where(c) << ": " << r.error().message;
      EXPECT_EQ(*r, number<std::uint64_t>(c.expected)) << where(c);
    } else if (c.kind == "size_rejected") {
      auto r = parse_size_bytes(c.input);
      ASSERT_FALSE(r.ok()) << where(c) << " gave " << *r;
      EXPECT_THAT(r.error().message, HasSubstr("invalid size '" + c.input + "'")) << where(c);
      EXPECT_THAT(r.error().message, HasSubstr(c.expected)) << where(c);
    } else if (c.kind == "duration") {
      auto r = parse_duration(c.input);
      ASSERT_TRUE(r.ok()) << where(c) << ": " << r.error().message;
      EXPECT_EQ(r->count(), number<std::int64_t>(c.expected)) << where(c);
    } else if (c.kind == "duration_rejected") {
      auto r = parse_duration(c.input);
      ASSERT_FALSE(r.ok()) << where(c) << " gave " << r->count() << " ns";
      EXPECT_THAT(r.error().message, HasSubstr("invalid duration '" + c.input + "'")) << where(c);
      EXPECT_THAT(r.error().message, HasSubstr(c.expected)) << where(c);
    } else if (c.kind == "bytes") {
      EXPECT_EQ(format_bytes(number<double>(c.input)), c.expected) << where(c);
    } else if (c.kind == "bytes_binary") {
      EXPECT_EQ(format_bytes(number<double>(c.input), true), c.expected) << where(c);
    } else if (c.kind == "seconds") {
      EXPECT_EQ(format_seconds(number<double>(c.input)), c.expected) << where(c);
    } else {
      ADD_FAILURE() << where(c) << ": unknown kind";
    }
  }
}

}  // namespace
}  // namespace ramguard
