// Covers the priority gate shared by decay and promotion, first as a bare
// state machine and then through TierManager: a pending decay stops a stream
// of successful exchanges before the next one starts; an exchange already in
// progress when decay is marked finishes; decay cannot begin while a round
// holds the gate (so ranking never sees a partially decayed key space); decay
// traverses every dense region and index shard; the pending marker is cleared
// only when decay releases the gate.
#include <vector>

#include "tests/core/tiering/tiering_test_util.h"

namespace heatsink {
namespace {

using tiering_test::Key;
using tiering_test::SmallKnobs;
using tiering_test::TieringHarness;
using Holder = PriorityGate::Holder;

TEST(PriorityGate, DecayPendingBlocksNewPromotionAndExchanges) {
  PriorityGate g;
  ASSERT_TRUE(g.TryAcquireForPromotion());
  EXPECT_FALSE(g.TryAcquireForPromotion());  // one holder at a time
  ASSERT_TRUE(g.TryStartExchange());
  g.MarkDecayPending();                      // while an exchange is in progress
  EXPECT_TRUE(g.exchange_in_progress());     // it is not interrupted
  EXPECT_FALSE(g.TryAcquireForDecay());      // decay waits for the round
  g.FinishExchange();
  EXPECT_FALSE(g.TryStartExchange());        // no further exchange starts
  EXPECT_TRUE(g.ReleasePromotion());         // tells the caller decay waits
  EXPECT_FALSE(g.TryAcquireForPromotion());  // still pending
  ASSERT_TRUE(g.TryAcquireForDecay());
  EXPECT_EQ(g.holder(), Holder::kDecay);
  EXPECT_TRUE(g.decay_pending());            // marker held for the whole pass
  EXPECT_FALSE(g.TryAcquireForPromotion());
  g.ReleaseDecay();
  EXPECT_EQ(g.holder(), Holder::kNone);
  EXPECT_FALSE(g.decay_pending());           // cleared with the release
  EXPECT_TRUE(g.TryAcquireForPromotion());
  EXPECT_FALSE(g.ReleasePromotion());        // nobody waiting
}

TEST(PriorityGate, MarkDuringDecayRequestsAnotherPass) {
  PriorityGate g;
  g.MarkDecayPending();
  ASSERT_TRUE(g.TryAcquireForDecay());
  g.MarkDecayPending();
  g.ReleaseDecay();
  EXPECT_TRUE(g.decay_pending());
  EXPECT_FALSE(g.TryAcquireForPromotion());
  ASSERT_TRUE(g.TryAcquireForDecay());
  g.ReleaseDecay();
  EXPECT_FALSE(g.decay_pending());
}

// Preferred region of 4 blocks, foreign region of 4 hotter blocks (and a
// spare one for the arena): four
// successive inversions, i.e. a stream of successful exchanges.
class GateTest : public ::testing::Test {
 protected:
  GateTest() : h_(SmallKnobs(4, {5})) {
    h_.FillRegion("p", 32, 0);
    foreign_ = h_.FillRegion("f", 32, 100);
    for (const TierKey& k : foreign_) h_.Read(k, 2);
  }
  TieringHarness h_;
  std::vector<TierKey> foreign_;
};

TEST_F(GateTest, DecayPreemptsAStreamOfExchanges) {
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
  h_.tm().MarkDecayPending();
  // The tight success loop starts nothing new while decay is pending.
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kBusy);
  EXPECT_EQ(h_.tm().stats().exchanges, 2);
  absl::StatusOr<DecayPass> pass = h_.tm().TryBeginDecay();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(h_.tm().gate_holder(), Holder::kDecay);
  pass->Finish();
  EXPECT_FALSE(h_.tm().decay_pending());
  EXPECT_EQ(h_.Score(foreign_[0]), 1.0);  // 2 * 0.5, exactly once
  // Promotion resumes after the pass.
  EXPECT_EQ(h_.tm().PromotionStep().outcome, PromotionOutcome::kExchanged);
  EXPECT_EQ(h_.tm().stats().exchanges, 3);
}

TEST_F(GateTest, PendingDuringScanPreemptsTheExchange) {
  absl::StatusOr<PromotionRound> round = h_.tm().TryBeginPromotion();
  ASSERT_TRUE(round.ok());
  const PromotionCandidate c = round->Reduce({round->ScanRegion(0), round->ScanRegion(1)});
  ASSERT_TRUE(c.inversion);
  h_.tm().MarkDecayPending();
  // Decay cannot enter while the round holds the gate, so the ranking above
  // saw a key space that no decay had partly touched.
  EXPECT_EQ(h_.tm().TryBeginDecay().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(round->Exchange(c).outcome, PromotionOutcome::kPreempted);
  EXPECT_EQ(h_.memory().swaps(), 0);
  EXPECT_TRUE(round->Finish());  // decay is waiting
  ASSERT_TRUE(h_.tm().TryBeginDecay().ok());  // pass destroyed here: finishes
  EXPECT_FALSE(h_.tm().decay_pending());
  EXPECT_EQ(h_.Score(foreign_[0]), 1.0);
}

TEST_F(GateTest, InFlightExchangeFinishesAndDecayWaitsForIt) {
  int marked_during_swap = 0;
  absl::StatusCode decay_during_swap = absl::StatusCode::kOk;
  h_.memory().set_swap_hook([&] {
    // The decay thread arrives while the bytes are being exchanged.
    h_.tm().MarkDecayPending();
    ++marked_during_swap;
    decay_during_swap = h_.tm().TryBeginDecay().status().code();
    return absl::OkStatus();
  });
  absl::StatusOr<PromotionRound> round = h_.tm().TryBeginPromotion();
  ASSERT_TRUE(round.ok());
  const PromotionCandidate c = round->Reduce({round->ScanRegion(0), round->ScanRegion(1)});
  const PromotionResult r = round->Exchange(c);
  EXPECT_EQ(marked_during_swap, 1);
  EXPECT_EQ(decay_during_swap, absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.outcome, PromotionOutcome::kExchanged);  // finished, not torn
  EXPECT_EQ(h_.Info(foreign_[0]).region, 0);
  EXPECT_TRUE(h_.tm().CheckInvariants().ok());
  h_.memory().set_swap_hook(nullptr);
  // At most that one exchange: another in the same round is refused.
  const PromotionCandidate next = round->Reduce({round->ScanRegion(0), round->ScanRegion(1)});
  ASSERT_TRUE(next.inversion);
  EXPECT_EQ(round->Exchange(next).outcome, PromotionOutcome::kPreempted);
  EXPECT_TRUE(round->Finish());
  ASSERT_TRUE(h_.tm().RunDecayPass().ok());
  EXPECT_EQ(h_.tm().stats().exchanges, 1);
  EXPECT_EQ(h_.tm().stats().decay_passes, 1);
}

TEST_F(GateTest, DecayTraversesEveryRegionAndShardExactlyOnce) {
  // Scores in both dense regions and in index entries (evicted, arena).
  ASSERT_TRUE(h_.tm().EvictHead(foreign_[31]).ok());
  ASSERT_TRUE(h_.tm().Put(Key("small"), std::vector<uint8_t>(8, 1)).ok());
  h_.Read(Key("small"), 4);
  h_.tm().MarkDecayPending();
  absl::StatusOr<DecayPass> pass = h_.tm().TryBeginDecay();
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->region_count(), 2);
  EXPECT_EQ(pass->shard_count(), 4);
  // Parts may be done piecemeal (by per-node workers); Finish does the rest.
  pass->DecayRegion(1);
  pass->DecayIndexShard(0);
  EXPECT_EQ(h_.tm().gate_holder(), Holder::kDecay);
  pass->Finish();
  EXPECT_EQ(h_.tm().gate_holder(), Holder::kNone);
  EXPECT_EQ(h_.Score(foreign_[0]), 1.0);
  EXPECT_EQ(h_.Score(foreign_[31]), 1.0);
  EXPECT_EQ(h_.Score(Key("small")), 2.0);
  EXPECT_EQ(h_.tm().stats().decay_passes_started, 1);
  // Without a pending marker there is nothing to begin.
  EXPECT_EQ(h_.tm().TryBeginDecay().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace heatsink
