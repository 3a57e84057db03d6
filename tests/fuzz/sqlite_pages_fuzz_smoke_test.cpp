// Feeds the page reader's fuzz entry point (sqlite_pages_entry.hpp) the checked-in seeds
// (tests/fuzz/sqlite_pages_corpus, also the libFuzzer target's seeds) and thousands of seeded
// mutations of them: bytes flipped, the file cut, pages swapped or zeroed. Any crash, sanitizer
// report or broken invariant fails the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "fuzz/sqlite_pages_entry.hpp"

namespace ramguard::fuzz {
namespace {

using Bytes = std::vector<std::uint8_t>;

std::vector<Bytes> corpus() {
  std::vector<Bytes> out;
  for (const auto& entry : std::filesystem::directory_iterator(RAMGUARD_SQLITE_PAGES_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

bool feed(const Bytes& b) {
  return sqlite_pages_read(b.data(), b.size());
}

TEST(SqlitePagesFuzzSmoke, TheCorpusIsRealDatabasesAndPasses) {
  const std::vector<Bytes> seeds = corpus();
  ASSERT_GE(seeds.size(), 2u);
  for (const Bytes& b : seeds) {
    ASSERT_TRUE(feed(b));
    const SqlitePages pages(b);
    EXPECT_EQ(pages.page_size(), 512u) << "the seeds are 512-byte-page databases";
    std::size_t records = 0;
    for (std::uint32_t p = 1; p <= pages.page_count(); ++p) {
      if (auto page = pages.btree_page(p)) records += page->records.size();
    }
    EXPECT_GT(records, 0u);
  }
}

TEST(SqlitePagesFuzzSmoke, SeededMutationsNeverBreakTheReader) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kInputs = 3000;
#else
  constexpr int kInputs = 20000;
#endif
  const std::vector<Bytes> seeds = corpus();
  ASSERT_FALSE(seeds.empty());
  std::mt19937_64 rng(20261205);
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(rng() % n); };
  for (int i = 0; i < kInputs; ++i) {
    Bytes b = seeds[pick(seeds.size())];
    const int steps = 1 + static_cast<int>(rng() % 4);
    for (int s = 0; s < steps; ++s) {
      switch (rng() % 4) {
        case 0:  // flip bytes (cell pointers, varints, serial types, child pages)
          for (int k = 0; k < 8 && !b.empty(); ++k)
            b[pick(b.size())] = static_cast<std::uint8_t>(rng());
          break;
        case 1:  // cut the file
          b.resize(pick(b.size() + 1));
          break;
        case 2: {  // zero a 512-byte page
          const std::size_t at = pick(b.size() / 512 + 1) * 512;
          for (std::size_t k = at; k < at + 512 && k < b.size(); ++k) b[k] = 0;
          break;
        }
        default: {  // copy one page over another
          if (b.size() < 1024) break;
          const std::size_t from = pick(b.size() / 512) * 512, to = pick(b.size() / 512) * 512;
          std::copy_n(b.begin() + static_cast<long>(from), 512, b.begin() + static_cast<long>(to));
        }
      }
    }
    ASSERT_TRUE(feed(b)) << "input #" << i << " (" << b.size() << " bytes)";
  }
}

}  // namespace
}  // namespace ramguard::fuzz
