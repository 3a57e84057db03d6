// Feeds the control decoder's fuzz entry point a few hundred thousand seeded mutations of valid
// requests (byte flips, JSON tokens spliced in, truncations, crossovers) plus hostile lines. Any
// crash, sanitizer report or broken invariant (see codec_decode_entry.hpp) fails the test.
#include <gtest/gtest.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "fuzz/codec_decode_entry.hpp"

namespace ramguard::fuzz {
namespace {

const std::vector<std::string>& seeds() {
  static const std::vector<std::string> kSeeds = {
      R"({"version":1,"hello":{"client":"ramguard-python/0.1.0"}})",
      R"({"version":1,"requestId":"7","runStart":{"pid":1234,"job":"vit","labels":{"build":"final"},"modelBytes":"2500000000","declaredRounds":3,"hosts":2,"reservationId":"rsv-1"}})",
      R"({"version":1,"mark":{"runId":"r-1","kind":"PHASE_BEGIN","phase":"aggregation"}})",
      R"({"version":1,"mark":{"runId":"r-1","kind":"ROUND_END","round":2,"gc":{"rssBeforeBytes":"10","rssAfterBytes":5,"collectedObjects":"3","durationSeconds":0.25},"allocator":{"allocatedBytes":"1"}}})",
      R"({"version":1,"runEnd":{"runId":"r-1"}})",
      R"({"version":1,"admit":{"job":"vit","estimateBytes":"11100000000","pid":0}})",
      R"({"version":1,"admit":{"model":{"parameterCount":"632000000","bytesPerParameter":4.0},"plan":"fedavg","hosts":2,"useCalibrated":true}})",
      R"({"version":1,"release":{"reservationId":"rsv-0123456789ab"}})",
      R"({"version":1,"status":{}})",
      R"({"version":1,"token":"t","report":{"runId":"r-1","includeSamples":true}})",
      R"({"version":1,"compare":{"runIds":["a","b"],"labels":{"build":"final"}}})",
      R"({"version":1,"listRuns":{"limit":5}})",
  };
  return kSeeds;
}

constexpr std::array<const char*, 24> kTokens = {"{",
                                                 "}",
                                                 "[",
                                                 "]",
                                                 "\"",
                                                 ":",
                                                 ",",
                                                 "null",
                                                 "true",
                                                 "-1",
                                                 "1e999",
                                                 "-0",
                                                 "NaN",
                                                 "\"18446744073709551616\"",
                                                 "4294967296",
                                                 "\\u0000",
                                                 "\\ud800",
                                                 "\xff\xfe",
                                                 "\n",
                                                 "\r",
                                                 "{\"version\":1,",
                                                 "\"mark\":{}",
                                                 "\"Infinity\"",
                                                 "0.5"};

std::string mutate(std::string s, std::mt19937_64& rng, const std::vector<std::string>& pool) {
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    switch (rng() % 7) {
      case 0:  // flip a byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 1:  // insert a JSON token
        s.insert(pick(s.size() + 1), kTokens[pick(kTokens.size())]);
        break;
      case 2:  // delete a range
        if (!s.empty()) {
          const std::size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<std::size_t>(16, s.size() - at)));
        }
        break;
      case 3:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 4: {  // duplicate a range (repeated keys, nested objects)
        if (s.empty()) break;
        const std::size_t at = pick(s.size());
        const std::string piece = s.substr(at, 1 + pick(32));
        s.insert(pick(s.size() + 1), piece);
        break;
      }
      case 5: {  // crossover with another seed
        const std::string& other = pool[pick(pool.size())];
        s = s.substr(0, pick(s.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      default:  // replace a digit run's digit, keeping the JSON shape
        for (std::size_t j = pick(s.size()); j < s.size(); ++j) {
          if (s[j] >= '0' && s[j] <= '9') {
            s[j] = static_cast<char>('0' + rng() % 10);
            break;
          }
        }
    }
  }
  return s;
}

bool feed(const std::string& line) {
  return codec_decode_one(reinterpret_cast<const std::uint8_t*>(line.data()), line.size());
}

TEST(CodecFuzzSmoke, ValidSeedsDecodeToRequests) {
  for (const auto& seed : seeds()) {
    ASSERT_TRUE(feed(seed)) << seed;
    EXPECT_TRUE(std::holds_alternative<v1::Request>(control::decode_request(seed))) << seed;
  }
}

TEST(CodecFuzzSmoke, HostileLinesGetErrorsThatNameTheProblem) {
  const std::vector<std::string> hostile = {"",
                                            "\n",
                                            "{",
                                            "}",
                                            "[]",
                                            "null",
                                            "{}",
                                            "{\"version\":1}",
                                            std::string(1, '\0'),
                                            std::string(100000, '{'),
                                            "{\"version\":1,\"hello\":{}} trailing",
                                            "{\"version\":1,\"hello\":{},\"status\":{}}",
                                            "{\"version\":1,\"hello\":{\"client\":1}}",
                                            "{\"version\":-1,\"hello\":{}}",
                                            "{\"version\":4294967296,\"hello\":{}}",
                                            "{\"version\":1,\"mark\":{\"kind\":99}}",
                                            "{\"version\":1,\"x\":" + std::string(5000, '[')};
  for (const auto& line : hostile) {
    ASSERT_TRUE(feed(line)) << line.substr(0, 80);
  }
  for (const auto& line : {std::string("{"), std::string("[]"), std::string("{}")}) {
    const auto decoded = control::decode_request(line);
    ASSERT_TRUE(std::holds_alternative<v1::Error>(decoded)) << line;
    EXPECT_FALSE(std::get<v1::Error>(decoded).message().empty());
  }
}

TEST(CodecFuzzSmoke, SeededMutationsNeverBreakTheDecoder) {
#if defined(__SANITIZE_ADDRESS__)
  // Under ASan+UBSan each decode costs ~50x more; the plain build carries the volume.
  constexpr int kInputs = 50000;
#else
  constexpr int kInputs = 300000;
#endif
  std::mt19937_64 rng(20240601);
  std::vector<std::string> pool = seeds();
  int requests = 0, errors = 0;
  for (int i = 0; i < kInputs; ++i) {
    const std::string line = mutate(pool[rng() % pool.size()], rng, pool);
    ASSERT_TRUE(feed(line)) << "input #" << i << ": " << line;
    if (std::holds_alternative<v1::Request>(control::decode_request(line))) {
      ++requests;
      if (pool.size() < 256) pool.push_back(line);  // valid mutants breed further
    } else {
      ++errors;
    }
  }
  // Both outcomes are exercised: the mutations are neither all fatal nor all harmless.
  EXPECT_GT(requests, kInputs / 100);
  EXPECT_GT(errors, kInputs / 2);
}

}  // namespace
}  // namespace ramguard::fuzz
