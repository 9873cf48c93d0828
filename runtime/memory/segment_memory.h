// File: runtime/memory/segment_memory.h
//
// The bytes of the segments a store process owns: segment id -> one contiguous
// buffer. Where the memory comes from is a SegmentAllocator's business (plain
// aligned allocation here; NUMA-bound memory later sits behind the same
// interface), so transports and the store see only SegmentBuffer.
//
// Lifetime: buffers are shared. Remove() drops the registry's reference; a
// transport that is reading or writing the segment (or has it registered with
// a NIC) keeps its own reference, so the memory is released only when the
// last user lets go.
//
// Concurrency: the registry is thread-safe. The bytes are not synchronised:
// the control plane's leases guarantee that a region being written by a copy
// is not read or written by anyone else at the same time.
//
// Example:
//   AlignedSegmentAllocator allocator;
//   SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
//   HS_RETURN_IF_ERROR(memory.Create(SegmentId(7), 64 << 20));
//   HS_RETURN_IF_ERROR(memory.Write(SegmentId(7), /*offset=*/4096, bytes));
//   HS_ASSIGN_OR_RETURN(std::string back, memory.Read(SegmentId(7), 4096, bytes.size()));
#ifndef HEATSINK_RUNTIME_MEMORY_SEGMENT_MEMORY_H_
#define HEATSINK_RUNTIME_MEMORY_SEGMENT_MEMORY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/model/ids.h"

namespace heatsink::runtime {

// One segment's memory: `size_bytes()` contiguous bytes at `data()`, valid
// until the buffer is destroyed.
class SegmentBuffer {
 public:
  virtual ~SegmentBuffer() = default;
  virtual uint8_t* data() = 0;
  virtual uint64_t size_bytes() const = 0;
};

// Produces segment buffers. Thread-safe.
class SegmentAllocator {
 public:
  virtual ~SegmentAllocator() = default;
  // RESOURCE_EXHAUSTED when the memory cannot be obtained.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<SegmentBuffer>> Allocate(
      uint64_t size_bytes) = 0;
};

// When a plain segment's pages are backed by RAM.
enum class SegmentCommit {
  // Every page is faulted in when the segment is created (MAP_POPULATE): the
  // store's resident memory is its segments from the start and no write pays
  // a page fault.
  kAtCreate,
  // Pages are backed as bytes first land in them (MAP_NORESERVE): a segment
  // costs address space, not RAM, until written, so segments larger than the
  // machine's memory can be mounted when the data written fits (the replay of
  // a scenario's capacities on a small machine). A page once written stays
  // resident; nothing is given back when objects are removed.
  kOnWrite,
};

// Page-aligned anonymous memory, zero-filled (so a fresh replica region never
// exposes another tenant's old bytes).
class AlignedSegmentAllocator final : public SegmentAllocator {
 public:
  // `alignment_bytes`: a power of two of at least pointer size (page
  // alignment is always given).
  explicit AlignedSegmentAllocator(size_t alignment_bytes = 4096,
                                   SegmentCommit commit = SegmentCommit::kAtCreate);
  AlignedSegmentAllocator(const AlignedSegmentAllocator&) = delete;
  AlignedSegmentAllocator& operator=(const AlignedSegmentAllocator&) = delete;

  [[nodiscard]] absl::StatusOr<std::unique_ptr<SegmentBuffer>> Allocate(
      uint64_t size_bytes) override;

 private:
  const size_t alignment_bytes_;
  const SegmentCommit commit_;
};

// OK when [offset, offset + size) lies inside a segment of `segment_bytes`
// (overflow-safe); OUT_OF_RANGE otherwise.
[[nodiscard]] absl::Status CheckSegmentRange(uint64_t segment_bytes, uint64_t offset,
                                             uint64_t size);

struct SegmentMemoryKnobs {
  size_t segments_max = 64;
  uint64_t segment_bytes_max = uint64_t{1} << 40;

  [[nodiscard]] absl::Status Validate() const;
};

// Told of every read a data service served from a segment (the store's head
// pool counts them as logical reads for its access scores). Called on the
// serving thread after the last byte went out; must be thread-safe and cheap.
class SegmentReadObserver {
 public:
  virtual ~SegmentReadObserver() = default;
  virtual void OnSegmentRead(SegmentId id, uint64_t offset, uint64_t size_bytes) = 0;
};

// A piece of a copied range and the decayed score its bytes had on the
// source store: `size_bytes` consecutive bytes of the range. A copy's pieces
// are in range order and their sizes add up to the range's size.
struct ScorePiece {
  uint64_t size_bytes = 0;
  double score = 0;
  friend bool operator==(const ScorePiece&, const ScorePiece&) = default;
};

// Most pieces one copy carries (16 bytes each on the wire, well inside a
// control frame): a range covering more source chunks is carried coarser.
inline constexpr size_t kCopyScorePiecesMax = 1024;

// Score inheritance (ADR-0019 meets dynamic replication): a replica copy
// carries the decayed scores its bytes have on the source store, and the
// target raises the scores of the address ranges the copy landed in to
// them, so a hot object's new replica starts hot instead of at zero. The
// data plane asks the source's keeper as a copy starts and tells the
// target's once every byte has landed (runtime/transport/wire.h: WRITE and
// RMA_COMMIT carry the pieces). A store's head pool is its keeper; a store
// without one carries nothing and takes nothing. Thread-safe and cheap.
class SegmentScoreKeeper {
 public:
  virtual ~SegmentScoreKeeper() = default;
  // Source side: the scores of [offset, offset + size_bytes) of `id` as at
  // most kCopyScorePiecesMax pieces covering the range, or empty when there
  // is nothing to carry (an unknown segment or range, every score 0).
  virtual std::vector<ScorePiece> CopyScores(SegmentId id, uint64_t offset,
                                             uint64_t size_bytes) const = 0;
  // Target side: a copy landed [offset, offset + size_bytes) of `id` with
  // these pieces; raise what they cover, never lower it. Pieces that do not
  // add up to the range are ignored.
  virtual void InheritScores(SegmentId id, uint64_t offset, uint64_t size_bytes,
                             absl::Span<const ScorePiece> pieces) = 0;
};

// A bounds-checked window into a segment. Holds the buffer alive.
struct SegmentRegion {
  std::shared_ptr<SegmentBuffer> buffer;
  uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
};

class SegmentMemory {
 public:
  // `allocator` must outlive this registry.
  SegmentMemory(SegmentAllocator* allocator, SegmentMemoryKnobs knobs);
  SegmentMemory(const SegmentMemory&) = delete;
  SegmentMemory& operator=(const SegmentMemory&) = delete;

  // INVALID_ARGUMENT for an invalid id or a size of 0 or above
  // segment_bytes_max; ALREADY_EXISTS; RESOURCE_EXHAUSTED at segments_max or
  // when the allocator fails.
  [[nodiscard]] absl::Status Create(SegmentId id, uint64_t size_bytes);
  // NOT_FOUND for an unknown id. See "Lifetime" above.
  [[nodiscard]] absl::Status Remove(SegmentId id);

  // NOT_FOUND for an unknown id.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<SegmentBuffer>> Find(SegmentId id) const;
  // NOT_FOUND, or OUT_OF_RANGE when the window leaves the segment.
  [[nodiscard]] absl::StatusOr<SegmentRegion> Region(SegmentId id, uint64_t offset,
                                                     uint64_t size) const;

  [[nodiscard]] absl::Status Write(SegmentId id, uint64_t offset, absl::string_view bytes);
  [[nodiscard]] absl::Status ReadInto(SegmentId id, uint64_t offset,
                                      absl::Span<uint8_t> out) const;
  [[nodiscard]] absl::StatusOr<std::string> Read(SegmentId id, uint64_t offset,
                                                 uint64_t size) const;

  // Sets the observer data services report served reads to (null: none).
  // Set it before serving starts; `observer` must outlive the registry's use.
  void set_read_observer(SegmentReadObserver* observer) {
    read_observer_.store(observer, std::memory_order_release);
  }
  // A data service served [offset, offset + size_bytes) of `id` to a reader.
  void NoteRead(SegmentId id, uint64_t offset, uint64_t size_bytes) const {
    SegmentReadObserver* observer = read_observer_.load(std::memory_order_acquire);
    if (observer != nullptr) observer->OnSegmentRead(id, offset, size_bytes);
  }

  // Sets the keeper of this store's scores for copies in and out (null:
  // none). Set it before serving starts; `keeper` must outlive the
  // registry's use.
  void set_score_keeper(SegmentScoreKeeper* keeper) {
    score_keeper_.store(keeper, std::memory_order_release);
  }
  // The scores a copy of [offset, offset + size_bytes) of `id` carries out
  // (empty without a keeper).
  std::vector<ScorePiece> CopyScores(SegmentId id, uint64_t offset, uint64_t size_bytes) const {
    SegmentScoreKeeper* keeper = score_keeper_.load(std::memory_order_acquire);
    if (keeper == nullptr) return {};
    return keeper->CopyScores(id, offset, size_bytes);
  }
  // A copy landed [offset, offset + size_bytes) of `id` carrying `pieces`.
  void InheritScores(SegmentId id, uint64_t offset, uint64_t size_bytes,
                     absl::Span<const ScorePiece> pieces) {
    SegmentScoreKeeper* keeper = score_keeper_.load(std::memory_order_acquire);
    if (keeper != nullptr && !pieces.empty()) keeper->InheritScores(id, offset, size_bytes, pieces);
  }

  // Ids in ascending order.
  std::vector<SegmentId> ids() const;
  size_t size() const;

 private:
  SegmentAllocator* const allocator_;
  const SegmentMemoryKnobs knobs_;
  mutable Mutex mu_;
  std::map<SegmentId, std::shared_ptr<SegmentBuffer>> segments_ ABSL_GUARDED_BY(mu_);
  std::atomic<SegmentReadObserver*> read_observer_{nullptr};
  std::atomic<SegmentScoreKeeper*> score_keeper_{nullptr};
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_MEMORY_SEGMENT_MEMORY_H_
