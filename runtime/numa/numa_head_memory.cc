#include "runtime/numa/numa_head_memory.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::runtime {

absl::StatusOr<std::unique_ptr<NumaHeadMemory>> NumaHeadMemory::Create(
    const std::vector<RegionPlacement>& regions, const NumaMemoryOptions& options) {
  if (regions.empty()) return absl::InvalidArgumentError("head memory: no region");
  std::unique_ptr<NumaHeadMemory> memory(new NumaHeadMemory());
  for (size_t i = 0; i < regions.size(); ++i) {
    if (regions[i].region != static_cast<int>(i)) {
      return absl::InvalidArgumentError(absl::StrCat("head memory: entry ", i, " describes region ",
                                                     regions[i].region));
    }
    if (regions[i].bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat("head memory: region ", i, " has 0 bytes"));
    }
    if (absl::Status s = memory->MapRegion(regions[i], options); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("head region ", i, ": ", s.message()));
    }
  }
  return memory;
}

absl::Status NumaHeadMemory::MapRegion(const RegionPlacement& placement,
                                       const NumaMemoryOptions& options) {
  absl::StatusOr<BoundMapping> mapping = MapBoundMemory(placement.bytes, placement.node, options);
  if (!mapping.ok()) return mapping.status();
  regions_.push_back(*mapping);
  return absl::OkStatus();
}

NumaHeadMemory::~NumaHeadMemory() {
  for (BoundMapping& r : regions_) UnmapBoundMemory(r);
}

uint64_t NumaHeadMemory::region_bytes(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return regions_[region].size_bytes;
}

int NumaHeadMemory::region_node(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return regions_[region].node;
}

uint8_t* NumaHeadMemory::data(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return regions_[region].data;
}

absl::Status NumaHeadMemory::CheckRange(int region, uint64_t offset, uint64_t size) const {
  const uint64_t bytes =
      region >= 0 && region < region_count() ? regions_[region].size_bytes : 0;
  return CheckMemoryRange(region, region_count(), bytes, offset, size);
}

absl::Status NumaHeadMemory::Read(int region, uint64_t offset, absl::Span<uint8_t> out) const {
  if (absl::Status s = CheckRange(region, offset, out.size()); !s.ok()) return s;
  if (!out.empty()) std::memcpy(out.data(), regions_[region].data + offset, out.size());
  return absl::OkStatus();
}

absl::Status NumaHeadMemory::Write(int region, uint64_t offset, absl::Span<const uint8_t> in) {
  if (absl::Status s = CheckRange(region, offset, in.size()); !s.ok()) return s;
  if (!in.empty()) std::memcpy(regions_[region].data + offset, in.data(), in.size());
  return absl::OkStatus();
}

absl::Status NumaHeadMemory::Swap(const MemoryRange& a, const MemoryRange& b) {
  if (a.size_bytes != b.size_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("head memory: swap of unequal sizes ",
                                                   a.size_bytes, " and ", b.size_bytes));
  }
  if (absl::Status s = CheckRange(a.region, a.offset, a.size_bytes); !s.ok()) return s;
  if (absl::Status s = CheckRange(b.region, b.offset, b.size_bytes); !s.ok()) return s;
  if (a.region == b.region && a.size_bytes > 0 && a.offset < b.offset + b.size_bytes &&
      b.offset < a.offset + a.size_bytes) {
    return absl::InvalidArgumentError("head memory: swap of overlapping ranges");
  }
  uint8_t* pa = regions_[a.region].data + a.offset;
  uint8_t* pb = regions_[b.region].data + b.offset;
  // Each byte stays in the memory of its range's node: the exchange moves
  // contents between the nodes, never the pages. A bounce buffer small
  // enough for L1 keeps the traffic at one read and one write per byte of
  // each range, as one copy of both would.
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

absl::StatusOr<std::vector<int>> NumaHeadMemory::PageNodes(int region, uint64_t offset,
                                                           uint64_t size_bytes) const {
  if (absl::Status s = CheckRange(region, offset, size_bytes); !s.ok()) return s;
  return runtime::PageNodes(regions_[region].data + offset, size_bytes);
}

absl::Status NumaHeadMemory::VerifyPlacement(int region) const {
  absl::StatusOr<std::vector<int>> nodes = PageNodes(region, 0, region_bytes(region));
  if (!nodes.ok()) return nodes.status();
  for (size_t i = 0; i < nodes->size(); ++i) {
    if ((*nodes)[i] != regions_[region].node) {
      return absl::FailedPreconditionError(
          absl::StrCat("head region ", region, ": page ", i, " is on node ", (*nodes)[i],
                       ", not on node ", regions_[region].node));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<MemPolicy> NumaHeadMemory::RegionPolicy(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return AddressMemPolicy(regions_[region].data);
}

absl::Status BindServingPolicy(int serving_node) {
  if (absl::Status s = SetThreadBindPolicy(serving_node); !s.ok()) return s;
  absl::StatusOr<MemPolicy> policy = ThreadMemPolicy();
  if (!policy.ok()) return policy.status();
  if (policy->mode != (kMpolBind | kMpolFStaticNodes) ||
      policy->nodes != std::vector<int>{serving_node}) {
    return absl::InternalError(absl::StrCat(
        "serving policy: the kernel reports mode ", policy->mode, " on ", policy->nodes.size(),
        " node(s) after set_mempolicy(MPOL_BIND|MPOL_F_STATIC_NODES, {", serving_node, "})"));
  }
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
