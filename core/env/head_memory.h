// File: core/env/head_memory.h
//
// The bytes behind the tiering head pool (ADR-0019), region by region. A region
// is one contiguous range of head memory on one NUMA node: region 0 is the
// preferred region on the serving node, the others are foreign. The runtime
// backs each region with mbind'ed memory on its node, the simulator with
// modelled memory, tests with plain heap buffers (VectorHeadMemory).
//
// The tiering core never touches head bytes except through this interface, so
// it stays unaware of which world it runs in.
//
// Contract:
//   - Region indices are 0 .. region_count()-1; sizes never change.
//   - Read/Write/Swap of ranges that do not overlap may run concurrently from
//     any threads. Callers (TierManager) serialise overlapping accesses: an
//     exchange runs under the exclusive tier lock, and a head being read is
//     pinned so it is never exchanged or freed meanwhile.
//   - A range outside its region is OUT_OF_RANGE; nothing is changed then.
//   - Swap exchanges the contents of two equal-size, non-overlapping ranges
//     (possibly in different regions). On error neither range is changed.
#ifndef HEATSINK_CORE_ENV_HEAD_MEMORY_H_
#define HEATSINK_CORE_ENV_HEAD_MEMORY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace heatsink {

struct MemoryRange {
  int region = 0;
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
};

class HeadMemory {
 public:
  virtual ~HeadMemory() = default;

  virtual int region_count() const = 0;
  // REQUIRES: 0 <= region < region_count().
  virtual uint64_t region_bytes(int region) const = 0;

  // Copies out.size() bytes starting at `offset` of `region` into `out`.
  [[nodiscard]] virtual absl::Status Read(int region, uint64_t offset,
                                          absl::Span<uint8_t> out) const = 0;
  // Copies `in` into `region` starting at `offset`.
  [[nodiscard]] virtual absl::Status Write(int region, uint64_t offset,
                                           absl::Span<const uint8_t> in) = 0;
  // Exchanges the bytes of `a` and `b`. INVALID_ARGUMENT if the sizes differ
  // or the ranges overlap.
  [[nodiscard]] virtual absl::Status Swap(const MemoryRange& a, const MemoryRange& b) = 0;
};

// Shared argument checks for implementations: OUT_OF_RANGE unless
// [offset, offset + size) lies inside a region of `region_bytes` bytes.
[[nodiscard]] absl::Status CheckMemoryRange(int region, int region_count, uint64_t region_bytes,
                                            uint64_t offset, uint64_t size_bytes);

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_HEAD_MEMORY_H_
