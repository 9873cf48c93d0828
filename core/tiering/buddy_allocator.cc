#include "core/tiering/buddy_allocator.h"

#include <bit>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {

BuddyAllocator::BuddyAllocator(uint64_t region_bytes, uint64_t min_bytes, uint64_t max_bytes)
    : region_bytes_(region_bytes),
      min_bytes_(min_bytes),
      max_bytes_(max_bytes),
      max_order_(std::countr_zero(max_bytes) - std::countr_zero(min_bytes)) {
  HS_CHECK(std::has_single_bit(min_bytes) && std::has_single_bit(max_bytes));
  HS_CHECK(min_bytes <= max_bytes);
  HS_CHECK(region_bytes % max_bytes == 0);
  free_.resize(max_order_ + 1);
  block_allocated_bytes_.assign(region_bytes / max_bytes, 0);
  for (uint64_t off = 0; off < region_bytes; off += max_bytes) free_[max_order_].insert(off);
  free_bytes_ = region_bytes;
}

int BuddyAllocator::OrderOf(uint64_t bytes) const {
  if (!std::has_single_bit(bytes) || bytes < min_bytes_ || bytes > max_bytes_) return -1;
  return std::countr_zero(bytes) - std::countr_zero(min_bytes_);
}

void BuddyAllocator::InsertFree(int order, uint64_t offset) {
  // Merge with the buddy while it is free; never beyond one block.
  while (order < max_order_) {
    const uint64_t buddy = offset ^ BytesOf(order);
    auto it = free_[order].find(buddy);
    if (it == free_[order].end()) break;
    free_[order].erase(it);
    offset = std::min(offset, buddy);
    ++order;
  }
  free_[order].insert(offset);
}

absl::StatusOr<uint64_t> BuddyAllocator::Allocate(uint64_t bytes) {
  const int order = OrderOf(bytes);
  if (order < 0) {
    return absl::InvalidArgumentError(absl::StrCat("buddy allocation of ", bytes,
                                                   " bytes: must be a power of two in [",
                                                   min_bytes_, ", ", max_bytes_, "]"));
  }
  int from = order;
  while (from <= max_order_ && free_[from].empty()) ++from;
  if (from > max_order_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no free range of ", bytes, " bytes (", free_bytes_, " bytes free)"));
  }
  const uint64_t offset = *free_[from].begin();
  free_[from].erase(free_[from].begin());
  // Split down, keeping the lower half and freeing each upper half.
  while (from > order) {
    --from;
    free_[from].insert(offset + BytesOf(from));
  }
  allocated_.emplace(offset, order);
  block_allocated_bytes_[offset / max_bytes_] += bytes;
  free_bytes_ -= bytes;
  return offset;
}

bool BuddyAllocator::CanAllocate(uint64_t bytes) const {
  const int order = OrderOf(bytes);
  if (order < 0 || free_bytes_ < bytes) return false;
  for (int from = order; from <= max_order_; ++from) {
    if (!free_[from].empty()) return true;
  }
  return false;
}

absl::Status BuddyAllocator::Free(uint64_t offset) {
  auto it = allocated_.find(offset);
  if (it == allocated_.end()) {
    return absl::NotFoundError(absl::StrCat("no buddy allocation starts at ", offset));
  }
  const int order = it->second;
  allocated_.erase(it);
  block_allocated_bytes_[offset / max_bytes_] -= BytesOf(order);
  free_bytes_ += BytesOf(order);
  InsertFree(order, offset);
  return absl::OkStatus();
}

uint64_t BuddyAllocator::AllocationBytes(uint64_t offset) const {
  auto it = allocated_.find(offset);
  return it == allocated_.end() ? 0 : BytesOf(it->second);
}

uint64_t BuddyAllocator::allocated_bytes_in_block(uint64_t block) const {
  HS_CHECK(block < block_allocated_bytes_.size());
  return block_allocated_bytes_[block];
}

void BuddyAllocator::SwapBlocks(BuddyAllocator& a, uint64_t block_a, BuddyAllocator& b,
                                uint64_t block_b) {
  HS_CHECK(a.min_bytes_ == b.min_bytes_ && a.max_bytes_ == b.max_bytes_);
  HS_CHECK(block_a < a.block_count() && block_b < b.block_count());
  if (&a == &b && block_a == block_b) return;
  const uint64_t block_bytes = a.max_bytes_;
  struct Extracted {
    std::vector<std::pair<uint64_t, int>> free;       // relative offset, order
    std::vector<std::pair<uint64_t, int>> allocated;  // relative offset, order
  };
  auto extract = [block_bytes](BuddyAllocator& x, uint64_t block) {
    Extracted e;
    const uint64_t begin = block * block_bytes;
    const uint64_t end = begin + block_bytes;
    for (int order = 0; order <= x.max_order_; ++order) {
      auto lo = x.free_[order].lower_bound(begin);
      auto hi = x.free_[order].lower_bound(end);
      for (auto it = lo; it != hi; ++it) e.free.emplace_back(*it - begin, order);
      x.free_[order].erase(lo, hi);
    }
    auto lo = x.allocated_.lower_bound(begin);
    auto hi = x.allocated_.lower_bound(end);
    for (auto it = lo; it != hi; ++it) e.allocated.emplace_back(it->first - begin, it->second);
    x.allocated_.erase(lo, hi);
    return e;
  };
  auto install = [block_bytes](BuddyAllocator& x, uint64_t block, const Extracted& e) {
    const uint64_t begin = block * block_bytes;
    for (const auto& [rel, order] : e.free) x.free_[order].insert(begin + rel);
    for (const auto& [rel, order] : e.allocated) x.allocated_.emplace(begin + rel, order);
  };
  const Extracted ea = extract(a, block_a);
  const Extracted eb = extract(b, block_b);
  install(a, block_a, eb);
  install(b, block_b, ea);
  const uint64_t bytes_a = a.block_allocated_bytes_[block_a];
  const uint64_t bytes_b = b.block_allocated_bytes_[block_b];
  a.block_allocated_bytes_[block_a] = bytes_b;
  b.block_allocated_bytes_[block_b] = bytes_a;
  a.free_bytes_ = a.free_bytes_ + bytes_a - bytes_b;
  b.free_bytes_ = b.free_bytes_ + bytes_b - bytes_a;
}

absl::Status BuddyAllocator::CheckInvariants() const {
  // Tile the region: every byte is in exactly one free or allocated range.
  std::map<uint64_t, uint64_t> ranges;  // start -> bytes
  uint64_t free_total = 0;
  for (int order = 0; order <= max_order_; ++order) {
    for (uint64_t off : free_[order]) {
      if (off % BytesOf(order) != 0) {
        return absl::InternalError(absl::StrCat("free range at ", off, " misaligned"));
      }
      if (order < max_order_ && free_[order].count(off ^ BytesOf(order)) != 0) {
        return absl::InternalError(absl::StrCat("free buddies at ", off, " not merged"));
      }
      ranges.emplace(off, BytesOf(order));
      free_total += BytesOf(order);
    }
  }
  std::vector<uint64_t> per_block(block_allocated_bytes_.size(), 0);
  for (const auto& [off, order] : allocated_) {
    if (off % BytesOf(order) != 0) {
      return absl::InternalError(absl::StrCat("allocation at ", off, " misaligned"));
    }
    if (!ranges.emplace(off, BytesOf(order)).second) {
      return absl::InternalError(absl::StrCat("range at ", off, " both free and allocated"));
    }
    per_block[off / max_bytes_] += BytesOf(order);
  }
  uint64_t next = 0;
  for (const auto& [off, bytes] : ranges) {
    if (off != next) {
      return absl::InternalError(absl::StrCat("region not tiled at ", next, " (next range at ",
                                              off, ")"));
    }
    next = off + bytes;
  }
  if (next != region_bytes_) {
    return absl::InternalError(absl::StrCat("ranges end at ", next, " of ", region_bytes_));
  }
  if (free_total != free_bytes_) {
    return absl::InternalError(
        absl::StrCat("free bytes ", free_bytes_, " but free ranges hold ", free_total));
  }
  if (per_block != block_allocated_bytes_) {
    return absl::InternalError("per-block allocated bytes out of date");
  }
  return absl::OkStatus();
}

}  // namespace heatsink
