// Covers block ranking: a block's rank is the sum of its heads' scores (so a
// block of uniformly warm heads beats a block holding the single hottest
// head); per-region directional extrema and a three-region reduction with
// stable (region, block) tie-breaks; and eligibility -- partial blocks, pinned
// heads, orphaned heads, uncommitted stores and arena blocks are never
// ranked, and a dedicated small-object pool is outside the scan.
#include <algorithm>
#include <vector>

#include "core/tiering/ranking.h"
#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::Key;
using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;

std::vector<RegionSummary> ScanAll(TierManager& tm) {
  absl::StatusOr<PromotionRound> round = tm.TryBeginPromotion();
  HS_CHECK_OK(round.status());
  std::vector<RegionSummary> out;
  for (int r = 0; r < round->region_count(); ++r) out.push_back(round->ScanRegion(r));
  round->Finish();
  return out;
}

TEST(Ranking, HottestBlockIsByBlockSumNotByHottestHead) {
  TieringHarness h(SmallKnobs(2, {2}));
  // Region 0 (16 heads), then region 1 block 0 (a*), block 1 (b*).
  h.FillRegion("p", 16, 0);
  const auto a = h.FillRegion("a", 8, 100);
  const auto b = h.FillRegion("b", 8, 200);
  ASSERT_EQ(h.Info(a[0]).region, 1);
  ASSERT_EQ(h.Info(b[7]).offset, 2 * 64 * kKiB - 8 * kKiB);
  h.Read(a[3], 100);                         // block 0: one very hot head, sum 100
  for (const TierKey& k : b) h.Read(k, 20);  // block 1: eight warm heads, sum 160
  const std::vector<RegionSummary> s = ScanAll(h.tm());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_FALSE(s[1].preferred);
  EXPECT_EQ(s[1].blocks_eligible, 2u);
  EXPECT_EQ(s[1].extremum.block, 1u);
  EXPECT_EQ(s[1].extremum.score, 160.0);
  EXPECT_TRUE(s[0].preferred);
  EXPECT_EQ(s[0].extremum.block, 0u);  // tie at 0: lowest block
  EXPECT_EQ(s[0].extremum.score, 0.0);
}

TEST(Ranking, ThreeRegionReductionBreaksTiesByRegionThenBlock) {
  std::vector<RegionSummary> s(3);
  s[0] = {0, true, 4, 4, BlockScore{0, 2, 5.0}};
  s[1] = {1, false, 4, 4, BlockScore{1, 3, 50.0}};
  s[2] = {2, false, 4, 4, BlockScore{2, 0, 50.0}};
  for (int rotation = 0; rotation < 3; ++rotation) {
    const PromotionCandidate c = ReduceSummaries(s, 1.0);
    EXPECT_EQ(c.hottest_foreign.region, 1);  // equal scores: lower region wins
    EXPECT_EQ(c.hottest_foreign.block, 3u);
    EXPECT_EQ(c.coldest_preferred.block, 2u);
    EXPECT_TRUE(c.inversion);
    std::rotate(s.begin(), s.begin() + 1, s.end());  // input order is irrelevant
  }
  s[2].extremum.score = 50.5;
  EXPECT_EQ(ReduceSummaries(s, 1.0).hottest_foreign.region, 2);
  // Strict comparison: equal scores are not an inversion; hysteresis raises the bar.
  s[0].extremum.score = 50.5;
  EXPECT_FALSE(ReduceSummaries(s, 1.0).inversion);
  s[0].extremum.score = 25.0;
  EXPECT_TRUE(ReduceSummaries(s, 2.0).inversion);
  EXPECT_FALSE(ReduceSummaries(s, 2.5).inversion);
  // A region with no eligible block contributes nothing.
  s[0].extremum = BlockScore{};
  EXPECT_FALSE(ReduceSummaries(s, 1.0).inversion);
  EXPECT_FALSE(ReduceSummaries(s, 1.0).coldest_preferred.valid());
}

TEST(Ranking, ThreeRealRegionsWithEqualBlocks) {
  TieringHarness h(SmallKnobs(2, {2, 2}));
  h.FillRegion("p", 16, 0);
  const auto r1 = h.FillRegion("x", 16, 100);
  const auto r2 = h.FillRegion("y", 16, 200);
  ASSERT_EQ(h.Info(r2[0]).region, 2);
  // Region 1 block 1 and region 2 block 0 equally hot: region 1 wins.
  for (int i = 8; i < 16; ++i) h.Read(r1[i], 3);
  for (int i = 0; i < 8; ++i) h.Read(r2[i], 3);
  const std::vector<RegionSummary> s = ScanAll(h.tm());
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].extremum.block, 1u);
  EXPECT_EQ(s[2].extremum.block, 0u);
  const PromotionCandidate c = ReduceSummaries(s, 1.0);
  EXPECT_EQ(c.hottest_foreign.region, 1);
  EXPECT_EQ(c.hottest_foreign.block, 1u);
  EXPECT_EQ(c.hottest_foreign.score, 24.0);
  EXPECT_EQ(c.coldest_preferred.region, 0);
  EXPECT_EQ(c.coldest_preferred.block, 0u);
  EXPECT_TRUE(c.inversion);
}

TEST(Ranking, ExcludesPartialPinnedOrphanedUncommittedAndArenaBlocks) {
  TieringHarness h(SmallKnobs(1, {6}));
  h.FillRegion("p", 8, 0);
  const auto hot = h.FillRegion("h", 8, 10);     // region 1 block 0: complete
  const auto pin = h.FillRegion("pin", 8, 20);   // block 1: will be pinned
  const auto orph = h.FillRegion("o", 8, 30);    // block 2: will hold an orphan
  const auto part = h.FillRegion("q", 7, 40);    // block 3: 7 of 8 heads
  for (const auto* keys : {&hot, &pin, &orph, &part}) {
    for (const TierKey& k : *keys) h.Read(k, 5);
  }
  // Block 3's last slot: an uncommitted store keeps it excluded even when full.
  absl::StatusOr<StoreTicket> pending = h.tm().BeginStore(Key("pending"), h.head_bytes());
  ASSERT_TRUE(pending.ok());
  // Block 4: the arena (smaller values), never ranked. Block 5 stays spare.
  ASSERT_TRUE(h.tm().Put(Key("small"), std::vector<uint8_t>(100, 1)).ok());
  ASSERT_EQ(h.Info(Key("small")).region, 1);
  h.Read(Key("small"), 1000);
  // Pin block 1 with an open read; orphan a head of block 2 (deleted while read).
  absl::StatusOr<ReadToken> reader = h.tm().OpenRead(pin[0]);
  ASSERT_TRUE(reader.ok());
  absl::StatusOr<ReadToken> orphan_reader = h.tm().OpenRead(orph[5]);
  ASSERT_TRUE(orphan_reader.ok());
  ASSERT_TRUE(h.tm().Delete(orph[5]).ok());
  h.PutHead(orph[5], 31);  // re-created elsewhere; the old slot is orphaned

  std::vector<RegionSummary> s = ScanAll(h.tm());
  EXPECT_EQ(s[1].blocks_eligible, 1u);  // only block 0
  EXPECT_EQ(s[1].extremum.block, 0u);
  EXPECT_EQ(s[1].extremum.score, 40.0);

  // Releasing the pin, the uncommitted store and the orphan makes them eligible.
  h.tm().CompleteRead(*std::move(reader));
  ASSERT_TRUE(h.tm().CommitStore(*std::move(pending)).ok());
  h.tm().AbandonRead(*std::move(orphan_reader));
  ASSERT_TRUE(h.tm().CheckInvariants().ok());  // reclaims nothing by itself
  h.PutHead(Key("filler"), 50);  // any exclusive operation reclaims the orphan
  s = ScanAll(h.tm());
  EXPECT_EQ(s[1].blocks_eligible, 4u);  // blocks 0-3; the arena block never
  EXPECT_EQ(s[1].extremum.block, 1u);  // 40 + the completed read
  EXPECT_EQ(s[1].extremum.score, 41.0);
  EXPECT_TRUE(h.tm().CheckInvariants().ok());
}

TEST(Ranking, SmallObjectPoolIsOutsideTheScan) {
  TieringKnobs k = SmallKnobs(1, {1});
  k.small_memory_bytes = k.block_bytes;
  TieringHarness h(k);
  ASSERT_TRUE(h.tm().Put(Key("small"), std::vector<uint8_t>(100, 1)).ok());
  EXPECT_EQ(h.Info(Key("small")).region, 2);  // the small pool's region
  EXPECT_EQ(h.Info(Key("small")).residence, Residence::kArena);
  absl::StatusOr<PromotionRound> round = h.tm().TryBeginPromotion();
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->region_count(), 2);  // head regions only
  round->Finish();
}

}  // namespace
}  // namespace heatsink
