// The small value parsers shared by the YAML loader and the command line, table-driven.
#include "config/values.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ramguard {
namespace {

using namespace std::chrono_literals;

TEST(Values, Endpoints) {
  struct Ok {
    const char* text;
    Endpoint want;
  };
  for (const Ok& c : {Ok{"127.0.0.1:9797", {"127.0.0.1", 9797}}, Ok{"[::1]:65535", {"::1", 65535}},
                      Ok{"0.0.0.0:80", {"0.0.0.0", 80}}, Ok{"[::]:0", {"::", 0}}}) {
    auto e = parse_endpoint(c.text);
    ASSERT_TRUE(e.ok()) << c.text << ": " << e.error().message;
    EXPECT_EQ(*e, c.want);
    EXPECT_EQ(e->to_string(), c.text);  // round trip
  }
  auto localhost = parse_endpoint("localhost:0");  // a listener binds a number
  ASSERT_TRUE(localhost.ok());
  EXPECT_EQ(*localhost, (Endpoint{"127.0.0.1", 0}));
  for (const char* bad : {"",
                          ":",
                          "host",
                          "host:",
                          ":80",
                          "host:-1",
                          "host:65536",
                          "host:8o",
                          "ho st:80",
                          "::1:80",
                          "[::1]",
                          "host:+80",
                          "127.0.0.1:99999",
                          "127.0.0.1:",
                          "127.0.0.1:80x",
                          "example.com:80",
                          "256.1.1.1:80",
                          "[zz::]:1",
                          "[127.0.0.1]:80",
                          "[localhost]:80"}) {
    auto e = parse_endpoint(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_THAT(e.error().message, ::testing::HasSubstr("HOST:PORT")) << bad;
    EXPECT_THAT(e.error().message, ::testing::HasSubstr("'" + std::string(bad) + "'")) << bad;
  }
}

TEST(Values, PlanCopies) {
  struct Case {
    const char* text;
    double copies;
    bool per_host;
  };
  for (const Case& c :
       {Case{"1", 1, false}, Case{"0", 0, false}, Case{"0.5", 0.5, false}, Case{"hosts", 1, true},
        Case{"2*hosts", 2, true}, Case{"2 * hosts", 2, true}, Case{"1.5*hosts", 1.5, true}}) {
    auto p = parse_plan_copies(c.text);
    ASSERT_TRUE(p.ok()) << c.text << ": " << p.error().message;
    EXPECT_DOUBLE_EQ(p->copies, c.copies) << c.text;
    EXPECT_EQ(p->per_host, c.per_host) << c.text;
  }
  for (const char* bad :
       {"", "-1", "-0.5*hosts", "host", "*hosts", "hosts*2", "two", "nan", "inf", "1e9"}) {
    EXPECT_FALSE(parse_plan_copies(bad).ok()) << bad;
  }
}

TEST(Values, SocketModes) {
  EXPECT_EQ(*parse_socket_mode("0660"), 0660u);
  EXPECT_EQ(*parse_socket_mode("660"), 0660u);
  EXPECT_EQ(*parse_socket_mode("0o600"), 0600u);
  EXPECT_EQ(*parse_socket_mode("0777"), 0777u);
  for (const char* bad : {"", "0888", "1777", "rw-rw----", "06600", "0x1b0"}) {
    EXPECT_FALSE(parse_socket_mode(bad).ok()) << bad;
  }
}

TEST(Values, PhaseEdges) {
  EXPECT_EQ(*parse_phase_edge("aggregation.end"),
            (PhaseEdge{"aggregation", PhaseEdge::Edge::kEnd}));
  EXPECT_EQ(*parse_phase_edge("my-phase_2.begin"),
            (PhaseEdge{"my-phase_2", PhaseEdge::Edge::kBegin}));
  for (const char* bad : {"", ".end", "load.", "load.start", "load", "a b.end", "load.END"}) {
    EXPECT_FALSE(parse_phase_edge(bad).ok()) << bad;
  }
}

TEST(Values, WatchItemsNameAPidAndAScope) {
  EXPECT_EQ(parse_watch_item("42")->pid, 42);
  EXPECT_EQ(parse_watch_item("42")->scope, Scope::kProcess);
  EXPECT_EQ(parse_watch_item("tree:42")->scope, Scope::kTree);
  EXPECT_EQ(parse_watch_item("cgroup:7")->pid, 7);
  EXPECT_EQ(parse_watch_item("process:7")->scope, Scope::kProcess);
  auto unknown = parse_watch_item("galaxy:7");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown scope 'galaxy'"), std::string::npos)
      << unknown.error().message;
  EXPECT_FALSE(parse_watch_item("tree:").ok());
  EXPECT_FALSE(parse_watch_item("tree:-1").ok());
}

TEST(Values, PidsCountsBoolsLevels) {
  EXPECT_EQ(*parse_pid("1"), 1);
  EXPECT_EQ(*parse_pid("4194304"), 4194304);
  for (const char* bad : {"0", "-1", "4194305", "1.0", " 1", "0x10", ""}) {
    EXPECT_FALSE(parse_pid(bad).ok()) << bad;
  }
  EXPECT_EQ(*parse_count("5", 1, 10), 5u);
  EXPECT_FALSE(parse_count("11", 1, 10).ok());
  EXPECT_FALSE(parse_count("99999999999999999999999", 0, 10).ok());
  EXPECT_TRUE(*parse_bool("Yes"));
  EXPECT_FALSE(*parse_bool("off"));
  EXPECT_FALSE(parse_bool("1").ok());
  EXPECT_EQ(*parse_log_level("WARN"), log::Level::kWarning);
  EXPECT_FALSE(parse_log_level("trace").ok());
}

TEST(Values, DurationFormatting) {
  EXPECT_EQ(format_duration(10ms), "10ms");
  EXPECT_EQ(format_duration(2s), "2s");
  EXPECT_EQ(format_duration(10min), "10m");
  EXPECT_EQ(format_duration(1h), "1h");
  EXPECT_EQ(format_duration(1500ms), "1500ms");
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(std::chrono::microseconds(1500)), "0.0015s");
}

}  // namespace
}  // namespace ramguard
