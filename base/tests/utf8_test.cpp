// Client text made valid UTF-8 before it reaches a reply or a log line.
#include "ramguard/base/utf8.hpp"

#include <gtest/gtest.h>

#include <utility>

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

// Each of these starts a new line or reorders the text for a Unicode-aware reader: a job name
// holding one could forge a line of the log or make a report say what it does not.
TEST(ControlCharacters, LineSeparatorsAndBidiControlsAreControls) {
  const std::pair<const char*, const char*> cases[] = {
      {"\xe2\x80\xa8", "\\u2028"}, {"\xe2\x80\xa9", "\\u2029"}, {"\xc2\x85", "\\u0085"},
      {"\xe2\x80\xaa", "\\u202a"}, {"\xe2\x80\xae", "\\u202e"}, {"\xe2\x81\xa6", "\\u2066"},
      {"\xe2\x81\xa9", "\\u2069"}, {"\xe2\x80\x8e", "\\u200e"}, {"\xe2\x80\x8f", "\\u200f"},
      {"\xd8\x9c", "\\u061c"}};
  for (const auto& [raw, visible] : cases) {
    const std::string text = std::string("a") + raw + "b";
    EXPECT_EQ(control_length(text, 1), std::string(raw).size()) << visible;
    EXPECT_EQ(visible_control(text, 1), visible);
  }
}

TEST(ControlCharacters, NeighboursOfTheControlsAreText) {
  // U+2027 (hyphenation point), U+202F (narrow no-break space), U+2065 (unassigned), U+206A,
  // U+200D (zero width joiner, part of emoji), U+061B (Arabic semicolon), and a cut sequence.
  for (const std::string text : {"\xe2\x80\xa7", "\xe2\x80\xaf", "\xe2\x81\xa5", "\xe2\x81\xaa",
                                 "\xe2\x80\x8d", "\xd8\x9b", "\xe2\x80"}) {
    EXPECT_EQ(control_length(text, 0), 0u) << text;
  }
}

}  // namespace
}  // namespace ramguard
