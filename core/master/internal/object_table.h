// File: core/master/internal/object_table.h
//
// Object metadata, split into independently locked shards. A shard maps a
// tenant-scoped name to the object's version, size, read lease, replicas and
// its one replication task. Lookups are heterogeneous (by string views), so
// the read path allocates nothing to find an object.
//
// Iterating a shard's hash map is allowed only to collect candidates that are
// then sorted by explicit keys (eviction, sweeps, unmount); no decision or
// output ever follows hash order.
//
// Thread safety: each shard's map is guarded by that shard's mutex. Lock
// order: shards in ascending index, then (one at a time) the segment table,
// task manager or client registry.
#ifndef HEATSINK_CORE_MASTER_INTERNAL_OBJECT_TABLE_H_
#define HEATSINK_CORE_MASTER_INTERNAL_OBJECT_TABLE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/env/rng.h"
#include "core/env/time.h"
#include "core/master/internal/segment_table.h"
#include "core/master/master_types.h"

namespace heatsink::master_internal {

struct ReplicaRecord {
  ReplicaId id;
  std::shared_ptr<SegmentHandle> segment;
  uint64_t offset = 0;
  uint64_t size = 0;
  // No version of its own: every replica holds its object's version
  // (ObjectMeta::version; a record per replica cost 8 bytes per object).
  ReplicaStatus status = ReplicaStatus::kProcessing;
  ReplicaOrigin origin = ReplicaOrigin::kPut;
  bool dynamic = false;
  LeaseId lease_id;

  SegmentId segment_id() const { return segment->location.id; }
  // Bytes a COMPLETE or put replica holds as `used`; a PROCESSING copy target
  // holds them as `reserved`.
  bool holds_reserved() const {
    return origin == ReplicaOrigin::kCopy && status == ReplicaStatus::kProcessing;
  }
  // `version`: the object's (ObjectMeta::version).
  ReplicaDescriptor Describe(Version version) const;
};

struct ObjectMeta {
  Version version = 0;
  uint64_t size = 0;
  ClientId put_client;
  TimeNs put_start_ns = 0;
  bool put_in_progress = true;
  // Read lease: protected from eviction and Remove while now < this. Set to
  // the PutEnd time at first, so unread objects order by age for eviction.
  TimeNs lease_expiry_ns = 0;
  TaskId replication_task;  // at most one per key
  // One inline: most objects have one replica (a put), so most objects take
  // one allocation (their map node) besides a long key's bytes.
  absl::InlinedVector<ReplicaRecord, 1> replicas;

  int CompleteCount() const;
  const ReplicaRecord* FindReplica(ReplicaId id) const;
  ReplicaRecord* FindReplica(ReplicaId id) {
    return const_cast<ReplicaRecord*>(std::as_const(*this).FindReplica(id));
  }
  const ReplicaRecord* FindOnSegment(SegmentId id) const;
  ReplicaRecord* FindOnSegment(SegmentId id) {
    return const_cast<ReplicaRecord*>(std::as_const(*this).FindOnSegment(id));
  }
  uint64_t HeldBytes() const;  // sum over replicas
};

struct ObjectNameRef {
  absl::string_view tenant;
  absl::string_view key;
};

// Transparent hash/eq so the map is probed with ObjectNameRef.
struct ObjectNameHash {
  using is_transparent = void;
  size_t operator()(const ObjectName& n) const {
    return absl::HashOf(absl::string_view(n.tenant), absl::string_view(n.key));
  }
  size_t operator()(const ObjectNameRef& n) const { return absl::HashOf(n.tenant, n.key); }
};
struct ObjectNameEq {
  using is_transparent = void;
  static ObjectNameRef Ref(const ObjectName& n) { return {n.tenant, n.key}; }
  static ObjectNameRef Ref(const ObjectNameRef& n) { return n; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    const ObjectNameRef x = Ref(a);
    const ObjectNameRef y = Ref(b);
    return x.key == y.key && x.tenant == y.tenant;
  }
};

// Nodes, not slots: a flat map keeps name and metadata in every slot, so
// between its load factors of 7/16 and 7/8 an object costs 1.1 to 2.3 times
// their size; a node costs their size, the allocator's header and an 8-byte
// slot (measurements: docs/performance.md, "Memory per object in the
// simulator").
using ObjectMap = absl::node_hash_map<ObjectName, ObjectMeta, ObjectNameHash, ObjectNameEq>;

struct Shard {
  mutable Mutex mu;
  ObjectMap objects ABSL_GUARDED_BY(mu);
  // At most the put_start_ns of every object of this shard whose put is in
  // progress (kNoPutInProgress when the last scan found none and no put has
  // started since): PutStart lowers it, the stuck-put sweep sets it to the
  // oldest start it saw. A sweep skips the shard while no put can be stuck
  // yet, so it scans a shard about once per discard timeout instead of once
  // per sweep.
  TimeNs oldest_put_start_ns ABSL_GUARDED_BY(mu) = kNoPutInProgress;

  static constexpr TimeNs kNoPutInProgress = INT64_MAX;
};

class ObjectShards {
 public:
  explicit ObjectShards(int64_t shard_count);
  ObjectShards(const ObjectShards&) = delete;
  ObjectShards& operator=(const ObjectShards&) = delete;

  size_t size() const { return shards_.size(); }
  size_t IndexOf(const ObjectNameRef& name) const { return IndexOfHash(ObjectNameHash()(name)); }
  // The same from the name's ObjectNameHash, which is also the hash the
  // shard's map uses: a hot path hashes the name once and passes the hash
  // to both (ObjectMap::find(name, hash)).
  size_t IndexOfHash(size_t name_hash) const {
    // The hash is salted per process; only lock partitioning depends on it.
    return static_cast<size_t>(Mix64(name_hash) % shards_.size());
  }
  Shard& For(const ObjectNameRef& name) const { return *shards_[IndexOf(name)]; }
  Shard& ForHash(size_t name_hash) const { return *shards_[IndexOfHash(name_hash)]; }
  Shard& at(size_t i) const { return *shards_[i]; }

 private:
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace heatsink::master_internal

#endif  // HEATSINK_CORE_MASTER_INTERNAL_OBJECT_TABLE_H_
