// "Did you mean": the nearest candidate within about a third of the word.
#include "ramguard/base/closest_word.hpp"

#include <gtest/gtest.h>

namespace ramguard {
namespace {

TEST(ClosestWord, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("trainig", "training"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("reprot", "report"), 2u);
  EXPECT_EQ(edit_distance("same", "same"), 0u);
}

TEST(ClosestWord, WithinAThirdOfTheWordOnly) {
  EXPECT_EQ(closest_word("lod", {"load", "save"}), "load");
  EXPECT_EQ(closest_word("xyz", {"load", "save"}), "");
  EXPECT_EQ(closest_word("sav", {"save", "sav2"}), "save");  // the first on a tie
  EXPECT_EQ(closest_word("x", {}), "");
}

}  // namespace
}  // namespace ramguard
