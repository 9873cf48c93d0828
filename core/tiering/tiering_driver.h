// File: core/tiering/tiering_driver.h
//
// Paces a TierManager on an Executor (ADR-0019 data flow 6) for a
// single-threaded world such as the simulator: a decay pass once per decay
// interval, and the promotion loop, whose every next step is the core's one
// pacing rule (core/tiering/promotion_pacing.h, DecidePromotionPacing) --
// scan again at once after an exchange; wait no_inversion_wait_ms (the ADR's
// one second) after a scan that finds no inversion; resume right after a
// decay that preempted it; stop when promotion is disabled. The runtime runs
// the same TierManager on real threads instead (one scanning worker per node,
// a coordinator, a decay thread; runtime/numa/promotion_service.h) under the
// same rule, and does not use this class.
//
// Optional modelled costs: a round holds the gate for its scan time (the
// slowest region, since each node scans its own in parallel) and, after an
// exchange, for the exchange time; promotion resumes only after a decay's
// modelled time. A decay that falls due while a round holds the gate waits for
// it, exactly as the gate prescribes; it is applied at once when it gets the
// gate (its work happens inside one event, so no event can observe a partial
// pass).
//
// Thread safety: call Start/Stop on the executor's thread (or before it runs).
// REQUIRES: Stop() (or destruction) before the executor could run the
// driver's timers after the driver is gone; Stop cancels them all.
#ifndef HEATSINK_CORE_TIERING_TIERING_DRIVER_H_
#define HEATSINK_CORE_TIERING_TIERING_DRIVER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "core/env/env.h"
#include "core/tiering/promotion_pacing.h"
#include "core/tiering/tier_manager.h"

namespace heatsink {

// Modelled durations; every method defaults to zero cost.
class TieringCostModel {
 public:
  virtual ~TieringCostModel() = default;
  // Time for a node's worker to scan one region.
  virtual DurationNs ScanNs(const RegionSummary& summary) const;
  // Time to exchange two blocks (`bytes` moved in total).
  virtual DurationNs ExchangeNs(uint64_t bytes) const;
  // Time of one decay pass over `keys` indexed keys.
  virtual DurationNs DecayNs(int64_t keys) const;
};

class TieringDriver {
 public:
  // `costs` may be null (zero costs). All pointers must outlive the driver.
  TieringDriver(Env* env, TierManager* manager, const TieringCostModel* costs = nullptr);
  TieringDriver(const TieringDriver&) = delete;
  TieringDriver& operator=(const TieringDriver&) = delete;
  ~TieringDriver();

  // Schedules the first promotion round now and the first decay one decay
  // interval from now. REQUIRES: not started.
  void Start();
  // Cancels every timer and releases a round in progress.
  void Stop();

  // Called with every pacing decision (the attempt's outcome and what the
  // driver does next), on the executor's thread. For tests that compare the
  // two worlds' decisions; set before Start.
  using PacingObserver = std::function<void(PromotionOutcome, const PromotionPacing&)>;
  void set_pacing_observer(PacingObserver observer) { pacing_observer_ = std::move(observer); }

  bool running() const { return running_; }
  // Set when promotion is disabled; the decay schedule keeps going.
  bool promotion_disabled() const { return promotion_disabled_; }
  int64_t rounds() const { return rounds_; }
  int64_t decays() const { return decays_; }
  TimeNs next_decay_ns() const { return next_decay_ns_; }

 private:
  void ScheduleRound(DurationNs delay_ns);
  void BeginRound();
  void ExchangePhase(PromotionCandidate candidate);
  void EndRound(PromotionResult result);
  // Applies DecidePromotionPacing to an attempt's outcome.
  void Pace(PromotionOutcome outcome, TimeNs retry_at_ns);
  void OnDecayDue();
  void TryRunDecay();

  Env* const env_;
  TierManager* const manager_;
  const TieringCostModel* const costs_;
  const TieringCostModel default_costs_;
  PacingObserver pacing_observer_;

  bool running_ = false;
  bool promotion_disabled_ = false;
  // Promotion waits for a decay pass (it was preempted or found the gate busy).
  bool promotion_waits_for_decay_ = false;
  std::optional<PromotionRound> round_;
  TimerId round_timer_ = kNoTimer;
  TimerId decay_timer_ = kNoTimer;
  TimeNs next_decay_ns_ = 0;
  TimeNs decay_busy_until_ns_ = 0;  // end of the last decay's modelled time
  int64_t rounds_ = 0;
  int64_t decays_ = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_TIERING_DRIVER_H_
