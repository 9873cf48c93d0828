#include "core/tiering/promotion_pacing.h"

#include <algorithm>

#include "core/base/check.h"

namespace heatsink {

absl::string_view PacingActionName(PacingAction action) {
  switch (action) {
    case PacingAction::kRoundNow:
      return "round_now";
    case PacingAction::kWait:
      return "wait";
    case PacingAction::kWaitForDecay:
      return "wait_for_decay";
    case PacingAction::kStop:
      return "stop";
  }
  return "unknown";
}

PromotionOutcome PromotionOutcomeOfBegin(const absl::Status& status) {
  HS_CHECK(!status.ok());
  return absl::IsFailedPrecondition(status) ? PromotionOutcome::kDisabled : PromotionOutcome::kBusy;
}

PromotionPacing DecidePromotionPacing(const PacingInput& input, const TieringKnobs& knobs) {
  switch (input.outcome) {
    case PromotionOutcome::kExchanged:
    case PromotionOutcome::kStale:
      return {PacingAction::kRoundNow, 0};
    case PromotionOutcome::kNoInversion:
    case PromotionOutcome::kFailed:
      return {PacingAction::kWait, MsToNs(knobs.no_inversion_wait_ms)};
    case PromotionOutcome::kRateLimited:
      return {PacingAction::kWait, std::max<DurationNs>(input.retry_at_ns - input.now_ns, 0)};
    case PromotionOutcome::kPreempted:
    case PromotionOutcome::kBusy:
      return {input.decay_pending ? PacingAction::kWaitForDecay : PacingAction::kRoundNow, 0};
    case PromotionOutcome::kDisabled:
      return {PacingAction::kStop, 0};
  }
  HS_CHECK_MSG(false, "unknown promotion outcome");
  return {PacingAction::kStop, 0};
}

}  // namespace heatsink
