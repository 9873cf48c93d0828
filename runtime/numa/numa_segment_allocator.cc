#include "runtime/numa/numa_segment_allocator.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace heatsink::runtime {
namespace {

class BoundSegmentBuffer final : public SegmentBuffer {
 public:
  explicit BoundSegmentBuffer(BoundMapping mapping) : mapping_(mapping) {}
  ~BoundSegmentBuffer() override { UnmapBoundMemory(mapping_); }
  BoundSegmentBuffer(const BoundSegmentBuffer&) = delete;
  BoundSegmentBuffer& operator=(const BoundSegmentBuffer&) = delete;

  uint8_t* data() override { return mapping_.data; }
  uint64_t size_bytes() const override { return mapping_.size_bytes; }

 private:
  BoundMapping mapping_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SegmentBuffer>> NumaSegmentAllocator::Allocate(uint64_t size_bytes) {
  absl::StatusOr<BoundMapping> mapping = MapBoundMemory(size_bytes, node_, options_);
  if (!mapping.ok()) {
    return absl::Status(mapping.status().code(), absl::StrCat("segment on NUMA node ", node_, ": ",
                                                              mapping.status().message()));
  }
  return std::make_unique<BoundSegmentBuffer>(*mapping);
}

absl::StatusOr<std::vector<int>> SegmentPageNodes(SegmentBuffer& buffer) {
  return PageNodes(buffer.data(), buffer.size_bytes());
}

absl::StatusOr<MemPolicy> SegmentPolicy(SegmentBuffer& buffer) {
  return AddressMemPolicy(buffer.data());
}

}  // namespace heatsink::runtime
