// Feeds the configuration loader's fuzz entry point the checked-in corpus and deterministic
// mutations of it (byte flips, truncations, spliced lines). Any crash, sanitizer report or
// broken invariant fails the test; every ctest run does what config_fuzz does, briefly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/config_parse_entry.hpp"

namespace ramguard::fuzz {
namespace {

std::vector<std::string> corpus() {
  std::vector<std::string> texts;
  for (const auto& entry : std::filesystem::directory_iterator(RAMGUARD_CONFIG_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    texts.push_back(text.str());
  }
  return texts;
}

bool run_one(const std::string& text) {
  return config_parse_one(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

TEST(ConfigFuzzSmoke, EveryCorpusFileKeepsTheInvariants) {
  const auto texts = corpus();
  ASSERT_GE(texts.size(), 8u) << "corpus " << RAMGUARD_CONFIG_CORPUS_DIR;
  for (const auto& text : texts) EXPECT_TRUE(run_one(text)) << text;
}

TEST(ConfigFuzzSmoke, TheShippedExampleIsAccepted) {
  // The invariant for an accepted text is only checked if some text is accepted.
  std::ifstream in(std::string(RAMGUARD_CONFIG_CORPUS_DIR) + "/example.yaml");
  std::ostringstream text;
  text << in.rdbuf();
  auto config = parse_config_yaml(text.str(), kConfigSource);
  ASSERT_TRUE(config.ok()) << config.error().message;
}

TEST(ConfigFuzzSmoke, MutationsKeepTheInvariants) {
  const auto texts = corpus();
  ASSERT_FALSE(texts.empty());
  std::mt19937_64 rng(20261201);
  const char kAlphabet[] = ":-[]{}&*!|>#'\"\n\t ,?%@`0123456789abcdefGiBmsKk.";
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = texts[rng() % texts.size()];
    switch (rng() % 4) {
      case 0:  // flip a few bytes to YAML punctuation, digits or units
        for (int n = 0; n < 4 && !text.empty(); ++n) {
          text[rng() % text.size()] = kAlphabet[rng() % (sizeof kAlphabet - 1)];
        }
        break;
      case 1:  // truncate anywhere
        text.resize(text.empty() ? 0 : rng() % text.size());
        break;
      case 2: {  // splice a piece of another corpus text in
        const std::string& other = texts[rng() % texts.size()];
        if (!other.empty()) {
          const std::size_t from = rng() % other.size();
          text.insert(text.empty() ? 0 : rng() % text.size(), other.substr(from, rng() % 200));
        }
        break;
      }
      default:  // duplicate a line (repeated keys)
        if (const auto nl = text.find('\n'); nl != std::string::npos) {
          text.insert(0, text.substr(0, nl + 1));
        }
        break;
    }
    ASSERT_TRUE(run_one(text)) << "input:\n" << text;
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
}

}  // namespace
}  // namespace ramguard::fuzz
