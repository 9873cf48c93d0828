// File: core/master/internal/segment_table.h
//
// The master's segment table: mounted segments, their byte accounting (used,
// reserved), their range allocators, placement of new put replicas (preferred
// segments, then `random` or `free_ratio_first`), copy-target reservations,
// and the discarded-put ranges that wait for their release timeout.
//
// Accounting: used = bytes of put replicas (PROCESSING or COMPLETE), COMPLETE
// copy replicas and discarded puts; reserved = bytes of copy targets between
// CopyStart and CopyEnd. The allocator's allocated bytes always equal
// used + reserved.
//
// Thread safety: every method locks the table's own mutex. Lock order in the
// master: object shard before segment table; nothing here calls out or takes
// another master lock while holding its own.
#ifndef HEATSINK_CORE_MASTER_INTERNAL_SEGMENT_TABLE_H_
#define HEATSINK_CORE_MASTER_INTERNAL_SEGMENT_TABLE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "absl/types/span.h"
#include "core/env/rng.h"
#include "core/env/time.h"
#include "core/master/internal/range_allocator.h"
#include "core/master/master_knobs.h"
#include "core/master/master_types.h"

namespace heatsink::master_internal {

// Shared by the segment record, every replica on the segment and every task
// that uses it. The location is immutable; the counters are updated without
// the table lock (the read path bumps replica_lists_served_total).
struct SegmentHandle {
  explicit SegmentHandle(SegmentLocation loc) : location(std::move(loc)) {}
  SegmentHandle(const SegmentHandle&) = delete;
  SegmentHandle& operator=(const SegmentHandle&) = delete;

  const SegmentLocation location;
  std::atomic<int64_t> copy_tasks_as_source{0};
  std::atomic<int64_t> copies_in_flight_as_source{0};
  std::atomic<int64_t> copies_in_flight_as_target{0};
  std::atomic<int64_t> replica_lists_served_total{0};

  SegmentLoadView Load() const;
};

// A location handle for descriptors: shares the handle's control block.
inline std::shared_ptr<const SegmentLocation> LocationOf(
    const std::shared_ptr<SegmentHandle>& handle) {
  return std::shared_ptr<const SegmentLocation>(handle, &handle->location);
}

struct Allocation {
  std::shared_ptr<SegmentHandle> segment;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Per-segment numbers CheckInvariants compares with the object table.
struct SegmentAccounting {
  SegmentId id;
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;
  uint64_t discarded_bytes = 0;
  uint64_t allocator_allocated_bytes = 0;
  int64_t replica_count = 0;
  bool unmounting = false;
  SegmentLoadView load;
  const SegmentHandle* instance = nullptr;  // identity of the mounted instance
};

struct UsageTotals {
  uint64_t capacity_bytes = 0;
  uint64_t used_bytes = 0;
  uint64_t reserved_bytes = 0;
  // Of used_bytes: ranges awaiting release (DiscardPut), already on their way
  // out.
  uint64_t discarded_bytes = 0;
};

class SegmentTable {
 public:
  SegmentTable(const MasterKnobs& knobs, Rng allocation_rng);
  SegmentTable(const SegmentTable&) = delete;
  SegmentTable& operator=(const SegmentTable&) = delete;

  // Mounts a segment owned by `owner`. Returns true when newly mounted, false
  // when an identical segment is already mounted (idempotent). ALREADY_EXISTS
  // when the id is mounted with different parameters, UNAVAILABLE while it is
  // being unmounted, RESOURCE_EXHAUSTED at segments_max or
  // segments_per_client_max. REQUIRES: the request was validated.
  [[nodiscard]] absl::StatusOr<bool> Mount(ClientId owner, const MountSegmentRequest& req);

  // Starts unmounting: the segment takes no new allocations from now on.
  // Returns nullptr when the id is unknown (idempotent unmount).
  // PERMISSION_DENIED when `caller` is valid and is not the owner (an invalid
  // caller means the master itself, for dead clients).
  [[nodiscard]] absl::StatusOr<std::shared_ptr<SegmentHandle>> BeginUnmount(ClientId caller,
                                                                          SegmentId id);
  // Drains (false) or undrains (true) a mounted segment: a non-allocatable
  // segment keeps its replicas readable but receives no new put or copy.
  // NOT_FOUND for an unknown or unmounting id; PERMISSION_DENIED as for
  // BeginUnmount.
  [[nodiscard]] absl::Status SetAllocatable(ClientId caller, SegmentId id, bool allocatable);
  // Drops the segment instance `handle` and any discarded-put ranges on it;
  // no-op when that instance is already gone. REQUIRES: no replica remains on
  // it.
  void FinishUnmount(const std::shared_ptr<SegmentHandle>& handle);

  // Allocates `replica_num` ranges of `size` bytes on distinct segments:
  // preferred segments first (in order, skipping unusable ones), then the
  // strategy. All or nothing: RESOURCE_EXHAUSTED when not enough segments
  // have room. `*eviction_may_help` is set to whether enough allocatable
  // segments exist that freeing bytes could make the allocation succeed.
  [[nodiscard]] absl::StatusOr<std::vector<Allocation>> AllocateForPut(
      uint64_t size, uint32_t replica_num, absl::Span<const SegmentId> preferred,
      bool* eviction_may_help);

  // Takes [offset, offset + size) on `segment` for a replica a store reported
  // in its manifest, counted as used (like a put replica). NOT_FOUND: not
  // mounted (or unmounting); PERMISSION_DENIED: `owner` does not own it;
  // OUT_OF_RANGE: beyond the segment's capacity; ALREADY_EXISTS: overlaps a
  // range already taken (another replica, or a discarded one).
  [[nodiscard]] absl::StatusOr<Allocation> ClaimRange(ClientId owner, SegmentId segment,
                                                      uint64_t offset, uint64_t size);
  // Ends the manifest-pending state of `owner`'s segments (its last
  // manifest report arrived): they take puts and copies again.
  void EndManifest(ClientId owner);

  // Checks that `target` could take a copy of `size` bytes now: mounted, not
  // unmounting (NOT_FOUND), allocatable (FAILED_PRECONDITION), enough free
  // bytes (RESOURCE_EXHAUSTED). Returns its handle.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<SegmentHandle>> CheckCopyTarget(SegmentId target,
                                                                             uint64_t size) const;
  // Reserves a range on `target` for a copy (same errors as CheckCopyTarget,
  // RESOURCE_EXHAUSTED also when fragmentation leaves no single range).
  [[nodiscard]] absl::StatusOr<Allocation> ReserveCopyTarget(SegmentId target, uint64_t size);
  // The mounted, not unmounting segment, or nullptr.
  std::shared_ptr<SegmentHandle> FindMounted(SegmentId id) const;

  // Accounting transitions. REQUIRES (checked): the segment exists and the
  // bytes are accounted as stated.
  void FreeUsed(SegmentId id, uint64_t offset, uint64_t size);
  void FreeReserved(SegmentId id, uint64_t offset, uint64_t size);
  void CommitReserved(SegmentId id, uint64_t size);  // copy ended: reserved -> used

  // Moves a discarded put's ranges (or a dropped dynamic replica's, whose
  // object is still read-leased) to the discarded table, freed at
  // `release_at_ns`. RESOURCE_EXHAUSTED (and no change) at discarded_puts_max.
  // The ranges stay in `used`; the replicas are no longer counted.
  [[nodiscard]] absl::Status DiscardPut(absl::Span<const Allocation> ranges, TimeNs release_at_ns);
  // Frees every discarded put whose release time has come. Returns how many.
  int64_t ReleaseDiscarded(TimeNs now);

  // (used + reserved - discarded) / capacity over mounted segments is above
  // the ratio.
  bool AboveRatio(double ratio) const;
  UsageTotals Totals() const;
  int64_t segment_count() const;
  int64_t discarded_put_count() const;

  // Owners of mounted segments, by segment id.
  std::vector<std::pair<SegmentId, ClientId>> Owners() const;
  std::vector<SegmentView> List() const;
  std::optional<SegmentView> Get(SegmentId id) const;
  std::vector<SegmentAccounting> Accounting() const;

 private:
  struct SegmentRecord {
    std::shared_ptr<SegmentHandle> handle;
    RangeAllocator allocator;
    uint64_t used_bytes = 0;
    uint64_t reserved_bytes = 0;
    uint64_t discarded_bytes = 0;
    int64_t replica_count = 0;
    bool allocatable = true;
    bool unmounting = false;
    // Mounted by a store that has not finished reporting its manifest.
    bool manifest_pending = false;
  };
  struct DiscardedPut {
    std::vector<std::pair<SegmentId, std::pair<uint64_t, uint64_t>>> ranges;  // id, (offset, size)
  };

  bool Usable(const SegmentRecord& r, uint64_t size) const;
  SegmentView ViewOf(const SegmentRecord& r) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  SegmentRecord& MustFind(SegmentId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AllocateForPut found fewer than replica_num places: gives back what
  // `taken` holds and explains why (all or nothing).
  absl::Status RollBackPut(const std::vector<Allocation>& taken, uint64_t size,
                           uint32_t replica_num, bool* eviction_may_help)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RebuildOrder() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const MasterKnobs knobs_;
  mutable Mutex mu_;
  Rng rng_ ABSL_GUARDED_BY(mu_);
  // Node-based, so records never move: `ordered_` lists them in id order
  // (rebuilt on mount and unmount) and AllocateForPut scans that array
  // instead of walking the tree.
  std::map<SegmentId, SegmentRecord> segments_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<SegmentId, SegmentRecord*>> ordered_ ABSL_GUARDED_BY(mu_);
  // AllocateForPut's candidate list, kept so that a put allocates nothing
  // for it.
  std::vector<std::pair<SegmentId, SegmentRecord*>> candidates_ ABSL_GUARDED_BY(mu_);
  UsageTotals totals_ ABSL_GUARDED_BY(mu_);
  uint64_t next_discard_seq_ ABSL_GUARDED_BY(mu_) = 1;
  // (release time, sequence) -> ranges; released in that order.
  std::map<std::pair<TimeNs, uint64_t>, DiscardedPut> discarded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_SEGMENT_TABLE_H_
