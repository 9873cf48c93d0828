// File: core/tiering/tier_manager_metrics.h
//
// Internal to TierManager: its counters, kept as atomics (for stats()) and
// mirrored into an optional MetricsRegistry. Label values are fixed words
// (placements, outcomes), so cardinality is bounded.
#ifndef HEATSINK_CORE_TIERING_TIER_MANAGER_METRICS_H_
#define HEATSINK_CORE_TIERING_TIER_MANAGER_METRICS_H_

#include <atomic>
#include <cstdint>

#include "core/metrics/metrics.h"
#include "core/tiering/tier_manager.h"

namespace heatsink {

struct TierManager::Metrics {
  static constexpr int kPlacements = 3;
  static constexpr int kOutcomes = 8;

  explicit Metrics(MetricsRegistry* registry);

  void CountRead(ReadPlacement p);
  void CountExchange(int64_t bytes, DurationNs pause_ns);
  void CountDecayStarted();
  void CountDecayPass();
  void CountPromotion(PromotionOutcome o);
  void CountEviction();
  void CountHeadTrade();
  TieringStats Snapshot() const;

  std::atomic<int64_t> reads[kPlacements] = {};
  std::atomic<int64_t> exchanges{0};
  std::atomic<int64_t> exchange_bytes{0};
  std::atomic<int64_t> decay_passes{0};
  std::atomic<int64_t> decay_passes_started{0};
  std::atomic<int64_t> promotion_rounds{0};
  std::atomic<int64_t> evictions{0};
  std::atomic<int64_t> head_trades{0};

  // Registry mirrors; null without a registry.
  Counter* reads_total[kPlacements] = {};
  Counter* exchanges_total = nullptr;
  Counter* exchange_bytes_total = nullptr;
  Counter* decay_passes_total = nullptr;
  Counter* evictions_total = nullptr;
  Counter* head_trades_total = nullptr;
  Counter* promotion_steps_total[kOutcomes] = {};
  Histogram* exchange_pause_seconds = nullptr;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_TIER_MANAGER_METRICS_H_
