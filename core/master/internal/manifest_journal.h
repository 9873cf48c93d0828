// File: core/master/internal/manifest_journal.h
//
// What each store must learn about its own segments so that its manifest
// stays the master's view of them: the latest change of every
// (segment, offset) the store has not acknowledged yet. Changes coalesce per
// range (a put started and ended before the store fetched is one change), so
// a store that falls behind costs at most one record per range, never a
// growing log. Sequence numbers are master-wide and increasing; a store
// applies changes in sequence order and acknowledges the highest it applied
// with its next FetchTasks.
//
// Thread safety: every method locks the journal's own mutex and calls
// nothing else while holding it (lock order: after the object shards, like
// the segment table).
#ifndef HEATSINK_CORE_MASTER_INTERNAL_MANIFEST_JOURNAL_H_
#define HEATSINK_CORE_MASTER_INTERNAL_MANIFEST_JOURNAL_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "core/base/mutex.h"
#include "core/master/master_types.h"

namespace heatsink::master_internal {

class ManifestJournal {
 public:
  ManifestJournal() = default;
  ManifestJournal(const ManifestJournal&) = delete;
  ManifestJournal& operator=(const ManifestJournal&) = delete;

  // Records that `owner`'s store now holds `entry` at (segment, offset).
  void Put(ClientId owner, const ManifestEntry& entry);
  // Records that `owner`'s store no longer holds anything at (segment, offset).
  void Remove(ClientId owner, SegmentId segment, uint64_t offset);
  // Forgets every change of `owner` (its store left or was reaped; a store
  // that comes back reports its manifest again).
  void DropClient(ClientId owner);
  // Forgets the changes of one unmounted segment.
  void DropSegment(ClientId owner, SegmentId segment);
  // Drops `owner`'s changes up to `ack_seq` and returns up to `max` of the
  // rest, in sequence order.
  std::vector<ManifestChange> Fetch(ClientId owner, uint64_t ack_seq, size_t max);
  // Changes not yet acknowledged, over every store.
  int64_t pending() const;

 private:
  using RangeKey = std::pair<SegmentId, uint64_t>;
  struct ClientChanges {
    absl::btree_map<RangeKey, ManifestChange> by_range;
    absl::btree_map<uint64_t, RangeKey> by_seq;
  };
  void Record(ClientId owner, RangeKey key, ManifestChange change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  absl::btree_map<ClientId, ClientChanges> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_MANIFEST_JOURNAL_H_
