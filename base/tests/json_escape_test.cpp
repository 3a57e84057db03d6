// One JSON string escaper for the reports and the daemon's reply printer.
#include "ramguard/base/json_escape.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(JsonEscape, QuotesBackslashesAndControlsAreEscapedAndTheRestKept) {
  EXPECT_EQ(escape_json("plain text"), "plain text");
  EXPECT_EQ(escape_json("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(escape_json("l1\nl2\r\t"), "l1\\nl2\\r\\t");
  EXPECT_EQ(escape_json("\x1b[31mred"), "\\u001b[31mred");
  EXPECT_EQ(escape_json("\x7f"), "\\u007f");
  EXPECT_EQ(escape_json("csi\xc2\x9b"), "csi\\u009b");     // C1 in UTF-8
  EXPECT_EQ(escape_json("h\xc3\xa9llo"), "h\xc3\xa9llo");  // printable UTF-8 stays
}

TEST(JsonEscape, BytesThatAreNotUtf8BecomeQuestionMarks) {
  EXPECT_EQ(escape_json("a\xff"
                        "b"),
            "a?b");
}

TEST(JsonEscape, AngleBracketsAreEscapedOnlyWhenAsked) {
  EXPECT_EQ(escape_json("<b>"), "<b>");
  EXPECT_EQ(escape_json("<b>", AngleBrackets::kEscape), "\\u003cb\\u003e");  // protobuf's form
}

TEST(JsonEscape, TheAppendingFormAddsToWhatIsThereAndEscapesTheSame) {
  std::string out = "\"";
  append_json_escaped("say \"<hi>\"\n", AngleBrackets::kEscape, out);
  EXPECT_EQ(out, "\"say \\\"\\u003chi\\u003e\\\"\\n");
  EXPECT_EQ(out.substr(1), escape_json("say \"<hi>\"\n", AngleBrackets::kEscape));
}

TEST(JsonEscape, LineSeparatorsAndBidiControlsAreEscaped) {
  EXPECT_EQ(escape_json("a\xe2\x80\xa8level=error \xe2\x80\xae\xd8\x9c"),
            "a\\u2028level=error \\u202e\\u061c");
}

}  // namespace
}  // namespace ramguard
