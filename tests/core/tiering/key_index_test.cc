// Covers the sharded key index: insert/find/erase, ALREADY_EXISTS and the
// index_keys_max limit (RESOURCE_EXHAUSTED), entry reuse (an erased entry's
// memory is reused with a new incarnation, never freed), and decay of
// index-owned scores that skips entries tagged as externally owned.
#include <set>
#include <string>

#include "absl/strings/str_cat.h"

#include "core/tiering/key_index.h"
#include "core/tiering/score.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

TierKey K(const std::string& name, uint32_t chunk = 0) { return {ObjectName{"t", name}, chunk}; }

TEST(KeyIndex, InsertFindEraseAndLimit) {
  KeyIndex index(/*shards=*/3, /*keys_max=*/3);
  absl::StatusOr<IndexEntry*> a = index.Insert(K("a"), 1);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(index.Find(K("a")), *a);
  EXPECT_EQ((*a)->score.load(), 0.0);
  EXPECT_EQ(index.Find(K("a", 1)), nullptr);  // another chunk is another key
  EXPECT_EQ(index.Insert(K("a"), 2).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(index.Insert(K("a", 1), 3).ok());
  ASSERT_TRUE(index.Insert(K("b"), 4).ok());
  EXPECT_EQ(index.Insert(K("c"), 5).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(index.size(), 3);
  EXPECT_TRUE(index.Erase(K("b")));
  EXPECT_FALSE(index.Erase(K("b")));
  EXPECT_EQ(index.size(), 2);
  EXPECT_TRUE(index.Insert(K("c"), 6).ok());
}

TEST(KeyIndex, ErasedEntriesAreReusedNotFreed) {
  KeyIndex index(1, 10'000);
  IndexEntry* first = *index.Insert(K("a"), 1);
  first->score.store(9.0);
  ASSERT_TRUE(index.Erase(K("a")));
  EXPECT_FALSE(first->live);
  IndexEntry* second = *index.Insert(K("b"), 2);
  EXPECT_EQ(second, first);  // same memory, fresh state
  EXPECT_TRUE(second->live);
  EXPECT_EQ(second->incarnation, 2u);
  EXPECT_EQ(second->score.load(), 0.0);
  EXPECT_EQ(second->key, K("b"));
  std::set<const IndexEntry*> seen;
  for (int i = 0; i < 2500; ++i) ASSERT_TRUE(index.Insert(K(absl::StrCat("k", i)), 10 + i).ok());
  index.ForEachInShard(0, [&](const IndexEntry& e) { seen.insert(&e); });
  EXPECT_EQ(seen.size(), 2501u);  // spans several chunks
}

TEST(KeyIndex, DecaySkipsExternallyOwnedScores) {
  KeyIndex index(2, 100);
  IndexEntry* owned = *index.Insert(K("owned"), 1);
  IndexEntry* external = *index.Insert(K("external"), 2);
  owned->score.store(3.0);
  external->score.store(NoScoreTag());
  for (int shard = 0; shard < index.shard_count(); ++shard) index.DecayShard(shard, 0.5);
  EXPECT_EQ(owned->score.load(), 1.5);
  EXPECT_TRUE(IsNoScoreTag(external->score.load()));
}

}  // namespace
}  // namespace heatsink
