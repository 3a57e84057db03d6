// A client's text in a log value stays one value of one line: control characters (C0, DEL, C1)
// and bytes that are not UTF-8 are written visibly, and such a value is quoted.
#include "common/log.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace ramguard::log {
namespace {

std::string g_line;
void capture(const std::string& line) {
  g_line = line;
}

std::string logged(const std::string& value) {
  set_sink(&capture);
  info("test.event", {{"v", value}});
  set_sink(nullptr);
  const auto at = g_line.find(" v=");
  return at == std::string::npos ? g_line
                                 : g_line.substr(at + 3, g_line.find_last_not_of('\n') - at - 2);
}

TEST(Log, ControlCharactersAndBadBytesAreWrittenVisibly) {
  EXPECT_EQ(logged("plain"), "plain");
  EXPECT_EQ(logged("red\x1b[31m"), "\"red\\x1b[31m\"");  // no space, still quoted and escaped
  EXPECT_EQ(logged("cr\rlf\n"), "\"cr\\x0dlf\\n\"");
  EXPECT_EQ(logged("csi\xc2\x9b"
                   "1m"),
            "\"csi\\u009b1m\"");
  // Not UTF-8: the four characters \xff, whose backslash logfmt then quotes and escapes.
  EXPECT_EQ(logged("bad\xff"), "\"bad\\\\xff\"");
  EXPECT_EQ(logged("caf\xc3\xa9"), "caf\xc3\xa9");
}

// A reader that honours Unicode would start a line at U+2028 or reverse the text after U+202E.
TEST(Log, LineSeparatorsAndBidiControlsAreWrittenVisibly) {
  EXPECT_EQ(logged("run\xe2\x80\xa8level=error"), "\"run\\u2028level=error\"");
  EXPECT_EQ(logged("a\xe2\x80\xae"
                   "b\xe2\x81\xa6"
                   "c\xc2\x85"),
            "\"a\\u202eb\\u2066c\\u0085\"");
}

int g_lines = 0;
std::string g_last;
void count_line(const std::string& line) {
  ++g_lines;
  g_last = line;
}

TEST(Log, APeersLinesAreLimitedAndTheDropsCountedAndReported) {
  reset_peer_buckets();
  set_sink(&count_line);
  g_lines = 0;
  const std::uint64_t before = lines_suppressed_total();
  {
    PeerScope scope(1000, "uid 1000");
    for (int i = 0; i < 1000; ++i) info("test.flood", {{"i", i}});
  }
  EXPECT_EQ(g_lines, static_cast<int>(kPeerBurstLines));  // the burst, nothing after it
  EXPECT_EQ(lines_suppressed_total() - before, 1000 - static_cast<std::uint64_t>(kPeerBurstLines));
  {
    PeerScope other(1001, "uid 1001");  // another user's lines still come
    info("test.other");
  }
  EXPECT_EQ(g_lines, static_cast<int>(kPeerBurstLines) + 1);
  info("test.daemon");  // a line no request caused is never limited
  EXPECT_EQ(g_lines, static_cast<int>(kPeerBurstLines) + 2);
  {
    PeerScope root(0, "uid 0", /*limited=*/false);  // the operator
    for (int i = 0; i < 100; ++i) info("test.root");
  }
  EXPECT_EQ(g_lines, static_cast<int>(kPeerBurstLines) + 102);
  // One token back after 1 / kPeerLinesPerSecond: the next line says what was dropped.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  g_last.clear();
  {
    PeerScope scope(1000, "uid 1000");
    info("test.flood");
  }
  EXPECT_NE(g_last.find("event=log.peer_lines_suppressed"), std::string::npos) << g_last;
  set_sink(nullptr);
}

}  // namespace
}  // namespace ramguard::log
