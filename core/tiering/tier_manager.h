// File: core/tiering/tier_manager.h
//
// TierManager: the NUMA tiering core of one store worker (ADR-0019). It owns
// the head pool, the dense per-region score arrays, the sharded key index and
// the priority gate, and moves bytes only through a HeadMemory.
//
// Every indexed key (one --ram-head chunk of an object, DESIGN data flow 5)
// owns one logical score with exactly one numeric owner: the dense slot of its
// fixed head while resident, else the index entry. A new key starts at 0, a
// replacement keeps the score, delete + recreate starts again at 0.
//
// Locking. One tier lock (heatsink::Mutex, an absl::Mutex TSan can see):
//   - shared: reads (OpenRead/CompleteRead/AbandonRead, increments, pins),
//     ranking scans, a decay pass, lookups;
//   - exclusive: every metadata or ownership change (store commit/abort,
//     delete, eviction, block exchange).
// WriteStore and ReadBytes run without the tier lock: a reserved head belongs
// to its ticket, and a pinned head is never exchanged or freed.
// The gate is a separate small mutex, never held while taking the tier lock.
//
// Threads. Everything here is thread-safe. The core never starts a thread or
// waits: TryBeginDecay/TryBeginPromotion return UNAVAILABLE instead of
// blocking, and the caller (runtime thread, simulator event, TieringDriver)
// decides when to retry. A PromotionRound's ScanRegion may run on one worker
// thread per node concurrently; a DecayPass's DecayRegion/DecayIndexShard
// likewise.
//
// Example (one promotion step, single-threaded):
//   absl::StatusOr<PromotionResult> r = manager->PromotionStep();
//   if (r.ok() && r->outcome == PromotionOutcome::kNoInversion) wait 1 s;
#ifndef HEATSINK_CORE_TIERING_TIER_MANAGER_H_
#define HEATSINK_CORE_TIERING_TIER_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "absl/types/span.h"
#include "core/env/env.h"
#include "core/env/head_memory.h"
#include "core/metrics/metrics.h"
#include "core/tiering/head_pool.h"
#include "core/tiering/key_index.h"
#include "core/tiering/priority_gate.h"
#include "core/tiering/ranking.h"
#include "core/tiering/tiering_knobs.h"

namespace heatsink {

class TierManager;

// Where a read found the key's bytes: a head (fixed or arena) in a preferred
// region counts local, one in a foreign region foreign; an evicted head means
// the bytes come from the backing store.
enum class ReadPlacement : uint8_t { kLocal, kForeign, kEvicted };
absl::string_view ReadPlacementName(ReadPlacement p);

// One logical read of one key. The only way to add a key's increment is to
// consume its token with CompleteRead, so a read streamed in many chunks, or
// retried while waiting for an I/O buffer, still counts once. The token pins
// the head (if resident) so its bytes stay put without the tier lock.
// Move-only; destroying an active token abandons the read (no increment).
// REQUIRES: tokens do not outlive their TierManager.
class ReadToken {
 public:
  ReadToken() = default;
  ReadToken(ReadToken&& other) noexcept { *this = std::move(other); }
  ReadToken& operator=(ReadToken&& other) noexcept;
  ReadToken(const ReadToken&) = delete;
  ReadToken& operator=(const ReadToken&) = delete;
  ~ReadToken();

  bool active() const { return manager_ != nullptr; }
  const TierKey& key() const { return key_; }
  Residence residence() const { return residence_; }
  ReadPlacement placement() const { return placement_; }
  // The head-pool region the read is pinned in (-1 when evicted).
  int region() const { return region_; }
  uint64_t size_bytes() const { return size_bytes_; }

 private:
  friend class TierManager;
  TierManager* manager_ = nullptr;
  TierKey key_;
  IndexEntry* entry_ = nullptr;  // valid while incarnation_ matches
  uint64_t incarnation_ = 0;
  Residence residence_ = Residence::kEvicted;
  ReadPlacement placement_ = ReadPlacement::kEvicted;
  int region_ = -1;
  uint64_t offset_ = 0;
  uint64_t size_bytes_ = 0;
};

// One uncommitted store: a reserved fixed head or arena range that the caller
// fills with WriteStore and then commits or aborts. While it exists, its block
// is not eligible for promotion. Move-only; destroying an active ticket aborts.
// REQUIRES: tickets do not outlive their TierManager.
class StoreTicket {
 public:
  StoreTicket() = default;
  StoreTicket(StoreTicket&& other) noexcept { *this = std::move(other); }
  StoreTicket& operator=(StoreTicket&& other) noexcept;
  StoreTicket(const StoreTicket&) = delete;
  StoreTicket& operator=(const StoreTicket&) = delete;
  ~StoreTicket();

  bool active() const { return manager_ != nullptr; }
  const TierKey& key() const { return key_; }
  Residence residence() const { return residence_; }
  uint64_t size_bytes() const { return size_bytes_; }

 private:
  friend class TierManager;
  TierManager* manager_ = nullptr;
  TierKey key_;
  Residence residence_ = Residence::kFixedHead;
  int region_ = -1;
  uint64_t offset_ = 0;
  uint64_t size_bytes_ = 0;
};

// A key's state as seen under the shared lock.
struct KeyInfo {
  Residence residence = Residence::kEvicted;
  int region = -1;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  uint64_t incarnation = 0;
  double score = 0;
};

enum class PromotionOutcome : uint8_t {
  kExchanged,    // the blocks were exchanged; scan again at once
  kNoInversion,  // nothing strictly hotter abroad; the driver waits (1 s)
  kStale,        // the scanned candidate changed before the exchange; rescan
  kPreempted,    // a decay is pending; no exchange started
  kRateLimited,  // exchanges_per_second_max reached; retry at retry_at_ns
  kBusy,         // the gate is held by decay or a decay is pending
  kDisabled,     // no_numa_promotion, or no foreign head region
  kFailed,       // the memory refused the swap; nothing changed (see status)
};
absl::string_view PromotionOutcomeName(PromotionOutcome o);

struct PromotionResult {
  PromotionOutcome outcome = PromotionOutcome::kNoInversion;
  PromotionCandidate candidate;
  TimeNs retry_at_ns = 0;  // kRateLimited only
  absl::Status status;     // kFailed only
};

// Counters since creation (also exported through MetricsRegistry if given).
struct TieringStats {
  int64_t reads_local = 0;
  int64_t reads_foreign = 0;
  int64_t reads_evicted = 0;
  int64_t exchanges = 0;
  int64_t exchange_bytes = 0;
  int64_t decay_passes = 0;
  int64_t decay_passes_started = 0;
  int64_t promotion_rounds = 0;
  int64_t evictions = 0;
  int64_t head_trades = 0;  // PlaceHotNewcomer moves

  // Fraction of completed reads served from a preferred region (0 if none).
  double LocalHitFraction() const;
};

// One decay pass. Holds the gate and the shared tier lock from TryBeginDecay
// until Finish, so no ownership move (which needs the exclusive lock) can let
// a score be decayed twice or not at all. DecayRegion/DecayIndexShard may be
// called from other threads (one per node) while the pass is live; each part
// exactly once. Finish decays any part not yet done, so the whole key space is
// always traversed.
// REQUIRES: Finish (or destruction) on the thread that called TryBeginDecay,
// and that thread calls no other TierManager method while the pass is live.
class DecayPass {
 public:
  DecayPass(DecayPass&& other) noexcept;
  // Finishes this pass first if it is still live.
  DecayPass& operator=(DecayPass&& other) noexcept;
  DecayPass(const DecayPass&) = delete;
  DecayPass& operator=(const DecayPass&) = delete;
  ~DecayPass();

  int region_count() const;  // head-pool regions, each with a dense array
  int shard_count() const;   // index shards
  void DecayRegion(int region);
  void DecayIndexShard(int shard);
  void DecayAll();
  // Decays what is left, releases the tier lock and the gate, and clears the
  // pending marker.
  void Finish();

 private:
  friend class TierManager;
  explicit DecayPass(TierManager* manager);
  TierManager* manager_;
  std::unique_ptr<std::atomic<bool>[]> done_;  // regions, then shards
};

// One promotion round: holds the gate (so decay waits) for a scan of every
// head region and at most one exchange.
class PromotionRound {
 public:
  PromotionRound(PromotionRound&& other) noexcept;
  // Finishes this round first if it is still live.
  PromotionRound& operator=(PromotionRound&& other) noexcept;
  PromotionRound(const PromotionRound&) = delete;
  PromotionRound& operator=(const PromotionRound&) = delete;
  ~PromotionRound();

  int region_count() const;  // head-pool regions to scan
  // Scans one head region under the shared tier lock. Thread-safe: the
  // runtime runs one per node on that node's worker.
  RegionSummary ScanRegion(int region) const;
  // Reduces summaries with the configured hysteresis factor.
  PromotionCandidate Reduce(absl::Span<const RegionSummary> summaries) const;
  // Exchanges the candidate's blocks if they are still eligible, still
  // inverted, allowed by the rate cap, and no decay is pending.
  PromotionResult Exchange(const PromotionCandidate& candidate);
  // Releases the gate. Returns true if a decay is waiting for it.
  bool Finish();

 private:
  friend class TierManager;
  explicit PromotionRound(TierManager* manager) : manager_(manager) {}
  TierManager* manager_;
};

class TierManager {
 public:
  // `memory` must have exactly the regions PlanRegions(knobs) lists.
  // `metrics` may be null. `env`, `memory` and `metrics` must outlive the
  // manager. INVALID_ARGUMENT for bad knobs or a mismatched memory.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TierManager>> Create(
      Env* env, const TieringKnobs& knobs, HeadMemory* memory, MetricsRegistry* metrics = nullptr);
  TierManager(const TierManager&) = delete;
  TierManager& operator=(const TierManager&) = delete;
  ~TierManager();

  const TieringKnobs& knobs() const { return knobs_; }
  const PoolGeometry& geometry() const { return pool_.geometry(); }
  const std::vector<RegionSpec>& regions() const { return pool_.plan(); }
  int head_region_count() const { return pool_.head_region_count(); }
  // The dense score array of a head region (its storage is what the runtime
  // places on the region's node). REQUIRES: 0 <= region < head_region_count().
  const DenseScoreArray& dense_scores(int region) const { return pool_.scores(region); }

  // ---- Stores. A value of exactly ram_head bytes takes a fixed head
  // (preferred region first); a smaller one goes to the arena; a larger one is
  // INVALID_ARGUMENT (the worker stores chunks). RESOURCE_EXHAUSTED when the
  // pool or stores_in_flight_max is full.
  [[nodiscard]] absl::StatusOr<StoreTicket> BeginStore(const TierKey& key, uint64_t size_bytes);
  [[nodiscard]] absl::Status WriteStore(const StoreTicket& ticket, uint64_t offset,
                                        absl::Span<const uint8_t> bytes);
  // Publishes the value. A key already indexed (resident, arena or evicted)
  // keeps its score, which moves to the new owner; its old head is freed, or
  // orphaned until its readers unpin. RESOURCE_EXHAUSTED at index_keys_max
  // (the ticket is then aborted).
  [[nodiscard]] absl::Status CommitStore(StoreTicket&& ticket);
  void AbortStore(StoreTicket&& ticket);
  // BeginStore + WriteStore + CommitStore.
  [[nodiscard]] absl::Status Put(const TierKey& key, absl::Span<const uint8_t> bytes);

  // Removes the key and discards its score. NOT_FOUND if absent.
  [[nodiscard]] absl::Status Delete(const TierKey& key);
  // Evicts a resident fixed head: the score moves into the index entry and
  // the slot is freed (orphaned while pinned). The key stays indexed as
  // disk-backed. NOT_FOUND if absent; FAILED_PRECONDITION if not resident in a
  // fixed head (arena objects are RAM-only).
  [[nodiscard]] absl::Status EvictHead(const TierKey& key);

  // ---- Reads.
  [[nodiscard]] absl::StatusOr<ReadToken> OpenRead(const TierKey& key);
  // The same, with nullopt (and no error message built) for a key that is
  // not indexed: for callers to which an unindexed key is an ordinary case.
  [[nodiscard]] std::optional<ReadToken> OpenReadIfIndexed(const TierKey& key);
  // Copies head bytes [offset, offset + out.size()) of the read; may be
  // called any number of times. FAILED_PRECONDITION for an evicted head
  // (read the backing store); OUT_OF_RANGE past the value.
  [[nodiscard]] absl::Status ReadBytes(const ReadToken& token, uint64_t offset,
                                       absl::Span<uint8_t> out) const;
  // The read succeeded: unpin and add `increment` exactly once to the key's
  // current score owner, unless the key was deleted (or deleted and recreated)
  // since OpenRead. REQUIRES: token.active().
  void CompleteRead(ReadToken&& token);
  // The read failed: unpin, no increment. REQUIRES: token.active().
  void AbandonRead(ReadToken&& token);

  // Score inheritance (a replica copy carries its source's decayed score):
  // raises the key's score to at least `score`, never lowers it.
  // The rule, in both worlds: once a copy has landed, each target key it
  // covers takes max(its own score, the source's current decayed score of
  // the same bytes); a target key whose bytes come from several source keys
  // takes the largest of them, and a source without scores passes nothing
  // (0, no change). Nothing is inherited from a copy that failed. In the
  // store runtime the keys are address ranges and the scores travel with the
  // copy's bytes (runtime/numa/segment_head_pool.h, runtime/transport/wire.h).
  // INVALID_ARGUMENT unless `score` is finite and >= 0; NOT_FOUND if the key
  // is not indexed. Counts no read.
  [[nodiscard]] absl::Status RaiseScore(const TierKey& key, double score);

  // Newcomer placement (beyond the ADR, for copies that inherit a score): a
  // fixed head in a foreign region, in a block promotion cannot move (not
  // complete), trades places with a published, unpinned head of the
  // preferred region that is strictly colder than it: the coldest such head
  // of the hottest preferred block that has one (hot heads gather in hot
  // blocks, so whole-block promotion keeps finding pure blocks), and only
  // when the newcomer is also hotter than the mean head of the coldest
  // eligible preferred block (the block promotion would move out next) -- bytes (HeadMemory::Swap of the two head ranges), slot owners,
  // dense scores and both index locations -- so a hot newcomer lands local
  // while every block keeps its occupancy (and its eligibility). Returns true
  // when the heads traded; false when the key is not a foreign fixed head,
  // sits in a complete block (promotion ranks it with its block), is pinned,
  // no preferred head is colder, it is not above that mean, or a decay is
  // pending. NOT_FOUND
  // if not indexed; the memory's error if the swap failed (nothing changed).
  // Scans the preferred region's dense scores once (O(its heads)).
  [[nodiscard]] absl::StatusOr<bool> PlaceHotNewcomer(const TierKey& key);

  std::optional<KeyInfo> Lookup(const TierKey& key) const;
  // NOT_FOUND if absent.
  [[nodiscard]] absl::StatusOr<double> Score(const TierKey& key) const;
  int64_t key_count() const { return index_.size(); }

  // ---- Decay (see PriorityGate for the protocol).
  void MarkDecayPending();
  // FAILED_PRECONDITION if no decay is pending; UNAVAILABLE while a
  // promotion round holds the gate (retry after it finishes).
  [[nodiscard]] absl::StatusOr<DecayPass> TryBeginDecay();
  // MarkDecayPending + TryBeginDecay + DecayAll + Finish, for single-threaded
  // drivers. UNAVAILABLE (pending stays marked) while a round holds the gate.
  [[nodiscard]] absl::Status RunDecayPass();

  // ---- Promotion.
  // FAILED_PRECONDITION when promotion is disabled (no_numa_promotion, or no
  // foreign head region); UNAVAILABLE while decay is pending or holds the gate.
  [[nodiscard]] absl::StatusOr<PromotionRound> TryBeginPromotion();
  // One whole round (scan every region, reduce, exchange, finish) on this
  // thread. Outcomes kBusy/kDisabled when the round cannot begin.
  PromotionResult PromotionStep();

  // Every head region's summary, scanned now under the shared lock and
  // outside any round (for reports: the gate, the rate cap and decay are not
  // involved, nothing changes). Region order.
  std::vector<RegionSummary> ScanRegions() const;

  bool decay_pending() const;
  PriorityGate::Holder gate_holder() const;

  TieringStats stats() const;

  // Pool, dense arrays, index and location fields agree; every score has
  // exactly one owner. Takes the exclusive lock.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  friend class DecayPass;
  friend class PromotionRound;
  friend class ReadToken;
  friend class StoreTicket;

  struct Metrics;
  TierManager(Env* env, const TieringKnobs& knobs, HeadMemory* memory, MetricsRegistry* metrics);

  // Moves `entry`'s score out of its current owner and frees that owner's
  // bytes (or orphans them while pinned). Returns the score.
  double TakeScoreAndRelease(IndexEntry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AbortStoreLocked(StoreTicket& ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishRead(ReadToken& token, bool success);
  PromotionResult ExchangeBlocks(const PromotionCandidate& candidate);
  void EndDecayPass(DecayPass& pass);
  bool EndPromotionRound();
  void CountPromotion(PromotionOutcome outcome);

  Env* const env_;
  const TieringKnobs knobs_;
  HeadMemory* const memory_;

  // The tier lock (see the file comment).
  mutable Mutex mu_;
  HeadPool pool_;    // mutations guarded by mu_ (exclusive)
  KeyIndex index_;   // structure mutated under mu_ (exclusive)
  uint64_t next_incarnation_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t stores_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<TimeNs> recent_exchanges_ns_ ABSL_GUARDED_BY(mu_);  // rate cap window

  mutable Mutex gate_mu_;
  PriorityGate gate_ ABSL_GUARDED_BY(gate_mu_);

  std::unique_ptr<Metrics> metrics_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_TIER_MANAGER_H_
