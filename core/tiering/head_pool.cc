#include "core/tiering/head_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {
namespace {

// Arena objects are packed in units of this many bytes ("compact").
constexpr uint64_t kArenaAlignBytes = 8;

uint64_t ArenaFootprint(uint64_t size_bytes) {
  return (size_bytes + kArenaAlignBytes - 1) / kArenaAlignBytes * kArenaAlignBytes;
}

}  // namespace

HeadPool::HeadPool(const TieringKnobs& knobs)
    : geometry_{knobs.block_bytes, knobs.ram_head_bytes, knobs.heads_per_block()},
      plan_(PlanRegions(knobs)) {
  HS_CHECK_OK(knobs.Validate());
  regions_.reserve(plan_.size());
  for (const RegionSpec& spec : plan_) {
    Region r;
    r.spec = spec;
    r.allocator = std::make_unique<BuddyAllocator>(spec.bytes, geometry_.head_bytes,
                                                   geometry_.block_bytes);
    const uint64_t blocks = spec.bytes / geometry_.block_bytes;
    r.blocks = std::make_unique<BlockMeta[]>(blocks);
    if (spec.pool == PoolKind::kHead) {
      const uint64_t slots = blocks * geometry_.heads_per_block;
      r.scores = std::make_unique<DenseScoreArray>(slots);
      r.slots = std::make_unique<SlotMeta[]>(slots);
      ++head_region_count_;
    }
    regions_.push_back(std::move(r));
  }
  const bool small_pool = knobs.small_memory_bytes != 0;
  for (const RegionSpec& spec : plan_) {
    if ((spec.pool == PoolKind::kSmall) == small_pool) arena_regions_.push_back(spec.region);
  }
  full_status_ = absl::ResourceExhaustedError(
      absl::StrCat("head pool full: no free ", geometry_.head_bytes, "-byte head slot in ",
                   head_region_count_, " regions"));
}

DenseScoreArray& HeadPool::scores(int region) {
  HS_CHECK(region >= 0 && region < head_region_count_);
  return *regions_[region].scores;
}

const DenseScoreArray& HeadPool::scores(int region) const {
  HS_CHECK(region >= 0 && region < head_region_count_);
  return *regions_[region].scores;
}

HeadPool::SlotMeta& HeadPool::slot(const HeadLoc& loc) {
  HS_CHECK(loc.region >= 0 && loc.region < head_region_count_);
  HS_CHECK(loc.offset % geometry_.head_bytes == 0);
  return regions_[loc.region].slots[geometry_.SlotOfOffset(loc.offset)];
}

const HeadPool::SlotMeta& HeadPool::slot(const HeadLoc& loc) const {
  return const_cast<HeadPool*>(this)->slot(loc);
}

HeadPool::BlockMeta& HeadPool::block_of(int region, uint64_t offset) {
  HS_CHECK(region >= 0 && region < region_count());
  const uint64_t block = geometry_.BlockOfOffset(offset);
  HS_CHECK(block < block_count(region));
  return regions_[region].blocks[block];
}

absl::StatusOr<HeadLoc> HeadPool::ReserveHead() {
  for (int r = 0; r < head_region_count_; ++r) {
    if (!regions_[r].allocator->CanAllocate(geometry_.head_bytes)) continue;
    absl::StatusOr<uint64_t> offset = regions_[r].allocator->Allocate(geometry_.head_bytes);
    HS_CHECK_OK(offset.status());
    const HeadLoc loc{r, *offset};
    SlotMeta& s = slot(loc);
    HS_CHECK(s.state == SlotState::kFree);
    s.state = SlotState::kReserved;
    BlockMeta& b = block_of(r, *offset);
    HS_CHECK(b.use != BlockUse::kArena);
    b.use = BlockUse::kHeads;
    ++b.blocked;
    return loc;
  }
  return full_status_;  // built once: a full pool refuses every store
}

void HeadPool::PublishHead(const HeadLoc& loc, IndexEntry* owner) {
  SlotMeta& s = slot(loc);
  HS_CHECK(s.state == SlotState::kReserved && owner != nullptr);
  s.state = SlotState::kPublished;
  s.owner = owner;
  BlockMeta& b = block_of(loc.region, loc.offset);
  --b.blocked;
  ++b.published;
}

void HeadPool::FreeSlot(const HeadLoc& loc) {
  SlotMeta& s = slot(loc);
  s.state = SlotState::kFree;
  s.owner = nullptr;
  HS_CHECK_OK(regions_[loc.region].allocator->Free(loc.offset));
  const uint64_t block = geometry_.BlockOfOffset(loc.offset);
  if (regions_[loc.region].allocator->allocated_bytes_in_block(block) == 0) {
    regions_[loc.region].blocks[block].use = BlockUse::kFree;
  }
}

void HeadPool::CancelHead(const HeadLoc& loc) {
  HS_CHECK(slot(loc).state == SlotState::kReserved);
  --block_of(loc.region, loc.offset).blocked;
  FreeSlot(loc);
}

void HeadPool::ReleaseHead(const HeadLoc& loc) {
  SlotMeta& s = slot(loc);
  HS_CHECK(s.state == SlotState::kPublished);
  HS_CHECK_MSG(!regions_[loc.region].scores->occupied(geometry_.SlotOfOffset(loc.offset)),
               "release of a head whose dense slot still owns a score");
  BlockMeta& b = block_of(loc.region, loc.offset);
  --b.published;
  if (s.pins.load(std::memory_order_relaxed) > 0) {
    // A reader still streams these bytes; they stay put until it unpins.
    s.state = SlotState::kOrphaned;
    s.owner = nullptr;
    ++b.blocked;
    orphans_.push_back(loc);
    return;
  }
  FreeSlot(loc);
}

SlotState HeadPool::state(const HeadLoc& loc) const { return slot(loc).state; }
IndexEntry* HeadPool::owner(const HeadLoc& loc) const { return slot(loc).owner; }

absl::StatusOr<ArenaLoc> HeadPool::AllocateArena(uint64_t size_bytes) {
  HS_CHECK(size_bytes > 0 && size_bytes < geometry_.head_bytes);
  const uint64_t footprint = ArenaFootprint(size_bytes);
  for (int r : arena_regions_) {
    Region& region = regions_[r];
    if (region.arena_current.has_value()) {
      BlockMeta& b = region.blocks[*region.arena_current];
      if (b.arena_bump_bytes + footprint <= geometry_.block_bytes) {
        const uint64_t offset = *region.arena_current * geometry_.block_bytes + b.arena_bump_bytes;
        b.arena_bump_bytes += footprint;
        b.arena_live_bytes += footprint;
        return ArenaLoc{r, offset, size_bytes};
      }
    }
    if (!region.allocator->CanAllocate(geometry_.block_bytes)) continue;
    absl::StatusOr<uint64_t> block_offset = region.allocator->Allocate(geometry_.block_bytes);
    HS_CHECK_OK(block_offset.status());
    const uint64_t block = geometry_.BlockOfOffset(*block_offset);
    BlockMeta& b = region.blocks[block];
    HS_CHECK(b.use == BlockUse::kFree);
    b.use = BlockUse::kArena;
    b.arena_bump_bytes = footprint;
    b.arena_live_bytes = footprint;
    region.arena_current = block;
    return ArenaLoc{r, *block_offset, size_bytes};
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("small-object arena full: no room for ", size_bytes, " bytes"));
}

void HeadPool::FreeArenaBlock(int region, uint64_t block) {
  Region& r = regions_[region];
  BlockMeta& b = r.blocks[block];
  HS_CHECK(b.use == BlockUse::kArena && b.arena_live_bytes == 0);
  HS_CHECK_OK(r.allocator->Free(block * geometry_.block_bytes));
  b.use = BlockUse::kFree;
  b.arena_bump_bytes = 0;
  if (r.arena_current == block) r.arena_current.reset();
}

void HeadPool::ReleaseArena(const ArenaLoc& loc) {
  BlockMeta& b = block_of(loc.region, loc.offset);
  HS_CHECK(b.use == BlockUse::kArena);
  const uint64_t footprint = ArenaFootprint(loc.size_bytes);
  HS_CHECK(b.arena_live_bytes >= footprint);
  b.arena_live_bytes -= footprint;
  if (b.arena_live_bytes != 0) return;
  const uint64_t block = geometry_.BlockOfOffset(loc.offset);
  // Space inside an arena block is never reused before the whole block is
  // free, so a pinned reader of a deleted object still sees its bytes.
  if (b.pins.load(std::memory_order_relaxed) > 0) {
    if (!b.arena_reclaim_listed) {
      b.arena_reclaim_listed = true;
      arena_reclaim_.emplace_back(loc.region, block);
    }
    return;
  }
  FreeArenaBlock(loc.region, block);
}

void HeadPool::PinHead(const HeadLoc& loc) {
  slot(loc).pins.fetch_add(1, std::memory_order_relaxed);
  block_of(loc.region, loc.offset).pins.fetch_add(1, std::memory_order_relaxed);
}

void HeadPool::UnpinHead(const HeadLoc& loc) {
  const uint32_t before = slot(loc).pins.fetch_sub(1, std::memory_order_relaxed);
  HS_CHECK(before > 0);
  block_of(loc.region, loc.offset).pins.fetch_sub(1, std::memory_order_relaxed);
}

void HeadPool::PinArena(int region, uint64_t offset) {
  block_of(region, offset).pins.fetch_add(1, std::memory_order_relaxed);
}

void HeadPool::UnpinArena(int region, uint64_t offset) {
  const uint32_t before = block_of(region, offset).pins.fetch_sub(1, std::memory_order_relaxed);
  HS_CHECK(before > 0);
}

uint32_t HeadPool::head_pins(const HeadLoc& loc) const {
  return slot(loc).pins.load(std::memory_order_relaxed);
}

int HeadPool::Reclaim() {
  int freed = 0;
  size_t keep = 0;
  for (size_t i = 0; i < orphans_.size(); ++i) {
    const HeadLoc loc = orphans_[i];
    if (slot(loc).pins.load(std::memory_order_relaxed) == 0) {
      --block_of(loc.region, loc.offset).blocked;
      FreeSlot(loc);
      ++freed;
    } else {
      orphans_[keep++] = loc;
    }
  }
  orphans_.resize(keep);
  keep = 0;
  for (size_t i = 0; i < arena_reclaim_.size(); ++i) {
    const auto [region, block] = arena_reclaim_[i];
    BlockMeta& b = regions_[region].blocks[block];
    if (b.use != BlockUse::kArena || b.arena_live_bytes != 0) {  // reused meanwhile
      b.arena_reclaim_listed = false;
      continue;
    }
    if (b.pins.load(std::memory_order_relaxed) == 0) {
      b.arena_reclaim_listed = false;
      FreeArenaBlock(region, block);
      ++freed;
    } else {
      arena_reclaim_[keep++] = arena_reclaim_[i];
    }
  }
  arena_reclaim_.resize(keep);
  return freed;
}

bool HeadPool::BlockEligible(int region, uint64_t block) const {
  if (region < 0 || region >= head_region_count_ || block >= block_count(region)) return false;
  const BlockMeta& b = regions_[region].blocks[block];
  return b.use == BlockUse::kHeads && b.published == geometry_.heads_per_block &&
         b.blocked == 0 && b.pins.load(std::memory_order_relaxed) == 0;
}

BlockUse HeadPool::block_use(int region, uint64_t block) const {
  HS_CHECK(region >= 0 && region < region_count() && block < block_count(region));
  return regions_[region].blocks[block].use;
}

void HeadPool::ExchangeBlockMetadata(int region_a, uint64_t block_a, int region_b,
                                     uint64_t block_b) {
  HS_CHECK(BlockEligible(region_a, block_a) && BlockEligible(region_b, block_b));
  HS_CHECK(region_a != region_b || block_a != block_b);
  Region& ra = regions_[region_a];
  Region& rb = regions_[region_b];
  BuddyAllocator::SwapBlocks(*ra.allocator, block_a, *rb.allocator, block_b);
  const uint64_t hpb = geometry_.heads_per_block;
  for (uint64_t h = 0; h < hpb; ++h) {
    SlotMeta& sa = ra.slots[geometry_.SlotOf(block_a, h)];
    SlotMeta& sb = rb.slots[geometry_.SlotOf(block_b, h)];
    // Eligible blocks have no pins, so only state and owner move.
    std::swap(sa.state, sb.state);
    std::swap(sa.owner, sb.owner);
  }
  BlockMeta& ba = ra.blocks[block_a];
  BlockMeta& bb = rb.blocks[block_b];
  std::swap(ba.use, bb.use);
  std::swap(ba.published, bb.published);
  std::swap(ba.blocked, bb.blocked);
  std::swap(ba.arena_bump_bytes, bb.arena_bump_bytes);
  std::swap(ba.arena_live_bytes, bb.arena_live_bytes);
  DenseScoreArray::SwapSlices(*ra.scores, geometry_.SlotOf(block_a, 0), *rb.scores,
                              geometry_.SlotOf(block_b, 0), hpb);
}

void HeadPool::ExchangeHeadMetadata(const HeadLoc& a, const HeadLoc& b) {
  HS_CHECK(a.region != b.region);
  SlotMeta& sa = slot(a);
  SlotMeta& sb = slot(b);
  HS_CHECK(sa.state == SlotState::kPublished && sb.state == SlotState::kPublished);
  HS_CHECK(sa.pins.load(std::memory_order_relaxed) == 0 &&
           sb.pins.load(std::memory_order_relaxed) == 0);
  std::swap(sa.owner, sb.owner);
  DenseScoreArray::SwapSlices(*regions_[a.region].scores, geometry_.SlotOfOffset(a.offset),
                              *regions_[b.region].scores, geometry_.SlotOfOffset(b.offset), 1);
}

absl::Status HeadPool::CheckInvariants() const {
  for (const Region& r : regions_) {
    const int region = r.spec.region;
    if (absl::Status s = r.allocator->CheckInvariants(); !s.ok()) {
      return absl::InternalError(absl::StrCat("region ", region, ": ", s.message()));
    }
    for (uint64_t block = 0; block < r.allocator->block_count(); ++block) {
      const BlockMeta& b = r.blocks[block];
      const uint64_t allocated = r.allocator->allocated_bytes_in_block(block);
      auto fail = [&](absl::string_view what) {
        return absl::InternalError(absl::StrCat("region ", region, " block ", block, ": ", what));
      };
      if ((b.use == BlockUse::kFree) != (allocated == 0)) return fail("use disagrees with allocator");
      if (b.use == BlockUse::kArena) {
        if (allocated != geometry_.block_bytes) return fail("arena block not whole");
        if (b.arena_live_bytes > b.arena_bump_bytes || b.arena_bump_bytes > geometry_.block_bytes) {
          return fail("arena counters out of range");
        }
      }
      if (r.spec.pool != PoolKind::kHead) {
        if (b.use == BlockUse::kHeads) return fail("fixed heads in the small-object pool");
        continue;
      }
      uint32_t published = 0, blocked = 0, pins = 0;
      for (uint64_t h = 0; h < geometry_.heads_per_block; ++h) {
        const uint64_t index = geometry_.SlotOf(block, h);
        const SlotMeta& s = r.slots[index];
        const uint64_t offset = geometry_.OffsetOfSlot(index);
        pins += s.pins.load(std::memory_order_relaxed);
        const bool in_use = s.state != SlotState::kFree;
        if (b.use != BlockUse::kArena &&
            in_use != (r.allocator->AllocationBytes(offset) == geometry_.head_bytes)) {
          return fail(absl::StrCat("slot ", h, " state disagrees with allocator"));
        }
        if ((s.state == SlotState::kPublished) != r.scores->occupied(index)) {
          return fail(absl::StrCat("slot ", h, " dense score ownership disagrees with state"));
        }
        if ((s.state == SlotState::kPublished) != (s.owner != nullptr)) {
          return fail(absl::StrCat("slot ", h, " owner disagrees with state"));
        }
        published += s.state == SlotState::kPublished;
        blocked += s.state == SlotState::kReserved || s.state == SlotState::kOrphaned;
      }
      if (b.use != BlockUse::kArena &&
          (published != b.published || blocked != b.blocked ||
           pins != b.pins.load(std::memory_order_relaxed))) {
        return fail("block counters disagree with slots");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace heatsink
