// Table-driven tests of the pure procfs parsers: real-looking text, then hostile text.
#include "procfs/parse.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <string>

namespace ramguard {
namespace {

TEST(ParseStatm, ReadsTheFields) {
  auto r = parse_statm("1234 567 89 10 0 300 0\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->size, 1234u);
  EXPECT_EQ(r->resident, 567u);
  EXPECT_EQ(r->shared, 89u);
  EXPECT_EQ(r->text, 10u);
  EXPECT_EQ(r->data, 300u);
}

TEST(ParseStatm, AcceptsNoNewlineAndExtraFields) {
  EXPECT_TRUE(parse_statm("1 1 0 0 0 0 0").ok());
  EXPECT_TRUE(parse_statm("1 1 0 0 0 0 0 9 9\n").ok());
}

struct BadCase {
  const char* name;
  std::string text;
  const char* message_part;
};

class ParseStatmBad : public ::testing::TestWithParam<BadCase> {};
TEST_P(ParseStatmBad, IsAnError) {
  auto r = parse_statm(GetParam().text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(GetParam().message_part), std::string::npos)
      << r.error().message;
}
INSTANTIATE_TEST_SUITE_P(
    Hostile, ParseStatmBad,
    ::testing::Values(
        BadCase{"empty", "", "0 fields"}, BadCase{"spaces", "   \n", "0 fields"},
        BadCase{"truncated", "1234 567 89", "3 fields"},
        BadCase{"letters", "12a4 567 89 10 0 300 0", "statm size"},
        BadCase{"negative", "-1 567 89 10 0 300 0", "expected a decimal number"},
        BadCase{"plus", "+1 567 89 10 0 300 0", "expected a decimal number"},
        BadCase{"overflow", "99999999999999999999999 1 0 0 0 0 0", "overflows 64 bits"},
        BadCase{"garbage extra", "1 1 0 0 0 0 0 zz", "extra field"},
        BadCase{"shared above resident", "10 5 6 0 0 0 0", "exceed resident"},
        BadCase{"oversized", std::string(kMaxStatmBytes + 1, '1'), "more than the 4096"},
        BadCase{"nul byte", std::string("1 1\0 0 0 0 0", 12), "expected a decimal number"}),
    [](const auto& tp) {
      std::string n = tp.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

const char* kStatus =
    "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t77\nPid:\t77\n"
    "Uid:\t1001\t1002\t1003\t1004\nGid:\t100\t100\t100\t100\n"
    "VmPeak:\t 9000000 kB\nVmHWM:\t  2048000 kB\nVmRSS:\t  1024000 kB\n"
    "RssAnon:\t  1000000 kB\nRssFile:\t   20000 kB\nRssShmem:\t    4000 kB\n"
    "VmSwap:\t      12 kB\nThreads:\t8\n";

TEST(ParseStatus, ReadsFieldsInBytes) {
  auto r = parse_status(kStatus);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "python3");
  EXPECT_EQ(r->state, 'S');
  EXPECT_EQ(r->real_uid, 1001u);  // the real uid, not effective/saved/fs
  EXPECT_EQ(r->vm_hwm_bytes, 2048000ull * 1024);
  EXPECT_EQ(r->vm_rss_bytes, 1024000ull * 1024);
  EXPECT_EQ(r->rss_anon_bytes, 1000000ull * 1024);
  EXPECT_EQ(r->rss_file_bytes, 20000ull * 1024);
  EXPECT_EQ(r->rss_shmem_bytes, 4000ull * 1024);
  EXPECT_EQ(r->vm_swap_bytes, 12ull * 1024);
}

TEST(ParseStatus, NameKeepsSpacesAndEscapes) {
  std::string text = kStatus;
  text.replace(text.find("python3"), 7, "my (evil) name\\n");
  auto r = parse_status(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->name, "my (evil) name\\n");
}

TEST(ParseStatus, KernelThreadReportsMissingLines) {
  auto r = parse_status("Name:\tkworker/0:1\nState:\tI (idle)\nUid:\t0\t0\t0\t0\nThreads:\t1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("VmRSS"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("kernel thread"), std::string::npos) << r.error().message;
}

TEST(ParseStatus, AnExitingProcessIsNotFound) {
  // A zombie, and a killed process whose memory is gone before it turns zombie.
  for (const char* text : {"Name:\tx\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n",
                           "Name:\tx\nState:\tR (running)\nUid:\t0\t0\t0\t0\n"}) {
    auto r = parse_status(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kNotFound) << text;
  }
  // No State line at all: a broken file, not an exit.
  EXPECT_EQ(parse_status("Name:\tx\nUid:\t0\t0\t0\t0\n").error().kind, ErrorKind::kInvalidArgument);
}

std::string status_with(const std::string& from, const std::string& to) {
  std::string text = kStatus;
  const auto at = text.find(from);
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class ParseStatusBad : public ::testing::TestWithParam<BadCase> {};
TEST_P(ParseStatusBad, IsAnError) {
  auto r = parse_status(GetParam().text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(GetParam().message_part), std::string::npos)
      << r.error().message;
}
INSTANTIATE_TEST_SUITE_P(
    Hostile, ParseStatusBad,
    ::testing::Values(
        BadCase{"empty", "", "lacks Name, Uid, VmRSS"},
        BadCase{"truncated", std::string(kStatus).substr(0, 120), "lacks"},
        BadCase{"no swap", status_with("VmSwap:\t      12 kB\n", ""), "lacks VmSwap"},
        BadCase{"no unit", status_with("1024000 kB", "1024000"), "expected a number of kB"},
        BadCase{"wrong unit", status_with("1024000 kB", "1024000 MB"), "expected a number of kB"},
        BadCase{"garbage number", status_with("1024000 kB", "10x4 kB"), "status VmRSS"},
        BadCase{"kb overflow", status_with("1024000 kB", "18446744073709551615 kB"),
                "overflows 64 bits"},
        BadCase{"u64 overflow", status_with("1024000 kB", "184467440737095516150 kB"),
                "overflows 64 bits"},
        BadCase{"uid overflow", status_with("Uid:\t1001", "Uid:\t99999999999"), "out of range"},
        BadCase{"uid garbage", status_with("Uid:\t1001", "Uid:\tme"), "Uid"},
        BadCase{"duplicate", std::string(kStatus) + "VmRSS:\t1 kB\n", "duplicate VmRSS"},
        BadCase{"oversized", std::string(kMaxStatusBytes + 1, 'x'), "more than the"}),
    [](const auto& tp) {
      std::string n = tp.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

std::string stat_line(const std::string& comm, const std::string& start = "123456") {
  return "4321 (" + comm + ") R 77 4321 4321 0 -1 4194560 1 0 0 0 5 6 0 0 20 0 1 0 " + start +
         " 409600000 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
}

struct StatCase {
  const char* name;
  std::string comm;
};
class ParseStatComm : public ::testing::TestWithParam<StatCase> {};
TEST_P(ParseStatComm, ParsesAfterTheLastParen) {
  auto r = parse_stat(stat_line(GetParam().comm));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->pid, 4321);
  EXPECT_EQ(r->comm, GetParam().comm);
  EXPECT_EQ(r->state, 'R');
  EXPECT_EQ(r->ppid, 77);
  EXPECT_EQ(r->start_time_ticks, 123456u);
}
INSTANTIATE_TEST_SUITE_P(Names, ParseStatComm,
                         ::testing::Values(StatCase{"plain", "python3"},
                                           StatCase{"spaces", "my coordinator"},
                                           StatCase{"parens", ") ("},
                                           StatCase{"fake_fields", "x) S 1 2 3 4 5 (y"},
                                           StatCase{"newline", "a\nb) R 9\n"},
                                           StatCase{"empty", ""}, StatCase{"only_paren", ")"}),
                         [](const auto& tp) { return std::string(tp.param.name); });

class ParseStatBad : public ::testing::TestWithParam<BadCase> {};
TEST_P(ParseStatBad, IsAnError) {
  auto r = parse_stat(GetParam().text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(GetParam().message_part), std::string::npos)
      << r.error().message;
}
INSTANTIATE_TEST_SUITE_P(
    Hostile, ParseStatBad,
    ::testing::Values(
        BadCase{"empty", "", "no \"(comm)\""},
        BadCase{"no parens", "1 python R 1", "no \"(comm)\""},
        BadCase{"reversed parens", "1 )x( R", "no \"(comm)\""},
        BadCase{"truncated", "4321 (x) R 77 4321 4321 0 -1", "truncated"},
        BadCase{"bad pid", stat_line("x").replace(0, 4, "43a1"), "stat pid"},
        BadCase{"zero pid", stat_line("x").replace(0, 4, "0000"), "out of range"},
        BadCase{"bad state", "4321 (x) RR 77 4321 4321 0 -1 4194560 1 0 0 0 5 6 0 0 20 0 1 0 1",
                "not a letter"},
        BadCase{"bad start", stat_line("x", "12z"), "starttime"},
        BadCase{"start overflow", stat_line("x", "99999999999999999999999"), "overflows"},
        BadCase{"oversized", stat_line(std::string(kMaxStatBytes, 'n')), "more than the"}),
    [](const auto& tp) {
      std::string n = tp.param.name;
      for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(ParseDecimal, Limits) {
  EXPECT_EQ(*parse_decimal_u64("18446744073709551615", "x"),
            std::numeric_limits<std::uint64_t>::max());
  EXPECT_FALSE(parse_decimal_u64("18446744073709551616", "x").ok());
  EXPECT_FALSE(parse_decimal_u64("", "x").ok());
  EXPECT_FALSE(parse_decimal_u64(" 1", "x").ok());
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

TEST(ParseSmapsRollup, ReadsPssInBytesAndNamesAMissingLine) {
  const char* text =
      "55d0c0000000-7ffd2f5fe000 ---p 00000000 00:00 0                          [rollup]\n"
      "Rss:              123456 kB\nPss:               98765 kB\nPss_Anon:          90000 kB\n";
  EXPECT_EQ(*parse_smaps_rollup_pss(text), 98765u * 1024);
  auto missing = parse_smaps_rollup_pss("Rss: 1 kB\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no Pss line"), std::string::npos);
  EXPECT_FALSE(parse_smaps_rollup_pss("Pss: many kB\n").ok());
}

}  // namespace
}  // namespace ramguard
