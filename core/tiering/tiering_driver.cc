#include "core/tiering/tiering_driver.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/base/check.h"
#include "core/tiering/promotion_pacing.h"

namespace heatsink {

DurationNs TieringCostModel::ScanNs(const RegionSummary&) const { return 0; }
DurationNs TieringCostModel::ExchangeNs(uint64_t) const { return 0; }
DurationNs TieringCostModel::DecayNs(int64_t) const { return 0; }

TieringDriver::TieringDriver(Env* env, TierManager* manager, const TieringCostModel* costs)
    : env_(env), manager_(manager), costs_(costs != nullptr ? costs : &default_costs_) {
  HS_CHECK(env != nullptr && env->executor != nullptr && manager != nullptr);
}

TieringDriver::~TieringDriver() { Stop(); }

void TieringDriver::Start() {
  HS_CHECK(!running_);
  running_ = true;
  next_decay_ns_ = env_->NowNs() + MsToNs(manager_->knobs().decay_interval_ms);
  decay_timer_ = env_->executor->PostAfter(next_decay_ns_ - env_->NowNs(), [this] {
    decay_timer_ = kNoTimer;
    OnDecayDue();
  });
  ScheduleRound(0);
}

void TieringDriver::Stop() {
  if (!running_) return;
  running_ = false;
  if (round_timer_ != kNoTimer) env_->executor->Cancel(round_timer_);
  if (decay_timer_ != kNoTimer) env_->executor->Cancel(decay_timer_);
  round_timer_ = decay_timer_ = kNoTimer;
  if (round_.has_value()) {
    round_->Finish();
    round_.reset();
  }
}

void TieringDriver::ScheduleRound(DurationNs delay_ns) {
  HS_CHECK(round_timer_ == kNoTimer);
  // Promotion does not run during a decay's modelled time.
  delay_ns = std::max({delay_ns, decay_busy_until_ns_ - env_->NowNs(), DurationNs{0}});
  round_timer_ = env_->executor->PostAfter(delay_ns, [this] {
    round_timer_ = kNoTimer;
    BeginRound();
  });
}

void TieringDriver::BeginRound() {
  absl::StatusOr<PromotionRound> round = manager_->TryBeginPromotion();
  if (!round.ok()) {
    Pace(PromotionOutcomeOfBegin(round.status()), /*retry_at_ns=*/0);
    return;
  }
  ++rounds_;
  round_.emplace(*std::move(round));
  std::vector<RegionSummary> summaries;
  DurationNs scan_ns = 0;
  for (int r = 0; r < round_->region_count(); ++r) {
    summaries.push_back(round_->ScanRegion(r));
    // Each node scans its own region in parallel: the slowest one counts.
    scan_ns = std::max(scan_ns, costs_->ScanNs(summaries.back()));
  }
  const PromotionCandidate candidate = round_->Reduce(summaries);
  if (scan_ns == 0) {
    ExchangePhase(candidate);
    return;
  }
  round_timer_ = env_->executor->PostAfter(scan_ns, [this, candidate] {
    round_timer_ = kNoTimer;
    ExchangePhase(candidate);
  });
}

void TieringDriver::ExchangePhase(PromotionCandidate candidate) {
  HS_CHECK(round_.has_value());
  PromotionResult result = round_->Exchange(candidate);
  const DurationNs exchange_ns =
      result.outcome == PromotionOutcome::kExchanged
          ? costs_->ExchangeNs(2 * manager_->geometry().block_bytes)
          : 0;
  if (exchange_ns == 0) {
    EndRound(std::move(result));
    return;
  }
  // The exchange in progress finishes (holding the gate) even if a decay
  // becomes pending meanwhile.
  round_timer_ = env_->executor->PostAfter(exchange_ns, [this, result = std::move(result)]() mutable {
    round_timer_ = kNoTimer;
    EndRound(std::move(result));
  });
}

void TieringDriver::EndRound(PromotionResult result) {
  HS_CHECK(round_.has_value());
  const bool decay_waiting = round_->Finish();
  round_.reset();
  // A decay that waited for this round goes first; the next round starts
  // after its modelled time (ScheduleRound honours decay_busy_until_ns_).
  if (decay_waiting) TryRunDecay();
  Pace(result.outcome, result.retry_at_ns);
}

void TieringDriver::Pace(PromotionOutcome outcome, TimeNs retry_at_ns) {
  const PromotionPacing next = DecidePromotionPacing({.outcome = outcome,
                                                      .retry_at_ns = retry_at_ns,
                                                      .decay_pending = manager_->decay_pending(),
                                                      .now_ns = env_->NowNs()},
                                                     manager_->knobs());
  if (pacing_observer_) pacing_observer_(outcome, next);
  switch (next.action) {
    case PacingAction::kRoundNow:
      ScheduleRound(0);
      break;
    case PacingAction::kWait:
      ScheduleRound(next.wait_ns);
      break;
    case PacingAction::kWaitForDecay:
      promotion_waits_for_decay_ = true;  // resumed by TryRunDecay
      break;
    case PacingAction::kStop:
      promotion_disabled_ = true;  // decay keeps its schedule
      break;
  }
}

void TieringDriver::OnDecayDue() {
  next_decay_ns_ += MsToNs(manager_->knobs().decay_interval_ms);
  decay_timer_ = env_->executor->PostAfter(next_decay_ns_ - env_->NowNs(), [this] {
    decay_timer_ = kNoTimer;
    OnDecayDue();
  });
  // Marked before waiting for the gate: from now on no exchange may start.
  manager_->MarkDecayPending();
  TryRunDecay();
}

void TieringDriver::TryRunDecay() {
  absl::StatusOr<DecayPass> pass = manager_->TryBeginDecay();
  if (!pass.ok()) return;  // a round holds the gate; EndRound calls back
  pass->Finish();
  ++decays_;
  decay_busy_until_ns_ = env_->NowNs() + costs_->DecayNs(manager_->key_count());
  if (promotion_waits_for_decay_ && round_timer_ == kNoTimer && !round_.has_value()) {
    promotion_waits_for_decay_ = false;
    ScheduleRound(0);
  }
}

}  // namespace heatsink
