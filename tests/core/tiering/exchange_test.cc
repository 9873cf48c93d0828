// Covers the promotion step: an exchange swaps the two blocks' bytes (through
// HeadMemory), dense score slices and allocator metadata, and rewrites every
// affected head location so each score keeps following its key; the strict
// comparison (equal scores never exchange); the optional hysteresis factor and
// exchange-rate cap; re-validation under the exclusive lock (stale
// candidates); a failed swap changes nothing; disabled promotion.
#include <vector>

#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::Key;
using tiering_test::Pattern;
using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;

class ExchangeTest : public ::testing::Test {
 protected:
  explicit ExchangeTest(TieringKnobs knobs = SmallKnobs(1, {1})) : h_(knobs) {
    local_ = h_.FillRegion("p", 8, 0);     // region 0 block 0
    foreign_ = h_.FillRegion("f", 8, 100);  // region 1 block 0
  }
  TieringHarness h_;
  std::vector<TierKey> local_;
  std::vector<TierKey> foreign_;
};

TEST_F(ExchangeTest, MovesBytesScoreSlicesAndHeadLocations) {
  const uint64_t head = h_.head_bytes();
  for (int i = 0; i < 8; ++i) h_.Read(foreign_[i], i + 1);  // foreign sum 36
  h_.Read(local_[2], 4);                                     // local sum 4
  ASSERT_EQ(h_.Info(foreign_[3]).region, 1);

  const PromotionResult r = h_.tm().PromotionStep();
  ASSERT_EQ(r.outcome, PromotionOutcome::kExchanged);
  EXPECT_EQ(r.candidate.hottest_foreign.score, 36.0);
  EXPECT_EQ(r.candidate.coldest_preferred.score, 4.0);

  for (int i = 0; i < 8; ++i) {
    const KeyInfo f = h_.Info(foreign_[i]);
    EXPECT_EQ(f.region, 0);
    EXPECT_EQ(f.offset, i * head);  // same relative slot in the other block
    EXPECT_EQ(f.score, i + 1.0);    // the score followed the key
    EXPECT_EQ(h_.ReadAll(foreign_[i]), Pattern(head, 100 + i));
    const KeyInfo p = h_.Info(local_[i]);
    EXPECT_EQ(p.region, 1);
    EXPECT_EQ(p.offset, i * head);
    EXPECT_EQ(p.score, i == 2 ? 4.0 : 0.0);
    EXPECT_EQ(h_.ReadAll(local_[i]), Pattern(head, i));
  }
  // The bytes really moved in memory, not just the bookkeeping.
  const std::vector<uint8_t> expect = Pattern(head, 105);
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), h_.memory().inner().data(0) + 5 * head));
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());

  // Increments now land in the preferred region's dense slot and count local.
  h_.Read(foreign_[0], 2);
  EXPECT_EQ(h_.Score(foreign_[0]), 3.0);
  const TieringStats st = h_.tm().stats();
  EXPECT_EQ(st.exchanges, 1);
  EXPECT_EQ(st.exchange_bytes, int64_t{2 * 64 * 1024});
  EXPECT_EQ(st.reads_local, 4 + 2);
  EXPECT_EQ(st.reads_foreign, 36);
  EXPECT_EQ(h_.metrics().Value("tiering_exchanges_total"), 1);
  EXPECT_EQ(h_.metrics().Value("tiering_reads_total", {{"placement", "local"}}), 6);

  // The hot block is local now: no inversion, and nothing moves.
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kNoInversion);
  EXPECT_EQ(h_.Info(foreign_[0]).region, 0);
}

TEST_F(ExchangeTest, EqualScoresDoNotExchange) {
  for (int i = 0; i < 8; ++i) {
    h_.Read(foreign_[i], 2);
    h_.Read(local_[7 - i], 2);
  }
  const PromotionResult r = h_.tm().PromotionStep();
  EXPECT_EQ(r.outcome, PromotionOutcome::kNoInversion);
  EXPECT_FALSE(r.candidate.inversion);
  EXPECT_EQ(h_.memory().swaps(), 0);
  h_.Read(foreign_[0], 1);  // strictly hotter now
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
}

TEST(Exchange, HysteresisFactorRaisesTheBar) {
  TieringKnobs k = SmallKnobs(1, {1});
  k.promotion_hysteresis_factor = 2.0;
  TieringHarness h(k);
  const auto local = h.FillRegion("p", 8, 0);
  const auto foreign = h.FillRegion("f", 8, 100);
  h.Read(local[0], 8);
  h.Read(foreign[0], 16);  // 16 > 8 but not > 2 * 8
  EXPECT_EQ(h.tm().PromotionStep().outcome, PromotionOutcome::kNoInversion);
  h.Read(foreign[1], 1);
  EXPECT_EQ(h.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
}

TEST(Exchange, RateCapDefersTheNextExchange) {
  TieringKnobs k = SmallKnobs(2, {2});
  k.exchanges_per_second_max = 1;
  TieringHarness h(k);
  h.FillRegion("p", 16, 0);
  const auto foreign = h.FillRegion("f", 16, 100);
  for (const TierKey& key : foreign) h.Read(key, 1);
  h.env().AdvanceBy(SecToNs(5));
  const TimeNs t0 = h.env().NowNs();
  EXPECT_EQ(h.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
  const PromotionResult second = h.tm().PromotionStep();
  EXPECT_EQ(second.outcome, PromotionOutcome::kRateLimited);
  EXPECT_EQ(second.retry_at_ns, t0 + kNsPerSec);
  h.env().AdvanceBy(kNsPerSec - 1);
  EXPECT_EQ(h.tm().PromotionStep().outcome, PromotionOutcome::kRateLimited);
  h.env().AdvanceBy(1);
  EXPECT_EQ(h.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
  EXPECT_EQ(h.tm().stats().exchanges, 2);
  EXPECT_EQ(h.metrics().Value("tiering_promotion_steps_total", {{"outcome", "rate_limited"}}), 2);
}

TEST_F(ExchangeTest, CandidateIsRevalidatedUnderTheExclusiveLock) {
  for (const TierKey& key : foreign_) h_.Read(key, 1);
  absl::StatusOr<PromotionRound> round = h_.tm().TryBeginPromotion();
  ASSERT_TRUE(round.ok());
  const std::vector<RegionSummary> s = {round->ScanRegion(0), round->ScanRegion(1)};
  const PromotionCandidate c = round->Reduce(s);
  ASSERT_TRUE(c.inversion);
  // A reader pins a head of the hot block between scan and exchange.
  absl::StatusOr<ReadToken> reader = h_.tm().OpenRead(foreign_[4]);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(round->Exchange(c).outcome, PromotionOutcome::kStale);
  EXPECT_EQ(h_.memory().swaps(), 0);
  round->Finish();
  h_.tm().CompleteRead(*std::move(reader));

  // Scores that cooled below the local block since the scan: stale too.
  absl::StatusOr<PromotionRound> again = h_.tm().TryBeginPromotion();
  ASSERT_TRUE(again.ok());
  const PromotionCandidate c2 = again->Reduce({again->ScanRegion(0), again->ScanRegion(1)});
  ASSERT_TRUE(c2.inversion);
  h_.Read(local_[0], 20);
  const PromotionResult r = again->Exchange(c2);
  EXPECT_EQ(r.outcome, PromotionOutcome::kStale);
  EXPECT_EQ(r.candidate.coldest_preferred.score, 20.0);
  EXPECT_FALSE(r.candidate.inversion);
  again->Finish();
}

TEST_F(ExchangeTest, FailedSwapChangesNothing) {
  for (const TierKey& key : foreign_) h_.Read(key, 1);
  h_.memory().set_swap_hook([] { return absl::UnavailableError("memory offline"); });
  const PromotionResult r = h_.tm().PromotionStep();
  EXPECT_EQ(r.outcome, PromotionOutcome::kFailed);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(h_.Info(foreign_[0]).region, 1);
  EXPECT_EQ(h_.Score(foreign_[0]), 1.0);
  EXPECT_EQ(h_.ReadAll(foreign_[0]), Pattern(h_.head_bytes(), 100));
  EXPECT_EQ(h_.tm().stats().exchanges, 0);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
  h_.memory().set_swap_hook(nullptr);
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
}

TEST(Exchange, DisabledWithoutForeignRegionsOrByKnob) {
  TieringHarness alone(SmallKnobs(1, {}));
  EXPECT_EQ(alone.tm().PromotionStep().outcome, PromotionOutcome::kDisabled);
  TieringKnobs k = SmallKnobs(1, {1});
  k.no_numa_promotion = true;
  TieringHarness off(k);
  const auto local = off.FillRegion("p", 8, 0);
  const auto foreign = off.FillRegion("f", 8, 100);
  off.Read(foreign[0], 10);
  EXPECT_EQ(off.tm().PromotionStep().outcome, PromotionOutcome::kDisabled);
  EXPECT_EQ(off.tm().TryBeginPromotion().status().code(), absl::StatusCode::kFailedPrecondition);
  // Scores are still kept and decayed.
  ASSERT_TRUE(off.tm().RunDecayPass().ok());
  EXPECT_EQ(off.Score(foreign[0]), 5.0);
}

}  // namespace
}  // namespace heatsink
