// File: runtime/numa/bound_mapping.h
//
// One anonymous mapping bound to a NUMA node (or, block by block, to several):
// aligned to 2 MiB (the default
// promotion block and the huge-page size), mbind(MPOL_BIND) to its node
// before any page is touched, then every page faulted in once, so the memory
// is really taken from that node at start-up (a node that cannot hold it
// fails here, not under load) and later accesses never fault. Optionally
// explicit 2 MiB huge pages (MAP_HUGETLB; pages must be reserved in
// /sys/devices/system/node/nodeN/hugepages) and mlock. The tiering head
// regions (numa_head_memory.h), the store's segments
// (numa_segment_allocator.h) and the store's head pool
// (runtime/numa/segment_head_pool.h) are made of these.
//
// Example:
//   HS_ASSIGN_OR_RETURN(BoundMapping m, MapBoundMemory(64 << 20, /*node=*/1, {}));
//   ... m.data ...
//   UnmapBoundMemory(m);
#ifndef HEATSINK_RUNTIME_NUMA_BOUND_MAPPING_H_
#define HEATSINK_RUNTIME_NUMA_BOUND_MAPPING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace heatsink::runtime {

inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;

struct NumaMemoryOptions {
  bool huge_pages = false;  // MAP_HUGETLB (2 MiB pages)
  bool mlock = false;       // lock the memory in RAM
};

struct BoundMapping {
  uint8_t* data = nullptr;    // 2 MiB aligned
  uint64_t size_bytes = 0;    // as asked
  uint64_t mapped_bytes = 0;  // rounded up to 2 MiB
  int node = 0;               // the first block's node when bound block by block
  bool locked = false;
};

// INVALID_ARGUMENT for 0 bytes or a node the kernel cannot bind to;
// RESOURCE_EXHAUSTED when the node's memory, the huge pages or the mlock
// limit are short (the message says which). Nothing stays mapped on error.
[[nodiscard]] absl::StatusOr<BoundMapping> MapBoundMemory(uint64_t size_bytes, int node,
                                                          const NumaMemoryOptions& options);

// Like MapBoundMemory, but block i of `block_bytes` bytes is bound to
// block_nodes[i] before any page is touched (consecutive blocks on one node
// share one mbind). INVALID_ARGUMENT for an empty list, a block size that is
// not a multiple of the page size (2 MiB with huge pages), or a node the
// kernel cannot bind to.
[[nodiscard]] absl::StatusOr<BoundMapping> MapBoundBlocks(uint64_t block_bytes,
                                                          absl::Span<const int> block_nodes,
                                                          const NumaMemoryOptions& options);

// Unlocks and unmaps; leaves `mapping` empty. No-op on an empty mapping.
void UnmapBoundMemory(BoundMapping& mapping);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_BOUND_MAPPING_H_
