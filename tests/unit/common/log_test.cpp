// A client's text in a log value stays one value of one line: control characters (C0, DEL, C1)
// and bytes that are not UTF-8 are written visibly, and such a value is quoted.
#include "common/log.hpp"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace ramguard::log
