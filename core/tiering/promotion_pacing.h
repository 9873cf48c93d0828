// File: core/tiering/promotion_pacing.h
//
// What the promotion loop does after each attempt (ADR-0019): one pure rule
// for both drivers, the simulator's TieringDriver (timers on an Executor) and
// the runtime's NumaPromotionService coordinator (a thread that waits on
// condition variables). Each driver only turns the decision into its own way
// of waiting.
//
// The rule, by the attempt's outcome (a round that could not begin counts as
// kDisabled or kBusy, PromotionOutcomeOfBegin):
//   kExchanged, kStale     -> kRoundNow: scan again at once (the ADR's tight
//                             success loop; a stale candidate is rescanned);
//   kNoInversion, kFailed  -> kWait no_inversion_wait_ms (the ADR's second);
//   kRateLimited           -> kWait until the cap's retry_at_ns (0 if past);
//   kPreempted, kBusy      -> kWaitForDecay while a decay is pending or
//                             running (resume as soon as that pass ends, not
//                             on a timer), else kRoundNow (it already ended);
//   kDisabled              -> kStop: no more rounds (no_numa_promotion, or no
//                             foreign head region); decay keeps its schedule.
//
// Example (a driver):
//   const PromotionPacing next = DecidePromotionPacing(
//       {.outcome = result.outcome, .retry_at_ns = result.retry_at_ns,
//        .decay_pending = manager->decay_pending(), .now_ns = env->NowNs()},
//       manager->knobs());
//   switch (next.action) { case PacingAction::kWait: sleep next.wait_ns; ... }
#ifndef HEATSINK_CORE_TIERING_PROMOTION_PACING_H_
#define HEATSINK_CORE_TIERING_PROMOTION_PACING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/env/time.h"
#include "core/tiering/tier_manager.h"
#include "core/tiering/tiering_knobs.h"

namespace heatsink {

enum class PacingAction : uint8_t {
  kRoundNow,      // begin the next round at once
  kWait,          // begin the next round after wait_ns
  kWaitForDecay,  // begin the next round when the pending decay pass has finished
  kStop,          // begin no more rounds
};
absl::string_view PacingActionName(PacingAction action);

struct PromotionPacing {
  PacingAction action = PacingAction::kRoundNow;
  DurationNs wait_ns = 0;  // kWait only; >= 0

  friend bool operator==(const PromotionPacing&, const PromotionPacing&) = default;
};

struct PacingInput {
  PromotionOutcome outcome = PromotionOutcome::kNoInversion;
  TimeNs retry_at_ns = 0;      // the result's, for kRateLimited
  bool decay_pending = false;  // TierManager::decay_pending() after the round finished
  TimeNs now_ns = 0;
};

// The outcome a round that could not begin stands for: kDisabled for
// FAILED_PRECONDITION (promotion disabled), kBusy otherwise (UNAVAILABLE: a
// decay is pending or holds the gate). REQUIRES: !status.ok().
PromotionOutcome PromotionOutcomeOfBegin(const absl::Status& status);

// The rule in the file comment. Pure: same input and knobs, same decision.
PromotionPacing DecidePromotionPacing(const PacingInput& input, const TieringKnobs& knobs);

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_PROMOTION_PACING_H_
