// File: core/master/master_observers.h
//
// Extension points through which dynamic replication watches the master
// without the master knowing about it: one call per key read (the heat window
// hangs here), one call per replica removed (recreate cooldown hangs here),
// and the heat by which eviction orders optional replicas.
//
// Contract for both: the master calls observers after releasing its own
// locks, so an observer may call back into MasterService. Calls for one
// request arrive in a deterministic order; calls from concurrent requests may
// interleave, so implementations keep their own state thread-safe. Observers
// must be cheap (ReadObserver runs on the foreground read path): record,
// maybe post work to the Executor, return.
#ifndef HEATSINK_CORE_MASTER_MASTER_OBSERVERS_H_
#define HEATSINK_CORE_MASTER_MASTER_OBSERVERS_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/env/time.h"
#include "core/master/master_types.h"
#include "core/model/ids.h"

namespace heatsink {

// One successful key read through GetReplicaList or BatchGetReplicaList.
// Views are valid only during the call.
struct ReadObservation {
  TimeNs t_ns = 0;
  absl::string_view tenant;            // normalised
  absl::string_view key;
  ClientId requester;
  absl::string_view requester_domain;  // normalised
  Version version = 0;
  uint64_t size_bytes = 0;
  absl::Span<const ReplicaDescriptor> readable_replicas;  // COMPLETE, master order
};

class ReadObserver {
 public:
  virtual ~ReadObserver() = default;
  // Called once per key read that returned replicas (never per replica, never
  // for a miss).
  virtual void OnKeyRead(const ReadObservation& read) = 0;
};

// One replica that left the master.
struct ReplicaRemoval {
  TimeNs t_ns = 0;
  ObjectName name;
  ReplicaDescriptor replica;  // as it was just before removal
  RemovalCause cause = RemovalCause::kEviction;
  // True when this removal deleted the object (it had no replica left).
  bool object_deleted = false;
};

class ReplicaRemovalObserver {
 public:
  virtual ~ReplicaRemovalObserver() = default;
  virtual void OnReplicaRemoved(const ReplicaRemoval& removal) = 0;
};

// Orders optional (dynamic) replicas for eviction, which drops them before
// any object (DESIGN 12): the coldest first. Called by an eviction pass with
// no master lock held; must not call into MasterService.
class OptionalReplicaRanker {
 public:
  virtual ~OptionalReplicaRanker() = default;
  // How hot the object is now for readers of a replica in `domain` (the
  // replica's segment domain); lower is dropped first. Ties go to the older
  // read lease, then to name and segment id.
  virtual int64_t OptionalReplicaHeat(const ObjectName& name, absl::string_view domain) const = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_MASTER_OBSERVERS_H_
