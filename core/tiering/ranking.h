// File: core/tiering/ranking.h
//
// Block ranking (ADR-0019). Each per-node worker scans its own region's dense
// score array, sums the fixed-head scores of every eligible block, and reduces
// them to one directional extremum: the coldest eligible block of the
// preferred region, the hottest eligible block of a foreign region. The
// coordinator reduces those summaries to one promotion candidate. Only the
// summaries cross nodes, never the O(N) arrays.
//
// Ties are broken by (region, block index), lowest first, so the choice never
// depends on scan timing or thread interleaving.
//
// Thread safety: ScanRegion REQUIRES the shared (or exclusive) tier lock; it
// reads scores with relaxed scalar atomic loads, so concurrent increments give
// a defined but possibly slightly stale sum. The exchange re-validates.
#ifndef HEATSINK_CORE_TIERING_RANKING_H_
#define HEATSINK_CORE_TIERING_RANKING_H_

#include <cstdint>

#include "absl/types/span.h"
#include "core/tiering/head_pool.h"

namespace heatsink {

struct BlockScore {
  int region = -1;  // -1: none
  uint64_t block = 0;
  double score = 0;
  bool valid() const { return region >= 0; }
};

struct RegionSummary {
  int region = -1;
  bool preferred = false;
  uint64_t blocks_scanned = 0;
  uint64_t blocks_eligible = 0;
  // Preferred region: its coldest eligible block. Foreign region: its hottest.
  // Invalid when the region has no eligible block.
  BlockScore extremum;
};

struct PromotionCandidate {
  BlockScore coldest_preferred;
  BlockScore hottest_foreign;
  // hottest_foreign.score > coldest_preferred.score * hysteresis_factor (the
  // ADR's strict comparison when the factor is 1.0), both valid.
  bool inversion = false;
};

// True when `hotter` wins the "hottest" order over `other`: a larger score,
// or an equal score at a smaller (region, block).
bool HotterThan(const BlockScore& hotter, const BlockScore& other);
// True when `colder` wins the "coldest" order: a smaller score, or an equal
// score at a smaller (region, block).
bool ColderThan(const BlockScore& colder, const BlockScore& other);

// The strict promotion comparison with the optional hysteresis factor.
inline bool IsInversion(double foreign_score, double preferred_score, double hysteresis_factor) {
  return foreign_score > preferred_score * hysteresis_factor;
}

// Sum of a block's dense scores, in slot order.
double BlockScoreSum(const HeadPool& pool, int region, uint64_t block);

// Scans one head-pool region. REQUIRES: region < pool.head_region_count().
RegionSummary ScanRegion(const HeadPool& pool, int region);

// Reduces per-region summaries (any order) to the promotion candidate.
PromotionCandidate ReduceSummaries(absl::Span<const RegionSummary> summaries,
                                   double hysteresis_factor);

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_RANKING_H_
