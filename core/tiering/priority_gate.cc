#include "core/tiering/priority_gate.h"

#include "core/base/check.h"

namespace heatsink {

bool PriorityGate::TryAcquireForPromotion() {
  if (holder_ != Holder::kNone || decay_pending_) return false;
  holder_ = Holder::kPromotion;
  return true;
}

bool PriorityGate::TryStartExchange() {
  HS_CHECK(holder_ == Holder::kPromotion && !exchange_in_progress_);
  if (decay_pending_) return false;
  exchange_in_progress_ = true;
  return true;
}

void PriorityGate::FinishExchange() {
  HS_CHECK(holder_ == Holder::kPromotion && exchange_in_progress_);
  exchange_in_progress_ = false;
}

bool PriorityGate::ReleasePromotion() {
  HS_CHECK(holder_ == Holder::kPromotion && !exchange_in_progress_);
  holder_ = Holder::kNone;
  return decay_pending_;
}

void PriorityGate::MarkDecayPending() {
  if (holder_ == Holder::kDecay) {
    decay_requested_again_ = true;
    return;
  }
  decay_pending_ = true;
}

bool PriorityGate::TryAcquireForDecay() {
  HS_CHECK(decay_pending_);
  if (holder_ != Holder::kNone) return false;
  holder_ = Holder::kDecay;
  return true;
}

void PriorityGate::ReleaseDecay() {
  HS_CHECK(holder_ == Holder::kDecay && decay_pending_);
  // The ADR's order (release, then clear) in one serialised step: nobody can
  // observe the marker cleared while decay still holds the gate, and a pass
  // requested during this one keeps the marker set.
  holder_ = Holder::kNone;
  decay_pending_ = decay_requested_again_;
  decay_requested_again_ = false;
}

}  // namespace heatsink
