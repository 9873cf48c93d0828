// File: runtime/numa/numa_segment_allocator.h
//
// A SegmentAllocator (runtime/memory/segment_memory.h) whose segments are
// bound to one NUMA node: each segment is a BoundMapping (bound_mapping.h),
// mbind(MPOL_BIND) to the node before a page is touched and faulted in at
// once, so a store's segments really sit on the node it serves from (the
// NIC's node by default, heatsink-store --segment-node) and a node that
// cannot hold them fails at start, not under load. Optionally huge pages and
// mlock. The transports see plain SegmentBuffers.
//
// Verification: SegmentPageNodes() and SegmentPolicy() ask the kernel where a
// buffer's pages are and what policy its mapping has, so tests prove the
// placement rather than trust it.
//
// Thread-safe.
//
// Example:
//   HS_ASSIGN_OR_RETURN(int node, PlanSegmentNode(topology, -1, total_bytes));
//   NumaSegmentAllocator allocator(node, {.mlock = true});
//   SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
#ifndef HEATSINK_RUNTIME_NUMA_NUMA_SEGMENT_ALLOCATOR_H_
#define HEATSINK_RUNTIME_NUMA_NUMA_SEGMENT_ALLOCATOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/numa/bound_mapping.h"
#include "runtime/numa/mempolicy.h"

namespace heatsink::runtime {

class NumaSegmentAllocator final : public SegmentAllocator {
 public:
  NumaSegmentAllocator(int node, const NumaMemoryOptions& options)
      : node_(node), options_(options) {}
  NumaSegmentAllocator(const NumaSegmentAllocator&) = delete;
  NumaSegmentAllocator& operator=(const NumaSegmentAllocator&) = delete;

  // Zero-filled memory on node(). INVALID_ARGUMENT for a node the kernel
  // cannot bind to; RESOURCE_EXHAUSTED when the node, the huge pages or the
  // mlock limit are short (see MapBoundMemory).
  [[nodiscard]] absl::StatusOr<std::unique_ptr<SegmentBuffer>> Allocate(
      uint64_t size_bytes) override;

  int node() const { return node_; }
  const NumaMemoryOptions& options() const { return options_; }

 private:
  const int node_;
  const NumaMemoryOptions options_;
};

// The node of every page of `buffer` (move_pages query; nothing moves).
[[nodiscard]] absl::StatusOr<std::vector<int>> SegmentPageNodes(SegmentBuffer& buffer);
// The memory policy of the mapping holding `buffer`.
[[nodiscard]] absl::StatusOr<MemPolicy> SegmentPolicy(SegmentBuffer& buffer);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_NUMA_SEGMENT_ALLOCATOR_H_
