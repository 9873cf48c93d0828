// File: core/tiering/head_pool.h
//
// The ADR-0019 head pool: regions (one preferred region on the serving node,
// foreign regions on other nodes), each a buddy allocator of power-of-two
// ranges up to one block, with
//   - fixed heads of --ram-head bytes in minimum-size buddy slots, each with a
//     dense score slot derived from (block, head offset) and per-slot metadata
//     (state, owning index entry, pin count);
//   - a compact small-object arena: whole blocks bump-allocated in 8-byte
//     units, never promoted, returned to the buddy allocator once empty;
//   - optionally a dedicated small-object pool (its own regions, arena only)
//     that is outside the promotion scan.
//
// Slot states: free -> reserved (an uncommitted store) -> published (indexed,
// owns its dense score) -> free, or -> orphaned when released while pinned by
// a reader (freed by Reclaim once unpinned).
//
// An eligible block (what promotion may move) is a head block whose every
// slot is published and unpinned: completely occupied, index entries covering
// the whole footprint, no uncommitted store, no orphaned or pinned head. Arena
// blocks are never eligible.
//
// Thread safety: mutations REQUIRE TierManager's exclusive tier lock. Pins,
// BlockEligible and the dense score arrays may be used under the shared tier
// lock (pins and scores are atomics; everything else they read only changes
// under the exclusive lock).
#ifndef HEATSINK_CORE_TIERING_HEAD_POOL_H_
#define HEATSINK_CORE_TIERING_HEAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tiering/buddy_allocator.h"
#include "core/tiering/dense_scores.h"
#include "core/tiering/tiering_knobs.h"

namespace heatsink {

struct IndexEntry;

// Fixed-head slot arithmetic of one pool. A head's slot in its region's dense
// array is its byte offset / head_bytes = block * heads_per_block + head.
struct PoolGeometry {
  uint64_t block_bytes = 0;
  uint64_t head_bytes = 0;
  uint64_t heads_per_block = 0;

  uint64_t SlotOfOffset(uint64_t offset) const { return offset / head_bytes; }
  uint64_t OffsetOfSlot(uint64_t slot) const { return slot * head_bytes; }
  uint64_t SlotOf(uint64_t block, uint64_t head) const { return block * heads_per_block + head; }
  uint64_t BlockOfSlot(uint64_t slot) const { return slot / heads_per_block; }
  uint64_t HeadInBlock(uint64_t slot) const { return slot % heads_per_block; }
  uint64_t BlockOfOffset(uint64_t offset) const { return offset / block_bytes; }
};

enum class SlotState : uint8_t { kFree, kReserved, kPublished, kOrphaned };
enum class BlockUse : uint8_t { kFree, kHeads, kArena };

// Where a fixed head sits: region and byte offset (a multiple of head_bytes).
struct HeadLoc {
  int region = -1;
  uint64_t offset = 0;
  friend bool operator==(const HeadLoc&, const HeadLoc&) = default;
};

// Where an arena object sits.
struct ArenaLoc {
  int region = -1;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
};

class HeadPool {
 public:
  // REQUIRES: knobs.Validate() is OK.
  explicit HeadPool(const TieringKnobs& knobs);
  HeadPool(const HeadPool&) = delete;
  HeadPool& operator=(const HeadPool&) = delete;

  const PoolGeometry& geometry() const { return geometry_; }
  int region_count() const { return static_cast<int>(regions_.size()); }
  // Head-pool regions are 0 .. head_region_count()-1; region 0 is preferred.
  int head_region_count() const { return head_region_count_; }
  const RegionSpec& spec(int region) const { return regions_[region].spec; }
  const std::vector<RegionSpec>& plan() const { return plan_; }
  uint64_t block_count(int region) const { return regions_[region].allocator->block_count(); }
  // The dense score array of a head-pool region.
  DenseScoreArray& scores(int region);
  const DenseScoreArray& scores(int region) const;

  // ---- Fixed heads (exclusive tier lock).
  // A free slot, preferred region first, then foreign regions in order.
  // RESOURCE_EXHAUSTED when every head region is full.
  [[nodiscard]] absl::StatusOr<HeadLoc> ReserveHead();
  // reserved -> published, owned by `owner`.
  void PublishHead(const HeadLoc& loc, IndexEntry* owner);
  // reserved -> free.
  void CancelHead(const HeadLoc& loc);
  // published -> free, or -> orphaned while pinned. The caller has already
  // extracted the slot's score.
  void ReleaseHead(const HeadLoc& loc);
  SlotState state(const HeadLoc& loc) const;
  IndexEntry* owner(const HeadLoc& loc) const;

  // ---- Arena (exclusive tier lock).
  // Space for a small object: small-pool regions if configured, else head
  // regions; local region first. RESOURCE_EXHAUSTED when none has room.
  [[nodiscard]] absl::StatusOr<ArenaLoc> AllocateArena(uint64_t size_bytes);
  void ReleaseArena(const ArenaLoc& loc);

  // ---- Pins (shared tier lock is enough). A pinned head or arena block is
  // never exchanged or freed; zero-copy readers hold a pin while they read.
  void PinHead(const HeadLoc& loc);
  void UnpinHead(const HeadLoc& loc);
  void PinArena(int region, uint64_t offset);
  void UnpinArena(int region, uint64_t offset);
  uint32_t head_pins(const HeadLoc& loc) const;

  // Frees orphaned heads and empty arena blocks whose pins have dropped to
  // zero (exclusive tier lock). Returns how many were freed.
  int Reclaim();

  // ---- Ranking inputs (shared tier lock).
  bool BlockEligible(int region, uint64_t block) const;
  BlockUse block_use(int region, uint64_t block) const;

  // Exchanges everything but the bytes between two blocks of head regions:
  // buddy metadata, slot and block metadata, and the dense score slices.
  // REQUIRES: exclusive tier lock; both blocks eligible.
  void ExchangeBlockMetadata(int region_a, uint64_t block_a, int region_b, uint64_t block_b);

  // Exchanges two published, unpinned fixed heads in different regions:
  // owners and dense scores (states and block counts stay). The caller
  // swaps the bytes and rewrites both owners' locations.
  // REQUIRES: exclusive tier lock.
  void ExchangeHeadMetadata(const HeadLoc& a, const HeadLoc& b);

  // Allocator, slot, block and dense-array states agree with one another.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  struct SlotMeta {
    SlotState state = SlotState::kFree;
    IndexEntry* owner = nullptr;
    std::atomic<uint32_t> pins{0};
  };
  struct BlockMeta {
    BlockUse use = BlockUse::kFree;
    uint32_t published = 0;  // published slots
    uint32_t blocked = 0;    // reserved + orphaned slots
    std::atomic<uint32_t> pins{0};
    uint64_t arena_bump_bytes = 0;  // arena: next free byte
    uint64_t arena_live_bytes = 0;  // arena: bytes of live objects
    bool arena_reclaim_listed = false;  // on arena_reclaim_ (at most once)
  };
  struct Region {
    RegionSpec spec;
    std::unique_ptr<BuddyAllocator> allocator;
    std::unique_ptr<DenseScoreArray> scores;  // head regions only
    std::unique_ptr<SlotMeta[]> slots;        // head regions only
    std::unique_ptr<BlockMeta[]> blocks;
    std::optional<uint64_t> arena_current;    // block receiving arena objects
  };

  SlotMeta& slot(const HeadLoc& loc);
  const SlotMeta& slot(const HeadLoc& loc) const;
  BlockMeta& block_of(int region, uint64_t offset);
  void FreeSlot(const HeadLoc& loc);
  void FreeArenaBlock(int region, uint64_t block);

  const PoolGeometry geometry_;
  const std::vector<RegionSpec> plan_;
  int head_region_count_ = 0;
  std::vector<Region> regions_;
  std::vector<int> arena_regions_;  // in preference order
  std::vector<HeadLoc> orphans_;
  std::vector<std::pair<int, uint64_t>> arena_reclaim_;  // (region, block)
  absl::Status full_status_;  // what ReserveHead returns when no slot is free
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_HEAD_POOL_H_
