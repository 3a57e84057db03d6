// Client text made valid UTF-8 before it reaches a reply or a log line.
#include "ramguard/base/utf8.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(ValidUtf8, WellFormedTextIsUnchanged) {
  for (const std::string text : {"", "plain ascii", "caf\xc3\xa9", "\xe2\x82\xac 5",
                                 "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_EQ(valid_utf8(text), text);
  }
}

TEST(ValidUtf8, EveryByteOfABrokenSequenceIsEscaped) {
  EXPECT_EQ(valid_utf8("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(valid_utf8("a\xc3(b"), "a\\xc3(b");              // a lead byte without its tail
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(valid_utf8("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // overlong, three bytes
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(valid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(valid_utf8("ok\xe2\x82"), "ok\\xe2\\x82");                // truncated at the end
  EXPECT_EQ(valid_utf8("\x80 \xc3\xa9"), "\\x80 \xc3\xa9");           // a stray tail, then valid
}

TEST(ValidUtf8, AReplacementStandsForEachBadByte) {
  EXPECT_EQ(valid_utf8("bad \xff\xc3", "?"), "bad ??");
  EXPECT_EQ(valid_utf8("ok \xc3\xa9", "?"), "ok \xc3\xa9");
}

}  // namespace
}  // namespace ramguard
