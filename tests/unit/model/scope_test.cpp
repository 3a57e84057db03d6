#include "model/scope.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(Scope, EveryScopeParsesFromTheNameItPrints) {
  for (Scope scope : {Scope::kProcess, Scope::kTree, Scope::kCgroup}) {
    auto parsed = parse_scope(scope_name(scope));
    ASSERT_TRUE(parsed.ok()) << scope_name(scope);
    EXPECT_EQ(*parsed, scope);
  }
}

TEST(Scope, EmptyIsTheProcessAsOnTheWire) {
  auto parsed = parse_scope("");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, Scope::kProcess);
}

TEST(Scope, AnUnknownNameIsAnInputErrorQuotingAtMost16Bytes) {
  auto pod = parse_scope("pod");
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_EQ(pod.error().message, "scope 'pod' is not known; use process, tree or cgroup");

  auto long_name = parse_scope(std::string(1000, 'x'));
  ASSERT_FALSE(long_name.ok());
  EXPECT_EQ(long_name.error().message.find(std::string(17, 'x')), std::string::npos);
  EXPECT_FALSE(parse_scope("Tree").ok()) << "names are exact";
}

}  // namespace
}  // namespace ramguard
