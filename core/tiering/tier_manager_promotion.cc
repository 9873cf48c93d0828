// TierManager: the decay pass, promotion rounds and the block exchange.
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/tiering/promotion_pacing.h"
#include "core/tiering/score.h"
#include "core/tiering/tier_manager.h"
#include "core/tiering/tier_manager_metrics.h"

namespace heatsink {

// ---- Gate accessors.

void TierManager::MarkDecayPending() {
  MutexLock lock(&gate_mu_);
  gate_.MarkDecayPending();
}

bool TierManager::decay_pending() const {
  MutexLock lock(&gate_mu_);
  return gate_.decay_pending();
}

PriorityGate::Holder TierManager::gate_holder() const {
  MutexLock lock(&gate_mu_);
  return gate_.holder();
}

// ---- Decay.

DecayPass::DecayPass(TierManager* manager) : manager_(manager) {
  const int parts = manager->pool_.head_region_count() + manager->index_.shard_count();
  done_ = std::make_unique<std::atomic<bool>[]>(parts);
  for (int i = 0; i < parts; ++i) done_[i].store(false, std::memory_order_relaxed);
}

DecayPass::DecayPass(DecayPass&& other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)), done_(std::move(other.done_)) {}

DecayPass& DecayPass::operator=(DecayPass&& other) noexcept {
  if (this == &other) return *this;
  if (manager_ != nullptr) Finish();
  manager_ = std::exchange(other.manager_, nullptr);
  done_ = std::move(other.done_);
  return *this;
}

DecayPass::~DecayPass() {
  if (manager_ != nullptr) Finish();
}

int DecayPass::region_count() const { return manager_->pool_.head_region_count(); }
int DecayPass::shard_count() const { return manager_->index_.shard_count(); }

void DecayPass::DecayRegion(int region) {
  HS_CHECK(manager_ != nullptr && region >= 0 && region < region_count());
  HS_CHECK_MSG(!done_[region].exchange(true, std::memory_order_relaxed),
               "a region decayed twice in one pass");
  DenseScoreArray& scores = manager_->pool_.scores(region);
  scores.Scale(0, scores.size(), manager_->knobs_.decay);
}

void DecayPass::DecayIndexShard(int shard) {
  HS_CHECK(manager_ != nullptr && shard >= 0 && shard < shard_count());
  HS_CHECK_MSG(!done_[region_count() + shard].exchange(true, std::memory_order_relaxed),
               "an index shard decayed twice in one pass");
  manager_->index_.DecayShard(shard, manager_->knobs_.decay);
}

void DecayPass::DecayAll() {
  HS_CHECK(manager_ != nullptr);
  for (int r = 0; r < region_count(); ++r) {
    if (!done_[r].load(std::memory_order_relaxed)) DecayRegion(r);
  }
  for (int s = 0; s < shard_count(); ++s) {
    if (!done_[region_count() + s].load(std::memory_order_relaxed)) DecayIndexShard(s);
  }
}

void DecayPass::Finish() {
  HS_CHECK_MSG(manager_ != nullptr, "decay pass already finished");
  DecayAll();
  manager_->EndDecayPass(*this);
  manager_ = nullptr;
}

// The reader lock on mu_ is held from a successful TryBeginDecay to
// EndDecayPass, across calls: the analysis cannot follow a lock taken only
// when the result is OK, so it is off for these two.
absl::StatusOr<DecayPass> TierManager::TryBeginDecay() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  {
    MutexLock lock(&gate_mu_);
    if (!gate_.decay_pending()) {
      return absl::FailedPreconditionError("no decay pending: call MarkDecayPending first");
    }
    if (!gate_.TryAcquireForDecay()) {
      return absl::UnavailableError("a promotion round holds the gate; retry when it finishes");
    }
  }
  // Held until Finish: ownership moves need the exclusive lock, so none can
  // carry a score between a decayed and an undecayed owner mid-pass.
  mu_.ReaderLock();
  metrics_->CountDecayStarted();
  return DecayPass(this);
}

void TierManager::EndDecayPass(DecayPass&) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  mu_.ReaderUnlock();
  {
    MutexLock lock(&gate_mu_);
    gate_.ReleaseDecay();
  }
  metrics_->CountDecayPass();
}

absl::Status TierManager::RunDecayPass() {
  MarkDecayPending();
  absl::StatusOr<DecayPass> pass = TryBeginDecay();
  if (!pass.ok()) return pass.status();
  pass->Finish();
  return absl::OkStatus();
}

// ---- Promotion.

PromotionRound::PromotionRound(PromotionRound&& other) noexcept
    : manager_(std::exchange(other.manager_, nullptr)) {}

PromotionRound& PromotionRound::operator=(PromotionRound&& other) noexcept {
  if (this == &other) return *this;
  if (manager_ != nullptr) Finish();
  manager_ = std::exchange(other.manager_, nullptr);
  return *this;
}

PromotionRound::~PromotionRound() {
  if (manager_ != nullptr) Finish();
}

int PromotionRound::region_count() const { return manager_->pool_.head_region_count(); }

absl::StatusOr<bool> TierManager::PlaceHotNewcomer(const TierKey& key) {
  MutexLock lock(&mu_);
  IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  if (entry->residence != Residence::kFixedHead || pool_.spec(entry->region).preferred) {
    return false;
  }
  const HeadLoc newcomer{entry->region, entry->offset};
  if (pool_.head_pins(newcomer) != 0) return false;
  // A newcomer in a complete block is ranked with its block by promotion.
  if (pool_.BlockEligible(newcomer.region, geometry().BlockOfOffset(newcomer.offset))) {
    return false;
  }
  const double score = pool_.scores(newcomer.region).Load(geometry().SlotOfOffset(newcomer.offset));
  // One pass over the preferred region finds both
  //   - the head to trade with: a published, unpinned head colder than the
  //     newcomer, in the hottest block that has one (hot heads gather in hot
  //     blocks, so whole-block promotion keeps finding pure blocks), the
  //     coldest head of that block, ties to the lowest slot;
  //   - the coldest eligible block, the one whole-block promotion would move
  //     out next: only a newcomer hotter than its mean head trades, so that a
  //     trade never brings in what promotion would soon send away.
  const int preferred = 0;
  HS_CHECK(pool_.spec(preferred).preferred);
  const DenseScoreArray& local_scores = pool_.scores(preferred);
  const uint64_t heads_per_block = geometry().heads_per_block;
  std::optional<HeadLoc> chosen;
  double chosen_block_score = 0;
  std::optional<double> coldest_eligible_score;
  for (uint64_t block = 0; block < pool_.block_count(preferred); ++block) {
    const double block_score = BlockScoreSum(pool_, preferred, block);
    if (pool_.BlockEligible(preferred, block) &&
        (!coldest_eligible_score.has_value() || block_score < *coldest_eligible_score)) {
      coldest_eligible_score = block_score;
    }
    const uint64_t first = geometry().SlotOf(block, 0);
    std::optional<uint64_t> coldest;
    for (uint64_t s = first; s < first + heads_per_block; ++s) {
      const HeadLoc loc{preferred, geometry().OffsetOfSlot(s)};
      if (pool_.state(loc) != SlotState::kPublished || pool_.head_pins(loc) != 0) continue;
      if (!(local_scores.Load(s) < score)) continue;
      if (!coldest.has_value() || local_scores.Load(s) < local_scores.Load(*coldest)) coldest = s;
    }
    if (coldest.has_value() && (!chosen.has_value() || block_score > chosen_block_score)) {
      chosen = HeadLoc{preferred, geometry().OffsetOfSlot(*coldest)};
      chosen_block_score = block_score;
    }
  }
  if (!chosen.has_value()) return false;
  if (coldest_eligible_score.has_value() &&
      !(score > *coldest_eligible_score / static_cast<double>(heads_per_block))) {
    return false;
  }
  {
    // Decay waits for the exclusive lock held here, so the two scores are of
    // the same pass; a pending decay still goes first.
    MutexLock gate_lock(&gate_mu_);
    if (gate_.decay_pending()) return false;
  }
  const uint64_t head = geometry().head_bytes;
  HS_RETURN_IF_ERROR(memory_->Swap(MemoryRange{newcomer.region, newcomer.offset, head},
                                   MemoryRange{chosen->region, chosen->offset, head}));
  pool_.ExchangeHeadMetadata(newcomer, *chosen);
  for (const HeadLoc& loc : {newcomer, *chosen}) {
    IndexEntry* owner = pool_.owner(loc);
    HS_CHECK(owner != nullptr);
    owner->region = loc.region;
    owner->offset = loc.offset;
  }
  metrics_->CountHeadTrade();
  return true;
}

std::vector<RegionSummary> TierManager::ScanRegions() const {
  ReaderMutexLock lock(&mu_);
  std::vector<RegionSummary> out;
  out.reserve(static_cast<size_t>(pool_.head_region_count()));
  for (int r = 0; r < pool_.head_region_count(); ++r) out.push_back(heatsink::ScanRegion(pool_, r));
  return out;
}

RegionSummary PromotionRound::ScanRegion(int region) const {
  HS_CHECK(manager_ != nullptr);
  ReaderMutexLock lock(&manager_->mu_);
  return heatsink::ScanRegion(manager_->pool_, region);
}

PromotionCandidate PromotionRound::Reduce(absl::Span<const RegionSummary> summaries) const {
  HS_CHECK(manager_ != nullptr);
  return ReduceSummaries(summaries, manager_->knobs_.promotion_hysteresis_factor);
}

PromotionResult PromotionRound::Exchange(const PromotionCandidate& candidate) {
  HS_CHECK(manager_ != nullptr);
  return manager_->ExchangeBlocks(candidate);
}

bool PromotionRound::Finish() {
  HS_CHECK_MSG(manager_ != nullptr, "promotion round already finished");
  const bool decay_waiting = manager_->EndPromotionRound();
  manager_ = nullptr;
  return decay_waiting;
}

bool TierManager::EndPromotionRound() {
  metrics_->promotion_rounds.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&gate_mu_);
  return gate_.ReleasePromotion();
}

void TierManager::CountPromotion(PromotionOutcome outcome) { metrics_->CountPromotion(outcome); }

absl::StatusOr<PromotionRound> TierManager::TryBeginPromotion() {
  if (knobs_.no_numa_promotion) {
    return absl::FailedPreconditionError("NUMA promotion disabled (no_numa_promotion)");
  }
  if (pool_.head_region_count() < 2) {
    return absl::FailedPreconditionError("NUMA promotion has no foreign head region");
  }
  MutexLock lock(&gate_mu_);
  if (!gate_.TryAcquireForPromotion()) {
    return absl::UnavailableError(
        gate_.decay_pending() ? "decay pending" : "the gate is held by a decay pass");
  }
  return PromotionRound(this);
}

PromotionResult TierManager::PromotionStep() {
  absl::StatusOr<PromotionRound> round = TryBeginPromotion();
  if (!round.ok()) {
    PromotionResult result;
    result.outcome = PromotionOutcomeOfBegin(round.status());
    CountPromotion(result.outcome);
    return result;
  }
  std::vector<RegionSummary> summaries;
  summaries.reserve(round->region_count());
  for (int r = 0; r < round->region_count(); ++r) summaries.push_back(round->ScanRegion(r));
  PromotionResult result = round->Exchange(round->Reduce(summaries));
  round->Finish();
  return result;
}

PromotionResult TierManager::ExchangeBlocks(const PromotionCandidate& candidate) {
  PromotionResult result;
  result.candidate = candidate;
  auto done = [&](PromotionOutcome outcome) {
    result.outcome = outcome;
    CountPromotion(outcome);
    return result;
  };
  if (!candidate.inversion) return done(PromotionOutcome::kNoInversion);
  const BlockScore local = candidate.coldest_preferred;
  const BlockScore remote = candidate.hottest_foreign;
  HS_CHECK(local.region >= 0 && local.region < pool_.head_region_count() &&
           pool_.spec(local.region).preferred);
  HS_CHECK(remote.region >= 0 && remote.region < pool_.head_region_count() &&
           !pool_.spec(remote.region).preferred);

  MutexLock lock(&mu_);
  pool_.Reclaim();
  // The scan ran under the shared lock; pins, stores and evictions may have
  // changed either block since. Re-check everything under the exclusive lock.
  if (!pool_.BlockEligible(local.region, local.block) ||
      !pool_.BlockEligible(remote.region, remote.block)) {
    return done(PromotionOutcome::kStale);
  }
  result.candidate.coldest_preferred.score = BlockScoreSum(pool_, local.region, local.block);
  result.candidate.hottest_foreign.score = BlockScoreSum(pool_, remote.region, remote.block);
  if (!IsInversion(result.candidate.hottest_foreign.score,
                   result.candidate.coldest_preferred.score,
                   knobs_.promotion_hysteresis_factor)) {
    result.candidate.inversion = false;
    return done(PromotionOutcome::kStale);
  }
  const TimeNs now = env_->NowNs();
  if (knobs_.exchanges_per_second_max > 0) {
    while (!recent_exchanges_ns_.empty() && recent_exchanges_ns_.front() <= now - kNsPerSec) {
      recent_exchanges_ns_.pop_front();
    }
    if (static_cast<int64_t>(recent_exchanges_ns_.size()) >= knobs_.exchanges_per_second_max) {
      result.retry_at_ns = recent_exchanges_ns_.front() + kNsPerSec;
      return done(PromotionOutcome::kRateLimited);
    }
  }
  {
    MutexLock gate_lock(&gate_mu_);
    // No new exchange may start once a decay is pending.
    if (!gate_.TryStartExchange()) return done(PromotionOutcome::kPreempted);
  }
  const uint64_t block_bytes = geometry().block_bytes;
  const absl::Status swapped =
      memory_->Swap(MemoryRange{local.region, local.block * block_bytes, block_bytes},
                    MemoryRange{remote.region, remote.block * block_bytes, block_bytes});
  if (swapped.ok()) {
    pool_.ExchangeBlockMetadata(local.region, local.block, remote.region, remote.block);
    // Every affected head location follows its bytes, so each score keeps
    // following its key.
    for (uint64_t h = 0; h < geometry().heads_per_block; ++h) {
      for (const BlockScore* b : {&local, &remote}) {
        const HeadLoc loc{b->region, geometry().OffsetOfSlot(geometry().SlotOf(b->block, h))};
        IndexEntry* owner = pool_.owner(loc);
        HS_CHECK(owner != nullptr);
        owner->region = loc.region;
        owner->offset = loc.offset;
      }
    }
    if (knobs_.exchanges_per_second_max > 0) recent_exchanges_ns_.push_back(now);
  }
  {
    MutexLock gate_lock(&gate_mu_);
    gate_.FinishExchange();
  }
  if (!swapped.ok()) {
    result.status = swapped;
    return done(PromotionOutcome::kFailed);
  }
  metrics_->CountExchange(static_cast<int64_t>(2 * block_bytes), env_->NowNs() - now);
  return done(PromotionOutcome::kExchanged);
}

}  // namespace heatsink
