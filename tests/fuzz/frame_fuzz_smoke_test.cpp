// Feeds the binary framing's fuzz entry point (frame_decode_entry.hpp) the checked-in seed
// frames (tests/fuzz/frame_corpus, also the libFuzzer target's seeds), hostile streams, and
// a hundred thousand seeded mutations of valid frame streams (byte flips, truncations, lengths
// rewritten, frames spliced). Any crash, sanitizer report or broken invariant fails the test.
// RAMGUARD_WRITE_FRAME_CORPUS=1 rewrites the corpus from seeds() below.
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/frame_decode_entry.hpp"

namespace ramguard::fuzz {
namespace {

std::string frame_of(const v1::Request& request) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  EXPECT_TRUE(google::protobuf::util::SerializeDelimitedToZeroCopyStream(request, &stream));
  return out;
}

// Name -> a stream of frames a client may send after the switch.
std::map<std::string, std::string> seeds() {
  v1::Request hello;
  hello.set_version(1);
  hello.set_request_id("cpp-1-1");
  hello.mutable_hello()->set_client("ramguard-cpp/0.1.0");
  hello.mutable_hello()->add_accept_framings(v1::FRAMING_PROTOBUF_DELIMITED);
  v1::Request start;
  start.set_version(1);
  start.set_request_id("cpp-1-2");
  start.mutable_run_start()->set_pid(1234);
  start.mutable_run_start()->set_job("vit");
  (*start.mutable_run_start()->mutable_labels())["build"] = "final";
  start.mutable_run_start()->set_model_bytes(2'500'000'000);
  v1::Request mark;
  mark.set_version(1);
  mark.set_request_id("cpp-1-3");
  mark.mutable_mark()->set_run_id("r-20261201-120000-abcd");
  mark.mutable_mark()->set_kind(v1::MarkRequest::ROUND_END);
  mark.mutable_mark()->mutable_allocator()->set_allocated_bytes(1'234'567'890);
  mark.mutable_mark()->mutable_gc()->set_duration_seconds(0.25);
  v1::Request end;
  end.set_version(1);
  end.set_request_id("cpp-1-4");
  end.mutable_run_end()->set_run_id("r-20261201-120000-abcd");
  v1::Request compare;
  compare.set_version(1);
  compare.mutable_compare()->add_run_ids("a");
  compare.mutable_compare()->add_run_ids("b");
  return {{"hello", frame_of(hello)},
          {"run_start", frame_of(start)},
          {"mark_round_end", frame_of(mark)},
          {"session", frame_of(hello) + frame_of(start) + frame_of(mark) + frame_of(end)},
          {"compare", frame_of(compare)}};
}

bool feed(const std::string& stream) {
  return frame_decode_stream(reinterpret_cast<const std::uint8_t*>(stream.data()), stream.size());
}

TEST(FrameFuzzSmoke, TheCheckedInCorpusIsTheseSeedsAndPasses) {
  const std::filesystem::path dir = RAMGUARD_FRAME_CORPUS_DIR;
  for (const auto& [name, stream] : seeds()) {
    const auto path = dir / (name + ".bin");
    if (std::getenv("RAMGUARD_WRITE_FRAME_CORPUS") != nullptr) {
      std::ofstream(path, std::ios::binary) << stream;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    EXPECT_EQ(bytes.str(), stream) << path << " differs: RAMGUARD_WRITE_FRAME_CORPUS=1 rewrites it";
    ASSERT_TRUE(feed(stream)) << name;
    // Every seed is made of whole, valid requests.
    control::RequestReader reader(kFrameFuzzMaxBytes);
    reader.use_framing(v1::FRAMING_PROTOBUF_DELIMITED);
    reader.append(stream);
    int requests = 0;
    while (auto incoming = reader.next()) {
      ASSERT_TRUE(std::holds_alternative<v1::Request>(incoming->decoded)) << name;
      ++requests;
    }
    EXPECT_GE(requests, 1) << name;
    EXPECT_FALSE(reader.finish().has_value()) << name;
  }
}

TEST(FrameFuzzSmoke, EveryCorpusFileIncludingPastFindingsPasses) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RAMGUARD_FRAME_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    EXPECT_TRUE(feed(bytes.str())) << entry.path();
    ++files;
  }
  // The seeds, and regression_*: libFuzzer's findings (an error message that depended on how
  // the bytes were split; a NaN double that must survive re-framing).
  EXPECT_GE(files, 7);
}

TEST(FrameFuzzSmoke, HostileStreamsGetErrorsThatNameTheProblem) {
  const std::vector<std::string> hostile = {
      std::string(1, '\0'),                    // an empty frame: a Request with nothing set
      std::string(11, '\xff'),                 // no varint
      std::string("\xff\xff\xff\xff\x0f", 5),  // 4 GiB announced
      std::string("\x05\x08\x01", 3),          // truncated
      std::string("\x02\x08\x02", 3),          // version 2, no command
      R"({"version":1,"status":{}})",          // a JSON line after the switch
      std::string("\x03\x00\xff\xff", 4),      // field number 0
      std::string("\x04\xa2\x06\x01\x00", 5),  // field 100: unknown to this server
  };
  for (const auto& stream : hostile) ASSERT_TRUE(feed(stream)) << stream.size() << " bytes";
}

std::string mutate(std::string s, std::mt19937_64& rng, const std::vector<std::string>& pool) {
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  const int steps = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < steps; ++i) {
    switch (rng() % 5) {
      case 0:  // flip a byte (often a length or a tag)
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 1:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 2:  // rewrite the first length to a nearby or huge value
        if (!s.empty())
          s[0] = static_cast<char>(rng() % 2 ? s[0] + static_cast<char>(pick(5)) - 2
                                             : 0x80 | static_cast<int>(rng()));
        break;
      case 3: {  // splice another stream in
        const std::string& other = pool[pick(pool.size())];
        s.insert(pick(s.size() + 1), other.substr(pick(other.size() + 1)));
        break;
      }
      default:  // delete a range
        if (!s.empty()) {
          const std::size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<std::size_t>(8, s.size() - at)));
        }
    }
  }
  return s;
}

TEST(FrameFuzzSmoke, SeededMutationsNeverBreakTheDecoder) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kInputs = 20000;
#else
  constexpr int kInputs = 100000;
#endif
  std::mt19937_64 rng(20261201);
  std::vector<std::string> pool;
  for (const auto& [name, stream] : seeds()) pool.push_back(stream);
  int whole = 0, broken = 0;
  for (int i = 0; i < kInputs; ++i) {
    const std::string stream = mutate(pool[rng() % pool.size()], rng, pool);
    ASSERT_TRUE(feed(stream)) << "input #" << i << " (" << stream.size() << " bytes)";
    const auto first = control::decode_frame(stream, kFrameFuzzMaxBytes);
    if (std::holds_alternative<v1::Request>(first.decoded)) {
      ++whole;
      if (pool.size() < 256) pool.push_back(stream);
    } else {
      ++broken;
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(whole, kInputs / 100);
  EXPECT_GT(broken, kInputs / 10);
}

}  // namespace
}  // namespace ramguard::fuzz
