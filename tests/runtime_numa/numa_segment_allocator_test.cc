// Covers NumaSegmentAllocator, the store's NUMA-bound segment memory, on the
// running kernel:
//   - on any machine (node 0): a segment is 2 MiB aligned, zero-filled, of
//     the size asked, bound with MPOL_BIND to its node (get_mempolicy) and
//     every page sits there (move_pages); bytes written stay; a node the
//     kernel does not have is INVALID_ARGUMENT naming the node;
//   - on a host with several memory nodes (tools/numa-qemu-test.sh boots 2-
//     and 4-node guests): a segment bound to each memory node has every page
//     on that node. Skips, saying why, on a one-node machine.
#include "runtime/numa/numa_segment_allocator.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/numa/topology.h"
#include "tests/runtime_numa/machine_nodes.h"

namespace heatsink::runtime {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

using testing::ExpectAllOn;
using testing::MemoryNodes;

void ExpectBoundTo(SegmentBuffer& buffer, int node) {
  absl::StatusOr<std::vector<int>> pages = SegmentPageNodes(buffer);
  ASSERT_TRUE(pages.ok()) << pages.status();
  ASSERT_EQ(pages->size(), (buffer.size_bytes() + 4095) / 4096);
  ExpectAllOn(*pages, node);
  absl::StatusOr<MemPolicy> policy = SegmentPolicy(buffer);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->mode, kMpolBind);
  EXPECT_EQ(policy->nodes, std::vector<int>{node});
}

TEST(NumaSegmentAllocator, SegmentsAreBoundZeroedAndResidentOnNode0) {
  NumaSegmentAllocator allocator(0, {});
  EXPECT_EQ(allocator.node(), 0);
  // Not a multiple of 2 MiB: the segment is what was asked, the mapping
  // rounds up.
  absl::StatusOr<std::unique_ptr<SegmentBuffer>> buffer = allocator.Allocate(3 * kMiB + 4096);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  SegmentBuffer& b = **buffer;
  EXPECT_EQ(b.size_bytes(), 3 * kMiB + 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (2 * kMiB), 0u);
  std::vector<uint8_t> zeros(b.size_bytes(), 0);
  EXPECT_EQ(std::memcmp(b.data(), zeros.data(), zeros.size()), 0);
  ExpectBoundTo(b, 0);
  for (uint64_t i = 0; i < b.size_bytes(); i += 4096) b.data()[i] = static_cast<uint8_t>(i >> 12);
  for (uint64_t i = 0; i < b.size_bytes(); i += 4096) {
    ASSERT_EQ(b.data()[i], static_cast<uint8_t>(i >> 12));
  }
  // A second segment is a mapping of its own.
  absl::StatusOr<std::unique_ptr<SegmentBuffer>> other = allocator.Allocate(2 * kMiB);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->data(), b.data());
  ExpectBoundTo(**other, 0);
}

TEST(NumaSegmentAllocator, RejectsNodesTheKernelDoesNotHaveAndEmptySegments) {
  const std::vector<int> nodes = MemoryNodes();
  ASSERT_FALSE(nodes.empty());
  for (int node : {nodes.back() + 1, MaxPossibleNode() + 1}) {
    NumaSegmentAllocator allocator(node, {});
    absl::StatusOr<std::unique_ptr<SegmentBuffer>> buffer = allocator.Allocate(2 * kMiB);
    ASSERT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument)
        << "node " << node << ": " << buffer.status();
    EXPECT_NE(buffer.status().message().find(absl::StrCat("NUMA node ", node)),
              absl::string_view::npos)
        << buffer.status();
  }
  NumaSegmentAllocator allocator(0, {});
  EXPECT_EQ(allocator.Allocate(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NumaMultiNode, SegmentsSitOnTheNodeTheyAreBoundTo) {
  const std::vector<int> nodes = MemoryNodes();
  if (nodes.size() < 2) {
    GTEST_SKIP() << "one NUMA node with memory here; tools/numa-qemu-test.sh runs this in a "
                    "multi-node guest";
  }
  for (int node : nodes) {
    NumaSegmentAllocator allocator(node, {});
    absl::StatusOr<std::unique_ptr<SegmentBuffer>> buffer = allocator.Allocate(8 * kMiB);
    ASSERT_TRUE(buffer.ok()) << "node " << node << ": " << buffer.status();
    ExpectBoundTo(**buffer, node);
  }
}

}  // namespace
}  // namespace heatsink::runtime
