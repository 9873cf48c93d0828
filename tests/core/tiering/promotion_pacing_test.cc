// Covers DecidePromotionPacing, the one pacing rule of both promotion drivers
// (the simulator's TieringDriver, the runtime's NumaPromotionService), outcome
// by outcome with hand-computed answers: rescan at once after an exchange or
// a stale candidate, wait the ADR's second after no inversion or a failed
// swap, wait for the rate cap's instant, wait for the decay pass that
// preempted a round (or found the gate busy) and go at once when it has
// ended, stop when promotion is disabled; and which outcome a round that
// could not begin stands for.
#include "core/tiering/promotion_pacing.h"

#include "gtest/gtest.h"

namespace heatsink {
namespace {

TieringKnobs Knobs() {
  TieringKnobs k;
  k.no_inversion_wait_ms = 1'000;
  return k;
}

PromotionPacing Decide(PromotionOutcome outcome, bool decay_pending = false, TimeNs retry_at_ns = 0,
                       TimeNs now_ns = MsToNs(5'000)) {
  return DecidePromotionPacing({.outcome = outcome,
                                .retry_at_ns = retry_at_ns,
                                .decay_pending = decay_pending,
                                .now_ns = now_ns},
                               Knobs());
}

constexpr PromotionPacing kNow{PacingAction::kRoundNow, 0};
constexpr PromotionPacing kForDecay{PacingAction::kWaitForDecay, 0};
constexpr PromotionPacing kStop{PacingAction::kStop, 0};
constexpr PromotionPacing WaitMs(int64_t ms) { return {PacingAction::kWait, MsToNs(ms)}; }

TEST(PromotionPacing, ExchangedAndStaleRescanAtOnce) {
  EXPECT_EQ(Decide(PromotionOutcome::kExchanged), kNow);
  EXPECT_EQ(Decide(PromotionOutcome::kStale), kNow);
  // A decay marked meanwhile does not change them: the next round's begin
  // finds the gate busy and waits then.
  EXPECT_EQ(Decide(PromotionOutcome::kExchanged, /*decay_pending=*/true), kNow);
}

TEST(PromotionPacing, NoInversionAndFailedWaitTheAdrSecond) {
  EXPECT_EQ(Decide(PromotionOutcome::kNoInversion), WaitMs(1'000));
  EXPECT_EQ(Decide(PromotionOutcome::kFailed), WaitMs(1'000));
  TieringKnobs k = Knobs();
  k.no_inversion_wait_ms = 5;
  EXPECT_EQ(DecidePromotionPacing({.outcome = PromotionOutcome::kNoInversion}, k), WaitMs(5));
}

TEST(PromotionPacing, RateLimitedWaitsUntilTheCapAllows) {
  EXPECT_EQ(Decide(PromotionOutcome::kRateLimited, false, MsToNs(5'250), MsToNs(5'000)),
            WaitMs(250));
  // An instant already past: at once, never a negative wait.
  EXPECT_EQ(Decide(PromotionOutcome::kRateLimited, false, MsToNs(4'000), MsToNs(5'000)),
            (PromotionPacing{PacingAction::kWait, 0}));
}

TEST(PromotionPacing, PreemptedOrBusyWaitForThePendingDecay) {
  EXPECT_EQ(Decide(PromotionOutcome::kPreempted, /*decay_pending=*/true), kForDecay);
  EXPECT_EQ(Decide(PromotionOutcome::kBusy, /*decay_pending=*/true), kForDecay);
  // The decay already ran (the simulator runs it inside the event that ends
  // the round; a runtime decay thread may have been quicker): go at once.
  EXPECT_EQ(Decide(PromotionOutcome::kPreempted, /*decay_pending=*/false), kNow);
  EXPECT_EQ(Decide(PromotionOutcome::kBusy, /*decay_pending=*/false), kNow);
}

TEST(PromotionPacing, DisabledStops) {
  EXPECT_EQ(Decide(PromotionOutcome::kDisabled), kStop);
  EXPECT_EQ(Decide(PromotionOutcome::kDisabled, /*decay_pending=*/true), kStop);
}

TEST(PromotionPacing, ARoundThatCannotBeginIsDisabledOrBusy) {
  EXPECT_EQ(PromotionOutcomeOfBegin(absl::FailedPreconditionError("no_numa_promotion")),
            PromotionOutcome::kDisabled);
  EXPECT_EQ(PromotionOutcomeOfBegin(absl::UnavailableError("decay pending")),
            PromotionOutcome::kBusy);
}

TEST(PromotionPacing, ActionNames) {
  EXPECT_EQ(PacingActionName(PacingAction::kRoundNow), "round_now");
  EXPECT_EQ(PacingActionName(PacingAction::kWait), "wait");
  EXPECT_EQ(PacingActionName(PacingAction::kWaitForDecay), "wait_for_decay");
  EXPECT_EQ(PacingActionName(PacingAction::kStop), "stop");
}

}  // namespace
}  // namespace heatsink
