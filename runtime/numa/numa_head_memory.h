// File: runtime/numa/numa_head_memory.h
//
// The runtime's HeadMemory (core/env/head_memory.h): one anonymous mapping per
// region, aligned to 2 MiB (the default promotion block, and the huge-page
// size) and bound to its node with mbind(MPOL_BIND) before any page is
// touched. Every page is then faulted in once, so the region's memory is
// really taken from its node at start-up (a node that cannot hold it fails
// here, not under load) and later reads never fault.
//
// Options: explicit 2 MiB huge pages (MAP_HUGETLB; needs pages reserved in
// /sys/devices/system/node/nodeN/hugepages), and mlock so the heads are never
// swapped. Either failing is RESOURCE_EXHAUSTED with the reason.
//
// Verification: PageNodes() asks the kernel (move_pages, query only) which
// node each page of a range sits on, and RegionPolicy() returns the mapping's
// policy (get_mempolicy MPOL_F_ADDR), so tests and the tool can prove the
// placement rather than trust it.
//
// Thread safety: as HeadMemory -- disjoint ranges may be read, written and
// swapped concurrently; TierManager serialises overlapping accesses.
//
// Example:
//   HS_ASSIGN_OR_RETURN(NumaPlacement placement, PlanNumaPlacement(topology, knobs, {}));
//   HS_ASSIGN_OR_RETURN(std::unique_ptr<NumaHeadMemory> memory,
//                       NumaHeadMemory::Create(placement.regions, {.mlock = true}));
//   HS_ASSIGN_OR_RETURN(auto manager, TierManager::Create(env, knobs, memory.get()));
#ifndef HEATSINK_RUNTIME_NUMA_NUMA_HEAD_MEMORY_H_
#define HEATSINK_RUNTIME_NUMA_NUMA_HEAD_MEMORY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/env/head_memory.h"
#include "runtime/numa/bound_mapping.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/numa/placement.h"

namespace heatsink::runtime {

class NumaHeadMemory final : public HeadMemory {
 public:
  // One region per entry, in order (entry i must have region == i).
  // INVALID_ARGUMENT for an empty or mis-numbered list, a zero size, or a
  // node the kernel cannot bind to; RESOURCE_EXHAUSTED when the memory,
  // huge pages or the mlock limit are short. Nothing stays mapped on error.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<NumaHeadMemory>> Create(
      const std::vector<RegionPlacement>& regions, const NumaMemoryOptions& options);
  ~NumaHeadMemory() override;
  NumaHeadMemory(const NumaHeadMemory&) = delete;
  NumaHeadMemory& operator=(const NumaHeadMemory&) = delete;

  int region_count() const override { return static_cast<int>(regions_.size()); }
  uint64_t region_bytes(int region) const override;
  [[nodiscard]] absl::Status Read(int region, uint64_t offset,
                                  absl::Span<uint8_t> out) const override;
  [[nodiscard]] absl::Status Write(int region, uint64_t offset,
                                   absl::Span<const uint8_t> in) override;
  [[nodiscard]] absl::Status Swap(const MemoryRange& a, const MemoryRange& b) override;

  // The node region `region` was bound to. REQUIRES: a valid region.
  int region_node(int region) const;
  // Start of the region's bytes (2 MiB aligned). REQUIRES: a valid region.
  uint8_t* data(int region) const;

  // The node each page of the range sits on right now (see mempolicy.h).
  // OUT_OF_RANGE outside the region.
  [[nodiscard]] absl::StatusOr<std::vector<int>> PageNodes(int region, uint64_t offset,
                                                           uint64_t size_bytes) const;
  // OK when every page of the region sits on region_node(region);
  // FAILED_PRECONDITION naming the first misplaced page otherwise.
  [[nodiscard]] absl::Status VerifyPlacement(int region) const;
  // The region mapping's memory policy (MPOL_BIND to its node when bound).
  [[nodiscard]] absl::StatusOr<MemPolicy> RegionPolicy(int region) const;

 private:
  NumaHeadMemory() = default;
  [[nodiscard]] absl::Status MapRegion(const RegionPlacement& placement,
                                       const NumaMemoryOptions& options);
  [[nodiscard]] absl::Status CheckRange(int region, uint64_t offset, uint64_t size) const;

  std::vector<BoundMapping> regions_;  // size_bytes: what the tiering core sees
};

// Sets the calling thread's default policy to MPOL_BIND | MPOL_F_STATIC_NODES
// on `serving_node`, as ADR-0019 requires before the index and the workers
// are created, and checks that the kernel reports exactly that policy back.
[[nodiscard]] absl::Status BindServingPolicy(int serving_node);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_NUMA_HEAD_MEMORY_H_
