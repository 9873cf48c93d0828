// File: core/tiering/priority_gate.h
//
// The priority gate shared by score decay and NUMA promotion (ADR-0019), as a
// plain state machine: no locks, no waiting. TierManager keeps one under a
// small mutex; a runtime adds real waiting around it (a condition variable
// signalled when ReleasePromotion reports a waiting decay), the simulator
// drives it from events.
//
// Protocol:
//   decay:      MarkDecayPending()      -- before it starts waiting
//               TryAcquireForDecay()    -- fails while a promotion round holds
//               ... traverse the whole key space ...
//               ReleaseDecay()          -- releases the gate, then clears the
//                                          pending marker
//   promotion:  TryAcquireForPromotion() -- fails while decay is pending
//               ... scan, reduce ...
//               TryStartExchange()      -- fails once decay is pending, so a
//               FinishExchange()           tight success loop starts nothing
//               ReleasePromotion()         new; at most the exchange already
//                                          started finishes
//
// Ranking runs inside a promotion round, which decay cannot enter, so ranking
// never observes a partially decayed key space.
//
// Thread safety: none (callers serialise).
#ifndef HEATSINK_CORE_TIERING_PRIORITY_GATE_H_
#define HEATSINK_CORE_TIERING_PRIORITY_GATE_H_

#include <cstdint>

namespace heatsink {

class PriorityGate {
 public:
  enum class Holder : uint8_t { kNone, kPromotion, kDecay };

  PriorityGate() = default;
  PriorityGate(const PriorityGate&) = delete;
  PriorityGate& operator=(const PriorityGate&) = delete;

  // ---- Promotion side.
  // Takes the gate for one round (scan + at most one exchange). False while
  // the gate is held or a decay is pending.
  bool TryAcquireForPromotion();
  // REQUIRES: the promotion holds the gate and no exchange is in progress.
  // False (start nothing) once a decay is pending.
  bool TryStartExchange();
  // REQUIRES: an exchange is in progress.
  void FinishExchange();
  // REQUIRES: the promotion holds the gate, no exchange in progress. Returns
  // true when a decay is pending, i.e. someone is waiting to take the gate.
  bool ReleasePromotion();

  // ---- Decay side.
  // Marks a rescore pending. Marking while a decay pass holds the gate
  // requests one more pass after it (the marker then stays set on release).
  void MarkDecayPending();
  // REQUIRES: a decay is pending. Takes the gate unless a promotion round
  // holds it.
  bool TryAcquireForDecay();
  // REQUIRES: decay holds the gate. Releases the gate, then clears the
  // pending marker (unless another pass was requested meanwhile).
  void ReleaseDecay();

  Holder holder() const { return holder_; }
  bool decay_pending() const { return decay_pending_; }
  bool exchange_in_progress() const { return exchange_in_progress_; }

 private:
  Holder holder_ = Holder::kNone;
  bool decay_pending_ = false;
  bool decay_requested_again_ = false;
  bool exchange_in_progress_ = false;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_PRIORITY_GATE_H_
