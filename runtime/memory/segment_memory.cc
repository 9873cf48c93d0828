#include "runtime/memory/segment_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime {
namespace {

// An anonymous mapping of `mapped_bytes` at `mapping`, of which the segment is
// `size_bytes` at `data` (aligned inside the mapping).
class AlignedBuffer final : public SegmentBuffer {
 public:
  AlignedBuffer(void* mapping, size_t mapped_bytes, uint8_t* data, uint64_t size_bytes)
      : mapping_(mapping), mapped_bytes_(mapped_bytes), data_(data), size_bytes_(size_bytes) {}
  ~AlignedBuffer() override { HS_CHECK(munmap(mapping_, mapped_bytes_) == 0); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() override { return data_; }
  uint64_t size_bytes() const override { return size_bytes_; }

 private:
  void* const mapping_;
  const size_t mapped_bytes_;
  uint8_t* const data_;
  const uint64_t size_bytes_;
};

size_t PageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

AlignedSegmentAllocator::AlignedSegmentAllocator(size_t alignment_bytes, SegmentCommit commit)
    : alignment_bytes_(alignment_bytes), commit_(commit) {
  HS_CHECK_MSG(alignment_bytes_ >= sizeof(void*) &&
                   (alignment_bytes_ & (alignment_bytes_ - 1)) == 0,
               "alignment must be a power of two of at least pointer size");
}

absl::StatusOr<std::unique_ptr<SegmentBuffer>> AlignedSegmentAllocator::Allocate(
    uint64_t size_bytes) {
  // Anonymous pages are zero and page-aligned; a larger alignment maps the
  // slack and starts the segment at the first aligned address inside.
  const size_t slack = alignment_bytes_ > PageBytes() ? alignment_bytes_ : 0;
  if (size_bytes == 0 || size_bytes > std::numeric_limits<size_t>::max() / 2 - slack) {
    return absl::InvalidArgumentError(absl::StrCat("cannot allocate ", size_bytes, " bytes"));
  }
  const size_t mapped = static_cast<size_t>(size_bytes) + slack;
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS |
                    (commit_ == SegmentCommit::kAtCreate ? MAP_POPULATE : MAP_NORESERVE);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("allocating a segment of ", size_bytes,
                                                     " bytes failed: ", std::strerror(errno)));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + alignment_bytes_ - 1) & ~(uintptr_t{alignment_bytes_} - 1);
  return std::make_unique<AlignedBuffer>(p, mapped, reinterpret_cast<uint8_t*>(aligned),
                                         size_bytes);
}

absl::Status CheckSegmentRange(uint64_t segment_bytes, uint64_t offset, uint64_t size) {
  if (offset > segment_bytes || size > segment_bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat("range [", offset, ", +", size,
                                              ") leaves a segment of ", segment_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status SegmentMemoryKnobs::Validate() const {
  if (segments_max == 0) return absl::InvalidArgumentError("segments_max must be positive");
  if (segment_bytes_max == 0) {
    return absl::InvalidArgumentError("segment_bytes_max must be positive");
  }
  return absl::OkStatus();
}

SegmentMemory::SegmentMemory(SegmentAllocator* allocator, SegmentMemoryKnobs knobs)
    : allocator_(allocator), knobs_(knobs) {
  HS_CHECK(allocator_ != nullptr);
  HS_CHECK_OK(knobs_.Validate());
}

absl::Status SegmentMemory::Create(SegmentId id, uint64_t size_bytes) {
  if (!id.valid()) return absl::InvalidArgumentError("segment id 0 is never issued");
  if (size_bytes == 0 || size_bytes > knobs_.segment_bytes_max) {
    return absl::InvalidArgumentError(absl::StrCat("segment size ", size_bytes,
                                                   " outside (0, segment_bytes_max=",
                                                   knobs_.segment_bytes_max, "]"));
  }
  {
    MutexLock lock(&mu_);
    if (segments_.contains(id)) {
      return absl::AlreadyExistsError(absl::StrCat("segment ", id.value, " already exists"));
    }
    if (segments_.size() >= knobs_.segments_max) {
      return absl::ResourceExhaustedError(
          absl::StrCat("segments_max=", knobs_.segments_max, " reached"));
    }
  }
  // Allocation (and zero-filling) happens outside the lock; a concurrent
  // Create of the same id is caught again below.
  HS_ASSIGN_OR_RETURN(std::unique_ptr<SegmentBuffer> buffer, allocator_->Allocate(size_bytes));
  MutexLock lock(&mu_);
  if (segments_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrCat("segment ", id.value, " already exists"));
  }
  if (segments_.size() >= knobs_.segments_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("segments_max=", knobs_.segments_max, " reached"));
  }
  segments_.emplace(id, std::shared_ptr<SegmentBuffer>(std::move(buffer)));
  return absl::OkStatus();
}

absl::Status SegmentMemory::Remove(SegmentId id) {
  std::shared_ptr<SegmentBuffer> released;  // freed outside the lock
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return absl::NotFoundError(absl::StrCat("no segment ", id.value));
  released = std::move(it->second);
  segments_.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SegmentBuffer>> SegmentMemory::Find(SegmentId id) const {
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return absl::NotFoundError(absl::StrCat("no segment ", id.value));
  return it->second;
}

absl::StatusOr<SegmentRegion> SegmentMemory::Region(SegmentId id, uint64_t offset,
                                                    uint64_t size) const {
  HS_ASSIGN_OR_RETURN(std::shared_ptr<SegmentBuffer> buffer, Find(id));
  HS_RETURN_IF_ERROR(CheckSegmentRange(buffer->size_bytes(), offset, size));
  SegmentRegion region;
  region.data = buffer->data() + offset;
  region.size_bytes = size;
  region.buffer = std::move(buffer);
  return region;
}

absl::Status SegmentMemory::Write(SegmentId id, uint64_t offset, absl::string_view bytes) {
  HS_ASSIGN_OR_RETURN(SegmentRegion region, Region(id, offset, bytes.size()));
  if (!bytes.empty()) std::memcpy(region.data, bytes.data(), bytes.size());
  return absl::OkStatus();
}

absl::Status SegmentMemory::ReadInto(SegmentId id, uint64_t offset,
                                     absl::Span<uint8_t> out) const {
  HS_ASSIGN_OR_RETURN(SegmentRegion region, Region(id, offset, out.size()));
  if (!out.empty()) std::memcpy(out.data(), region.data, out.size());
  return absl::OkStatus();
}

absl::StatusOr<std::string> SegmentMemory::Read(SegmentId id, uint64_t offset,
                                                uint64_t size) const {
  HS_ASSIGN_OR_RETURN(SegmentRegion region, Region(id, offset, size));
  return std::string(reinterpret_cast<const char*>(region.data), static_cast<size_t>(size));
}

std::vector<SegmentId> SegmentMemory::ids() const {
  MutexLock lock(&mu_);
  std::vector<SegmentId> out;
  out.reserve(segments_.size());
  for (const auto& [id, buffer] : segments_) out.push_back(id);
  return out;
}

size_t SegmentMemory::size() const {
  MutexLock lock(&mu_);
  return segments_.size();
}

}  // namespace heatsink::runtime
