// Feeds the fuzz entry point a few hundred thousand deterministic inputs: random bytes,
// mutations of real statm/status/stat/cgroup texts, and a corpus of hostile cases. Any crash,
// sanitizer report or broken invariant fails the test.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "fuzz/procfs_parse_entry.hpp"

namespace ramguard::fuzz {
namespace {

const std::vector<std::string>& seeds() {
  static const std::vector<std::string> kSeeds = {
      "25873 3462 1580 292 0 4013 0\n",
      "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nUid:\t1000\t1000\t1000\t1000\n"
      "VmHWM:\t 2048 kB\nVmRSS:\t 1024 kB\nRssAnon:\t 1000 kB\nRssFile:\t 20 kB\n"
      "RssShmem:\t 4 kB\nVmSwap:\t 0 kB\nThreads:\t8\n",
      "4321 (my (evil)\n) name) R 77 4321 4321 0 -1 4194560 1 0 0 0 5 6 0 0 20 0 1 0 123456 "
      "409600000 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
      "12:memory:/process_api/abc\n0::/\n",
      "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
  };
  return kSeeds;
}

std::vector<std::string> hostile() {
  std::vector<std::string> v = {
      "",
      " ",
      "\n",
      "(",
      ")",
      ")(",
      "()",
      "1 ()",
      "1 (",
      "1 ) (",
      std::string(1, '\0'),
      std::string(64, '\0'),
      "18446744073709551616 1 1 1 1 1 1",
      "1 1 1 1 1 1 99999999999999999999999999999999999999",
      "-1 -1 -1 -1 -1 -1 -1",
      "VmRSS:",
      "VmRSS:\t",
      "VmRSS:\tkB",
      "VmRSS:\t-1 kB",
      "VmRSS:\t18014398509481984 kB",
      "Uid:",
      "Uid:\t\t",
      "Name:",
      "Name:\t\n\n\n",
      "State:",
      "State:\t",
      "0::",
      "0::/../..",
      ":memory:",
      "x:memory:/a\n",
      "oom_kill ",
      "oom_kill 1 2",
  };
  v.push_back(std::string(kMaxStatusBytes + 7, 'A'));
  v.push_back(std::string(kMaxStatBytes + 1, ')'));
  v.push_back("1 (" + std::string(kMaxStatBytes, '(') + ") R 1 1");
  std::string deep = "1 (";
  for (int i = 0; i < 500; ++i) deep += ") (";
  v.push_back(deep + ") R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20");
  return v;
}

bool feed(const std::string& s) {
  return procfs_parse_one(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  static const std::string kPieces[] = {
      ")",  "(",   "\n",      " ", "\t", ":", "0", "9", "kB", "-", "18446744073709551615",
      "\0", ") (", "VmRSS:\t"};
  const int rounds = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < rounds; ++i) {
    const std::size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:  // flip a byte
        if (!s.empty()) s[at % s.size()] = static_cast<char>(rng());
        break;
      case 1:  // insert a meaningful piece
        s.insert(at, kPieces[rng() % std::size(kPieces)]);
        break;
      case 2:  // truncate
        s.resize(at);
        break;
      case 3:  // delete a span
        if (!s.empty()) s.erase(at % s.size(), rng() % 16);
        break;
      case 4:  // duplicate a span
        if (!s.empty()) s.insert(at, s.substr(rng() % s.size(), rng() % 64));
        break;
      default:  // random digits
        s.insert(at, std::to_string(rng()));
        break;
    }
  }
  return s;
}

TEST(FuzzSmoke, HostileCorpus) {
  for (const auto& s : hostile()) EXPECT_TRUE(feed(s)) << s.substr(0, 80);
  for (const auto& s : seeds()) EXPECT_TRUE(feed(s));
}

TEST(FuzzSmoke, SeedsParseAsTheirKind) {
  // Guards the mutation test: the seeds must be valid, or mutating them proves little.
  EXPECT_TRUE(parse_statm(seeds()[0]).ok());
  EXPECT_TRUE(parse_status(seeds()[1]).ok());
  EXPECT_TRUE(parse_stat(seeds()[2]).ok());
  EXPECT_TRUE(parse_memory_cgroup(seeds()[3]).ok());
  EXPECT_EQ(*parse_oom_kill_count(seeds()[4]), 3u);
}

TEST(FuzzSmoke, MutatedSeeds) {
  std::mt19937_64 rng(20240601);
  std::size_t parsed_ok = 0;
  constexpr int kRuns = 200000;
  for (int i = 0; i < kRuns; ++i) {
    const std::string input = mutate(seeds()[rng() % seeds().size()], rng);
    ASSERT_TRUE(feed(input)) << "invariant broken at run " << i;
    parsed_ok += parse_stat(input).ok() || parse_statm(input).ok() || parse_status(input).ok();
  }
  // Mutations must still reach the success paths often, or the invariants go unchecked.
  EXPECT_GT(parsed_ok, static_cast<std::size_t>(kRuns / 20));
}

TEST(FuzzSmoke, RandomBytes) {
  std::mt19937_64 rng(7);
  std::string input;
  for (int i = 0; i < 100000; ++i) {
    input.resize(rng() % 300);
    for (char& c : input) c = static_cast<char>(rng() % 4 == 0 ? ")( \n:"[rng() % 5] : rng());
    ASSERT_TRUE(feed(input)) << "invariant broken at run " << i;
  }
}

}  // namespace
}  // namespace ramguard::fuzz
