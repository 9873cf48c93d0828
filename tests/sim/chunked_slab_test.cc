#include "sim/chunked_slab.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace heatsink::sim {
namespace {

struct Record {
  int64_t value = -1;
  std::string name;
};

TEST(ChunkedSlab, GrowsAChunkAtATimeAndElementsNeverMove) {
  ChunkedSlab<Record, 2> slab;  // chunks of 4
  EXPECT_TRUE(slab.empty());
  Record& first = slab.Grow();
  EXPECT_EQ(first.value, -1);  // default-constructed
  first.value = 0;
  first.name = "a name longer than the small-string buffer of std::string";
  const Record* const first_address = &first;
  for (int64_t i = 1; i < 10; ++i) slab.Grow().value = i;
  EXPECT_EQ(slab.size(), 10u);
  // Growing through two more chunks moved nothing.
  EXPECT_EQ(&slab[0], first_address);
  EXPECT_EQ(slab[0].name, "a name longer than the small-string buffer of std::string");
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(slab[static_cast<size_t>(i)].value, i);
  const ChunkedSlab<Record, 2>& view = slab;
  EXPECT_EQ(view[9].value, 9);
}

TEST(ChunkedSlab, CutToKeepsTheLowerElementsAndHandsOutTheRestOfTheLastChunkAgain) {
  ChunkedSlab<Record, 2> slab;
  for (int64_t i = 0; i < 10; ++i) slab.Grow().value = i;
  slab.CutTo(5);  // keeps chunks 0 and 1; element 5..7 of chunk 1 stay as they were
  EXPECT_EQ(slab.size(), 5u);
  EXPECT_EQ(slab[4].value, 4);
  EXPECT_EQ(slab.Grow().value, 5);  // not reset: the owner keeps what it needs
  // Element 8 was in a chunk the cut freed: it comes back default.
  slab.Grow();
  slab.Grow();
  EXPECT_EQ(slab.Grow().value, -1);
  EXPECT_EQ(slab.size(), 9u);
  slab.CutTo(0);
  EXPECT_TRUE(slab.empty());
  EXPECT_EQ(slab.Grow().value, -1);
}

TEST(ChunkedSlabDeathTest, CutAboveTheSizeIsAProgrammerError) {
  ChunkedSlab<Record, 2> slab;
  slab.Grow();
  EXPECT_DEATH(slab.CutTo(2), "");
}

}  // namespace
}  // namespace heatsink::sim
