// File: core/env/vector_head_memory.h
//
// HeadMemory on plain heap buffers, one per region: what tests and benchmarks
// use, and what the simulator may use when it wants real bytes. It has no
// notion of NUMA nodes; the regions are logical, which is enough to exercise
// every multi-region path of the tiering core on a one-node machine.
//
// Thread safety: as HeadMemory (disjoint ranges may be accessed concurrently).
#ifndef HEATSINK_CORE_ENV_VECTOR_HEAD_MEMORY_H_
#define HEATSINK_CORE_ENV_VECTOR_HEAD_MEMORY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "core/env/head_memory.h"

namespace heatsink {

class VectorHeadMemory final : public HeadMemory {
 public:
  // One zero-filled buffer per entry of `region_bytes`.
  explicit VectorHeadMemory(const std::vector<uint64_t>& region_bytes);
  VectorHeadMemory(const VectorHeadMemory&) = delete;
  VectorHeadMemory& operator=(const VectorHeadMemory&) = delete;

  int region_count() const override { return static_cast<int>(regions_.size()); }
  uint64_t region_bytes(int region) const override;

  absl::Status Read(int region, uint64_t offset, absl::Span<uint8_t> out) const override;
  absl::Status Write(int region, uint64_t offset, absl::Span<const uint8_t> in) override;
  absl::Status Swap(const MemoryRange& a, const MemoryRange& b) override;

  // Direct access for tests and benchmarks that check bytes in place.
  const uint8_t* data(int region) const;

 private:
  struct Region {
    std::unique_ptr<uint8_t[]> bytes;
    uint64_t size_bytes = 0;
  };
  std::vector<Region> regions_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_VECTOR_HEAD_MEMORY_H_
