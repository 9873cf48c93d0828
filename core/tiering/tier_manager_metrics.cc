#include "core/tiering/tier_manager_metrics.h"

#include <string>

namespace heatsink {

absl::string_view ReadPlacementName(ReadPlacement p) {
  switch (p) {
    case ReadPlacement::kLocal: return "local";
    case ReadPlacement::kForeign: return "foreign";
    case ReadPlacement::kEvicted: return "evicted";
  }
  return "unknown";
}

absl::string_view PromotionOutcomeName(PromotionOutcome o) {
  switch (o) {
    case PromotionOutcome::kExchanged: return "exchanged";
    case PromotionOutcome::kNoInversion: return "no_inversion";
    case PromotionOutcome::kStale: return "stale";
    case PromotionOutcome::kPreempted: return "preempted";
    case PromotionOutcome::kRateLimited: return "rate_limited";
    case PromotionOutcome::kBusy: return "busy";
    case PromotionOutcome::kDisabled: return "disabled";
    case PromotionOutcome::kFailed: return "failed";
  }
  return "unknown";
}

double TieringStats::LocalHitFraction() const {
  const int64_t total = reads_local + reads_foreign + reads_evicted;
  return total == 0 ? 0.0 : static_cast<double>(reads_local) / static_cast<double>(total);
}

TierManager::Metrics::Metrics(MetricsRegistry* registry) {
  if (registry == nullptr) return;
  for (int i = 0; i < kPlacements; ++i) {
    reads_total[i] = &registry->GetCounter(
        "tiering_reads_total", "completed logical reads of tiering keys, by head placement",
        {{"placement", std::string(ReadPlacementName(static_cast<ReadPlacement>(i)))}});
  }
  exchanges_total = &registry->GetCounter("tiering_exchanges_total",
                                          "block exchanges between preferred and foreign regions");
  exchange_bytes_total = &registry->GetCounter("tiering_exchange_bytes_total",
                                               "bytes moved by block exchanges (both directions)");
  decay_passes_total =
      &registry->GetCounter("tiering_decay_passes_total", "completed score decay passes");
  evictions_total = &registry->GetCounter("tiering_evictions_total", "fixed heads evicted");
  head_trades_total = &registry->GetCounter(
      "tiering_head_trades_total",
      "hot newcomers (copies with an inherited score) traded into the preferred region");
  for (int i = 0; i < kOutcomes; ++i) {
    promotion_steps_total[i] = &registry->GetCounter(
        "tiering_promotion_steps_total", "promotion attempts, by outcome",
        {{"outcome", std::string(PromotionOutcomeName(static_cast<PromotionOutcome>(i)))}});
  }
  exchange_pause_seconds = &registry->GetHistogram(
      "tiering_exchange_pause_seconds", "time an exchange holds the exclusive tier lock",
      {1e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 1e-1, 1.0});
}

void TierManager::Metrics::CountRead(ReadPlacement p) {
  const int i = static_cast<int>(p);
  reads[i].fetch_add(1, std::memory_order_relaxed);
  if (reads_total[i] != nullptr) reads_total[i]->Add();
}

void TierManager::Metrics::CountExchange(int64_t bytes, DurationNs pause_ns) {
  exchanges.fetch_add(1, std::memory_order_relaxed);
  exchange_bytes.fetch_add(bytes, std::memory_order_relaxed);
  if (exchanges_total != nullptr) exchanges_total->Add();
  if (exchange_bytes_total != nullptr) exchange_bytes_total->Add(bytes);
  if (exchange_pause_seconds != nullptr) {
    exchange_pause_seconds->Observe(static_cast<double>(pause_ns) / kNsPerSec);
  }
}

void TierManager::Metrics::CountDecayStarted() {
  decay_passes_started.fetch_add(1, std::memory_order_relaxed);
}

void TierManager::Metrics::CountDecayPass() {
  decay_passes.fetch_add(1, std::memory_order_relaxed);
  if (decay_passes_total != nullptr) decay_passes_total->Add();
}

void TierManager::Metrics::CountPromotion(PromotionOutcome o) {
  const int i = static_cast<int>(o);
  if (promotion_steps_total[i] != nullptr) promotion_steps_total[i]->Add();
}

void TierManager::Metrics::CountEviction() {
  evictions.fetch_add(1, std::memory_order_relaxed);
  if (evictions_total != nullptr) evictions_total->Add();
}

void TierManager::Metrics::CountHeadTrade() {
  head_trades.fetch_add(1, std::memory_order_relaxed);
  if (head_trades_total != nullptr) head_trades_total->Add();
}

TieringStats TierManager::Metrics::Snapshot() const {
  TieringStats s;
  s.reads_local = reads[0].load(std::memory_order_relaxed);
  s.reads_foreign = reads[1].load(std::memory_order_relaxed);
  s.reads_evicted = reads[2].load(std::memory_order_relaxed);
  s.exchanges = exchanges.load(std::memory_order_relaxed);
  s.exchange_bytes = exchange_bytes.load(std::memory_order_relaxed);
  s.decay_passes = decay_passes.load(std::memory_order_relaxed);
  s.decay_passes_started = decay_passes_started.load(std::memory_order_relaxed);
  s.promotion_rounds = promotion_rounds.load(std::memory_order_relaxed);
  s.evictions = evictions.load(std::memory_order_relaxed);
  s.head_trades = head_trades.load(std::memory_order_relaxed);
  return s;
}

}  // namespace heatsink
