// A census from the wire: what it carries is kept, what would mislead a report is refused with
// the field named (the client then marks without it).
#include "control/census_convert.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ramguard::control {
namespace {

v1::Census valid() {
  v1::Census c;
  c.set_mode("full");
  c.set_host_bytes(3000);
  c.set_unreachable_bytes(1000);
  c.set_storages(3);
  auto* g = c.add_groups();
  g->set_holder("coordinator.state");
  g->set_reachable(true);
  g->set_kind("state");
  g->set_bytes(2000);
  auto* r = g->add_ranges();
  r->set_address(0x7f0000000000);
  r->set_nbytes(2000);
  auto* h = c.add_groups();
  h->set_holder("aggregate.__globals__['previous']");
  h->set_reachable(false);
  h->set_cycle("dict `ns` -> function `aggregate` -> `__globals__` is `ns`");
  h->set_bytes(1000);
  return c;
}

TEST(CensusConvert, KeepsWhatTheClientSent) {
  auto c = census_from_proto(valid(), "mark.census");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->groups.size(), 2u);
  EXPECT_EQ(c->groups[0].holder, "coordinator.state");
  ASSERT_EQ(c->groups[0].ranges.size(), 1u);
  EXPECT_EQ(c->groups[0].ranges[0].nbytes, 2000u);
  EXPECT_FALSE(c->groups[1].reachable);
  EXPECT_EQ(c->unreachable_bytes, 1000u);
  v1::RoundCensus out;
  c->counted_bytes = 5000;
  c->allocator_free_bytes = 500;
  to_proto(*c, out);
  EXPECT_EQ(out.census().groups(1).cycle(), c->groups[1].cycle);
  EXPECT_EQ(out.unexplained_bytes(), 5000 - 3000 - 500);  // no placement: host bytes count
}

TEST(CensusConvert, RefusesWhatWouldMisleadNamingTheField) {
  struct Case {
    const char* want;
    void (*change)(v1::Census&);
  };
  const Case cases[] = {
      {"mark.census.mode", [](v1::Census& c) { c.set_mode("all"); }},
      {"mark.census.groups[0].holder contains a control character",
       [](v1::Census& c) { c.mutable_groups(0)->set_holder("a\x1b[31mb"); }},
      {"mark.census.groups[1].cycle is 300 bytes long",
       [](v1::Census& c) { c.mutable_groups(1)->set_cycle(std::string(300, 'x')); }},
      {"mark.census.groups[0].holder is empty",
       [](v1::Census& c) { c.mutable_groups(0)->set_holder(""); }},
      {"more than its hostBytes",
       [](v1::Census& c) {
         c.set_host_bytes(10);
         c.set_unreachable_bytes(0);
       }},
      {"ranges hold",
       [](v1::Census& c) { c.mutable_groups(0)->mutable_ranges(0)->set_nbytes(5000); }},
      {"wraps around",
       [](v1::Census& c) { c.mutable_groups(0)->mutable_ranges(0)->set_address(UINT64_MAX - 10); }},
      {"hostBytes 2000000000000000 is out of range",
       [](v1::Census& c) { c.set_host_bytes(2'000'000'000'000'000); }},
      {"groups has 33 groups",
       [](v1::Census& c) {
         for (int i = 0; i < 31; ++i) c.add_groups()->set_holder("x");
       }},
  };
  for (const Case& k : cases) {
    v1::Census c = valid();
    k.change(c);
    auto r = census_from_proto(c, "mark.census");
    ASSERT_FALSE(r.ok()) << k.want;
    EXPECT_NE(r.error().message.find(k.want), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace ramguard::control
