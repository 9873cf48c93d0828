#include "core/tiering/ranking.h"

#include <tuple>

#include "core/base/check.h"

namespace heatsink {

bool HotterThan(const BlockScore& hotter, const BlockScore& other) {
  if (!other.valid()) return hotter.valid();
  if (!hotter.valid()) return false;
  if (hotter.score != other.score) return hotter.score > other.score;
  return std::tie(hotter.region, hotter.block) < std::tie(other.region, other.block);
}

bool ColderThan(const BlockScore& colder, const BlockScore& other) {
  if (!other.valid()) return colder.valid();
  if (!colder.valid()) return false;
  if (colder.score != other.score) return colder.score < other.score;
  return std::tie(colder.region, colder.block) < std::tie(other.region, other.block);
}

double BlockScoreSum(const HeadPool& pool, int region, uint64_t block) {
  const PoolGeometry& g = pool.geometry();
  const uint64_t first = g.SlotOf(block, 0);
  return pool.scores(region).Sum(first, first + g.heads_per_block);
}

RegionSummary ScanRegion(const HeadPool& pool, int region) {
  HS_CHECK(region >= 0 && region < pool.head_region_count());
  RegionSummary summary;
  summary.region = region;
  summary.preferred = pool.spec(region).preferred;
  const uint64_t blocks = pool.block_count(region);
  summary.blocks_scanned = blocks;
  for (uint64_t block = 0; block < blocks; ++block) {
    if (!pool.BlockEligible(region, block)) continue;
    ++summary.blocks_eligible;
    const BlockScore candidate{region, block, BlockScoreSum(pool, region, block)};
    const bool better = summary.preferred ? ColderThan(candidate, summary.extremum)
                                          : HotterThan(candidate, summary.extremum);
    if (better) summary.extremum = candidate;
  }
  return summary;
}

PromotionCandidate ReduceSummaries(absl::Span<const RegionSummary> summaries,
                                   double hysteresis_factor) {
  PromotionCandidate c;
  for (const RegionSummary& s : summaries) {
    if (s.preferred) {
      if (ColderThan(s.extremum, c.coldest_preferred)) c.coldest_preferred = s.extremum;
    } else if (HotterThan(s.extremum, c.hottest_foreign)) {
      c.hottest_foreign = s.extremum;
    }
  }
  c.inversion = c.coldest_preferred.valid() && c.hottest_foreign.valid() &&
                IsInversion(c.hottest_foreign.score, c.coldest_preferred.score,
                            hysteresis_factor);
  return c;
}

}  // namespace heatsink
