#include "core/env/vector_head_memory.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {

VectorHeadMemory::VectorHeadMemory(const std::vector<uint64_t>& region_bytes) {
  regions_.reserve(region_bytes.size());
  for (uint64_t size : region_bytes) {
    Region r;
    // Value-initialised (zeroed), so the pages are touched once here rather
    // than during the first measured exchange.
    r.bytes = std::make_unique<uint8_t[]>(size);
    r.size_bytes = size;
    regions_.push_back(std::move(r));
  }
}

uint64_t VectorHeadMemory::region_bytes(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return regions_[region].size_bytes;
}

const uint8_t* VectorHeadMemory::data(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return regions_[region].bytes.get();
}

absl::Status VectorHeadMemory::Read(int region, uint64_t offset, absl::Span<uint8_t> out) const {
  const uint64_t bytes = region >= 0 && region < region_count() ? regions_[region].size_bytes : 0;
  if (absl::Status s = CheckMemoryRange(region, region_count(), bytes, offset, out.size());
      !s.ok()) {
    return s;
  }
  if (!out.empty()) std::memcpy(out.data(), regions_[region].bytes.get() + offset, out.size());
  return absl::OkStatus();
}

absl::Status VectorHeadMemory::Write(int region, uint64_t offset, absl::Span<const uint8_t> in) {
  const uint64_t bytes = region >= 0 && region < region_count() ? regions_[region].size_bytes : 0;
  if (absl::Status s = CheckMemoryRange(region, region_count(), bytes, offset, in.size());
      !s.ok()) {
    return s;
  }
  if (!in.empty()) std::memcpy(regions_[region].bytes.get() + offset, in.data(), in.size());
  return absl::OkStatus();
}

absl::Status VectorHeadMemory::Swap(const MemoryRange& a, const MemoryRange& b) {
  if (a.size_bytes != b.size_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("head memory: swap of unequal sizes ",
                                                   a.size_bytes, " and ", b.size_bytes));
  }
  for (const MemoryRange* r : {&a, &b}) {
    const uint64_t bytes =
        r->region >= 0 && r->region < region_count() ? regions_[r->region].size_bytes : 0;
    if (absl::Status s = CheckMemoryRange(r->region, region_count(), bytes, r->offset,
                                          r->size_bytes);
        !s.ok()) {
      return s;
    }
  }
  if (a.region == b.region && a.offset < b.offset + b.size_bytes &&
      b.offset < a.offset + a.size_bytes && a.size_bytes > 0) {
    return absl::InvalidArgumentError("head memory: swap of overlapping ranges");
  }
  uint8_t* pa = regions_[a.region].bytes.get() + a.offset;
  uint8_t* pb = regions_[b.region].bytes.get() + b.offset;
  // A small bounce buffer that stays in L1: the memory traffic is then the
  // same as one copy of both ranges (read a and b once, write a and b once).
  constexpr uint64_t kChunkBytes = 16 * 1024;
  alignas(64) uint8_t bounce[kChunkBytes];
  for (uint64_t done = 0; done < a.size_bytes; done += kChunkBytes) {
    const uint64_t n = std::min(kChunkBytes, a.size_bytes - done);
    std::memcpy(bounce, pa + done, n);
    std::memcpy(pa + done, pb + done, n);
    std::memcpy(pb + done, bounce, n);
  }
  return absl::OkStatus();
}

}  // namespace heatsink
