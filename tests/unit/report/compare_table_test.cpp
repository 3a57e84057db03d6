#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "fixtures.hpp"
#include "report/render.hpp"

namespace ramguard::report {
namespace {

using testing::design_compare;
using ::testing::HasSubstr;
using ::testing::Not;

// RFC 4180 reader, to check the CSV round-trips rather than how it looks.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = records.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      records.emplace_back(1);
    } else {
      field.push_back(c);
    }
  }
  if (records.back().size() == 1 && records.back()[0].empty()) records.pop_back();
  return records;
}

TEST(CompareTable, TextHasTheFourBuildsOfDesignMd) {
  const std::string text = compare_table(design_compare(), TableFormat::kText, {});
  for (const char* figure :
       {"29.40 GB", "14.10 GB -> 17.30 GB", "26.00 GB", "20.00 GB", "9.30 GB -> 14.60 GB",
        "0.60 GB", "18.60 GB", "8.50 GB -> 13.60 GB", "9.60 GB", "6.40 GB -> 6.50 GB", "0.70 GB"}) {
    EXPECT_THAT(text, HasSubstr(figure));
  }
  EXPECT_THAT(text, HasSubstr("growth_warning(warning), release(fail)"));
  EXPECT_THAT(text, HasSubstr("release(pass)"));
  EXPECT_THAT(text, HasSubstr("6.75 s"));
  EXPECT_THAT(text, HasSubstr("0.86"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 6);  // header, rule, four rows
}

TEST(CompareTable, MarkdownHasOneRowPerRunAndEscapesPipes) {
  v1::CompareReply reply = design_compare();
  (*reply.mutable_rows(0)->mutable_labels())["note"] = "a|b\nc <b>";
  const std::string md = compare_table(reply, TableFormat::kMarkdown, {});
  std::istringstream lines(md);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.front(), '|');
    EXPECT_EQ(line.back(), '|');
    int pipes = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
    }
    EXPECT_EQ(pipes, 10) << line;  // nine columns
  }
  EXPECT_EQ(count, 6);
  EXPECT_THAT(md, HasSubstr("|---|---|---|---:|---|---:|---|---:|---:|"));
  EXPECT_THAT(md, HasSubstr("a\\|b<br>c &lt;b>"));
  EXPECT_THAT(md, HasSubstr("14.10 GB -> 17.30 GB"));
}

// CSV keeps one record per line and no control byte: a newline is written as "\\n" (JSON
// keeps the exact text).
TEST(CompareTable, CsvKeepsHostileLabelsInOneRecord) {
  v1::CompareReply reply = design_compare();
  const std::string hostile = "x,\"y\"\nz";
  reply.mutable_rows(1)->set_job(hostile);
  const std::string csv = compare_table(reply, TableFormat::kCsv, {});
  const auto records = parse_csv(csv);
  ASSERT_EQ(records.size(), 5u);
  for (const auto& record : records) EXPECT_EQ(record.size(), 9u);
  EXPECT_EQ(records[0][0], "run");
  EXPECT_EQ(records[0][4], "RSS between rounds");
  EXPECT_EQ(records[1][3], "29.40 GB");
  EXPECT_EQ(records[1][4], "14.10 GB -> 17.30 GB");
  EXPECT_EQ(records[2][1], "x,\"y\"\\nz");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_EQ(records[4][5], "0.70 GB");
}

TEST(CompareTable, BinaryUnitsAndEmptyReply) {
  const std::string text =
      compare_table(design_compare(), TableFormat::kText, {.binary_units = true});
  EXPECT_THAT(text, HasSubstr("27.38 GiB"));
  EXPECT_THAT(text, Not(HasSubstr(" GB ")));
  EXPECT_EQ(compare_table(v1::CompareReply{}, TableFormat::kText, {}), "no runs to compare\n");
}

TEST(CompareTable, JsonIsParseableAndCarriesRawBytes) {
  v1::CompareReply reply = design_compare();
  reply.mutable_rows(0)->set_job("q\"uote\\");
  const std::string json = compare_table(reply, TableFormat::kJson, {});
  EXPECT_THAT(json, HasSubstr("\"peak_bytes\":29400000000"));
  EXPECT_THAT(json, HasSubstr("\"job\":\"q\\\"uote\\\\\""));
  const std::string path = testing::write_temp("compare.json", json);
  EXPECT_EQ(testing::run_python_check(
                "check_json_parse.py",
                path + " 'len(d[\"rows\"]) == 4 and d[\"rows\"][3][\"estimate_ratio\"] > 0.86'"),
            0);
}

}  // namespace
}  // namespace ramguard::report
