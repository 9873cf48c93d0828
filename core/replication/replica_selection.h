// File: core/replication/replica_selection.h
//
// Reader-side replica selection: which of an object's readable replicas a
// reader fetches from, given the list in the master's order. A policy in core
// so the simulator and the runtime client choose identically.
//
//   first  (Mooncake): a local MEMORY replica (same host as the reader)
//          first; otherwise the first MEMORY replica in master order;
//          otherwise the first replica in master order. Extra replicas of a
//          hot object therefore do not spread remote load: every remote
//          reader goes to the same first replica.
//   spread (beyond the RFC): a local MEMORY replica first; otherwise the
//          MEMORY replicas of the lowest DomainCost from the reader (same
//          domain before cross-domain), and among those equal-cost replicas
//          the highest rendezvous score
//            StableHashCombine(reader/seed hash, object/segment hash).
//          Deterministic given reader, object and seed; a given reader keeps
//          its replica while the set is unchanged, and different readers
//          spread evenly over the replicas (removing a replica moves only the
//          readers that used it).
//   Without any MEMORY replica both fall back to the first in master order.
//
// Several local MEMORY replicas: `first` takes the first, `spread` ranks them
// by the same rendezvous score.
#ifndef HEATSINK_CORE_REPLICATION_REPLICA_SELECTION_H_
#define HEATSINK_CORE_REPLICATION_REPLICA_SELECTION_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/types/span.h"
#include "core/model/ids.h"
#include "core/replication/replication_knobs.h"

namespace heatsink {

struct ReaderIdentity {
  ClientId client;
  HostId host;
  Domain domain;  // "" means default
};

// One readable replica as returned to the reader.
struct ReadableReplica {
  SegmentId segment;
  HostId host;
  Domain domain;
  bool memory = true;  // MEMORY tier (only MEMORY exists today)
};

// Index into `replicas` (master order) of the replica to read, nullopt when
// the list is empty.
std::optional<size_t> SelectReplicaForRead(ReplicaSelectionPolicy policy,
                                           const ReaderIdentity& reader, const ObjectName& object,
                                           absl::Span<const ReadableReplica> replicas,
                                           uint64_t seed);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_REPLICA_SELECTION_H_
