// Covers TierManager::PlaceHotNewcomer, the newcomer placement for copies
// that inherit a score: a foreign head in a block promotion cannot move
// trades places with a strictly colder preferred head -- the coldest one of
// the hottest preferred block that has one, and only above the mean head of
// the coldest eligible preferred block -- moving bytes, owners, dense
// scores and both index locations, so that every block keeps its occupancy
// and the invariants hold; and every case in which it must not trade.
#include <vector>

#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::Key;
using tiering_test::Pattern;
using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;

// Two preferred blocks of 8 heads, one foreign region of 4 blocks.
class HeadTradeTest : public ::testing::Test {
 protected:
  HeadTradeTest() : h_(SmallKnobs(2, {4})) {
    local_ = h_.FillRegion("local", 16, 100);
    // Block 0 (local0..7) scores 1 each; block 1 (local8..15) scores 5 each,
    // except local12, which scores 2.
    for (int i = 0; i < 16; ++i) h_.Read(local_[i], i < 8 ? 1 : (i == 12 ? 2 : 5));
    // One copy in a foreign block of its own (not complete).
    h_.PutHead(copy_, 7);
  }
  TieringHarness h_;
  std::vector<TierKey> local_;
  const TierKey copy_ = Key("copy");
};

TEST_F(HeadTradeTest, AHotCopyTradesWithTheColdestHeadOfTheHottestBlock) {
  ASSERT_EQ(h_.Info(copy_).region, 1);
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 3.0).ok());
  const KeyInfo before_local = h_.Info(local_[12]);
  const KeyInfo before_copy = h_.Info(copy_);
  absl::StatusOr<bool> traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok()) << traded.status();
  EXPECT_TRUE(*traded);
  // local12 (score 2, block 1: sum 37) was chosen over block 0's heads
  // (score 1, sum 8): the hot copy joins the hot block.
  EXPECT_EQ(h_.Info(copy_).region, 0);
  EXPECT_EQ(h_.Info(copy_).offset, before_local.offset);
  EXPECT_EQ(h_.Info(local_[12]).region, before_copy.region);
  EXPECT_EQ(h_.Info(local_[12]).offset, before_copy.offset);
  // Scores follow their keys; bytes follow their keys.
  EXPECT_EQ(h_.Score(copy_), 3.0);
  EXPECT_EQ(h_.Score(local_[12]), 2.0);
  EXPECT_EQ(h_.ReadAll(copy_), Pattern(h_.head_bytes(), 7));
  EXPECT_EQ(h_.ReadAll(local_[12]), Pattern(h_.head_bytes(), 112));
  EXPECT_EQ(h_.tm().stats().head_trades, 1);
  EXPECT_EQ(h_.metrics().Value("tiering_head_trades_total"), 1);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
  // Reads of the copy now count as local.
  h_.Read(copy_);
  EXPECT_EQ(h_.tm().stats().reads_local, 8 + 7 * 5 + 2 + 1);
}

TEST_F(HeadTradeTest, NoTradeWhenNoPreferredHeadIsColder) {
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 1.0).ok());  // equal to the coldest: not colder
  absl::StatusOr<bool> traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok());
  EXPECT_FALSE(*traded);
  EXPECT_EQ(h_.Info(copy_).region, 1);
  EXPECT_EQ(h_.tm().stats().head_trades, 0);
}

TEST_F(HeadTradeTest, NoTradeBelowTheMeanHeadOfTheColdestPreferredBlock) {
  // Block 0 becomes 1 + 7 x 3 = 22 (mean 2.75), still the colder block;
  // local0 (1) is colder than the copy (2), but the copy is below the mean
  // head of the block promotion would move out next.
  for (int i = 1; i < 8; ++i) h_.Read(local_[i], 2);
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 2.0).ok());
  absl::StatusOr<bool> traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok());
  EXPECT_FALSE(*traded);
  // Above the mean it trades: local0 (1) and local12 (2) are colder now,
  // and local12 sits in the hotter block.
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 2.9).ok());
  const KeyInfo local12 = h_.Info(local_[12]);
  traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok());
  EXPECT_TRUE(*traded);
  EXPECT_EQ(h_.Info(copy_).offset, local12.offset);
  EXPECT_EQ(h_.Info(copy_).region, 0);
}

TEST_F(HeadTradeTest, NoTradeForLocalPinnedOrCompleteBlockHeadsOrPendingDecay) {
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 50.0).ok());
  // A head already local.
  absl::StatusOr<bool> traded = h_.tm().PlaceHotNewcomer(local_[0]);
  ASSERT_TRUE(traded.ok());
  EXPECT_FALSE(*traded);
  // Pinned by an open read.
  {
    absl::StatusOr<ReadToken> t = h_.tm().OpenRead(copy_);
    ASSERT_TRUE(t.ok());
    traded = h_.tm().PlaceHotNewcomer(copy_);
    ASSERT_TRUE(traded.ok());
    EXPECT_FALSE(*traded);
    h_.tm().AbandonRead(*std::move(t));
  }
  // A decay is pending: it goes first.
  h_.tm().MarkDecayPending();
  traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok());
  EXPECT_FALSE(*traded);
  ASSERT_TRUE(h_.tm().RunDecayPass().ok());
  // Its block completed: promotion ranks it with the block instead.
  for (int i = 0; i < 7; ++i) h_.PutHead(Key(absl::StrCat("fill", i)), 200 + i);
  traded = h_.tm().PlaceHotNewcomer(copy_);
  ASSERT_TRUE(traded.ok());
  EXPECT_FALSE(*traded);
  EXPECT_EQ(h_.Info(copy_).region, 1);
  EXPECT_EQ(h_.tm().PlaceHotNewcomer(Key("absent")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

TEST_F(HeadTradeTest, AFailedSwapChangesNothing) {
  ASSERT_TRUE(h_.tm().RaiseScore(copy_, 3.0).ok());
  h_.memory().set_swap_hook([] { return absl::UnavailableError("pages pinned"); });
  const KeyInfo before = h_.Info(copy_);
  absl::StatusOr<bool> traded = h_.tm().PlaceHotNewcomer(copy_);
  EXPECT_EQ(traded.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(h_.Info(copy_).region, before.region);
  EXPECT_EQ(h_.Info(copy_).offset, before.offset);
  EXPECT_EQ(h_.tm().stats().head_trades, 0);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
}

}  // namespace
}  // namespace heatsink
