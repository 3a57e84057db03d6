#include <gtest/gtest.h>

#include "report/format.hpp"

namespace ramguard::report {
namespace {

TEST(Escape, XmlEscapesMarkupAndDropsForbiddenControls) {
  EXPECT_EQ(escape_xml("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;");
  EXPECT_EQ(escape_xml(std::string("a\x01\x1b"
                                   "b\n",
                                   5)),
            "a??b&#10;");
}

TEST(Escape, CsvQuotesOnlyWhenNeededAndKeepsOneRecordPerLine) {
  EXPECT_EQ(escape_csv("plain"), "plain");
  EXPECT_EQ(escape_csv("a,b"), "\"a,b\"");
  EXPECT_EQ(escape_csv("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(escape_csv("two\nlines"), "two\\nlines");
  EXPECT_EQ(escape_csv("\x1b[31m,red"), "\"\\x1b[31m,red\"");
}

TEST(Escape, JsonEscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(escape_json("a\"b\\c\n\x02"), "a\\\"b\\\\c\\n\\u0002");
  EXPECT_EQ(escape_json("csi\xc2\x9b"
                        "1m\x7f"),
            "csi\\u009b1m\\u007f");
}

// C1 controls are valid UTF-8, and U+009B is a one-character CSI to some terminals.
TEST(Escape, C1ControlsAreWrittenVisiblyOrDropped) {
  const std::string csi =
      "a\xc2\x9b"
      "31mb";
  EXPECT_EQ(escape_text(csi), "a\\u009b31mb");
  EXPECT_EQ(escape_xml(csi), "a?31mb");
  EXPECT_EQ(escape_markdown(csi), "a 31mb");
  EXPECT_EQ(escape_text("caf\xc3\xa9"), "caf\xc3\xa9");  // other two-byte characters stay
}

TEST(Escape, MarkdownMakesNoLinkOrTableCellOfALabel) {
  EXPECT_EQ(escape_markdown("[x](javascript:y)|<b>"), "\\[x\\](javascript:y)\\|&lt;b>");
}

TEST(Escape, InvalidUtf8BecomesQuestionMarks) {
  EXPECT_EQ(sanitize_utf8("ok \xc3\xa9"), "ok \xc3\xa9");  // é stays
  EXPECT_EQ(sanitize_utf8("bad \xff\xc3"), "bad ??");      // stray and truncated bytes
  EXPECT_EQ(sanitize_utf8("\xc0\xaf"), "??");              // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xed\xa0\x80"), "???");         // surrogate
  EXPECT_EQ(display_width("\xc3\xa9t\xc3\xa9"), 3u);
}

TEST(Units, DecimalByDefaultBinaryOnRequest) {
  EXPECT_EQ(format_bytes(14.1e9, false), "14.10 GB");
  EXPECT_EQ(format_bytes(16.0 * (1ull << 30), true), "16.00 GiB");
  EXPECT_EQ(format_bytes(54e6, false), "54.0 MB");
  EXPECT_EQ(format_bytes(512, false), "512 B");
  EXPECT_EQ(format_seconds(6.75), "6.75 s");
  EXPECT_EQ(format_seconds(0.3), "300 ms");
  EXPECT_EQ(format_seconds(3600), "60.0 min");
  EXPECT_EQ(format_unix_ms(1714560000000), "2024-05-01 10:40:00 UTC");
}

TEST(Verdicts, WorstIsHighestSeverityNotCleared) {
  google::protobuf::RepeatedPtrField<v1::Verdict> list;
  EXPECT_EQ(worst_verdict(list), nullptr);
  auto* cleared = list.Add();
  cleared->set_kind("leak");
  cleared->set_severity(v1::CRITICAL);
  cleared->set_cleared(true);
  auto* warning = list.Add();
  warning->set_kind("growth_warning");
  warning->set_severity(v1::WARNING);
  auto* info = list.Add();
  info->set_kind("plateau");
  info->set_severity(v1::INFO);
  info->set_passed(true);
  ASSERT_NE(worst_verdict(list), nullptr);
  EXPECT_EQ(worst_verdict(list)->kind(), "growth_warning");
  EXPECT_EQ(verdict_label(worst_verdict(list)), "warning growth_warning");
}

// The order of ramguard/base/verdict_rank.hpp, as the daemon's compare rows and run listing use it:
// cleared verdicts still rank (last), and the latest wins among equals.
TEST(Verdicts, SameOrderAsTheDaemon) {
  google::protobuf::RepeatedPtrField<v1::Verdict> list;
  auto* old_leak = list.Add();
  old_leak->set_kind("leak");
  old_leak->set_severity(v1::CRITICAL);
  old_leak->set_cleared(true);
  auto* plateau = list.Add();
  plateau->set_kind("plateau");
  plateau->set_severity(v1::INFO);
  plateau->set_passed(true);
  plateau->set_cleared(true);
  ASSERT_EQ(worst_verdict(list), old_leak);
  EXPECT_EQ(verdict_label(worst_verdict(list)), "critical leak (cleared)");
  auto* first = list.Add();
  first->set_kind("growth_warning");
  first->set_severity(v1::WARNING);
  first->set_round(2);
  auto* second = list.Add();
  second->CopyFrom(*first);
  second->set_round(3);
  ASSERT_EQ(worst_verdict(list), second);
}

}  // namespace
}  // namespace ramguard::report
