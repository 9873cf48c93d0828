#include "core/master/internal/object_table.h"

#include "core/base/check.h"

namespace heatsink::master_internal {

ReplicaDescriptor ReplicaRecord::Describe(Version version) const {
  ReplicaDescriptor d;
  d.replica_id = id;
  d.kind = ReplicaKind::kMemory;
  d.status = status;
  d.origin = origin;
  d.segment_id = segment->location.id;
  d.offset = offset;
  d.size_bytes = size;
  d.version = version;
  d.dynamic = dynamic;
  d.lease_id = lease_id;
  d.location = LocationOf(segment);
  return d;
}

int ObjectMeta::CompleteCount() const {
  int n = 0;
  for (const ReplicaRecord& r : replicas) n += r.status == ReplicaStatus::kComplete ? 1 : 0;
  return n;
}

const ReplicaRecord* ObjectMeta::FindReplica(ReplicaId id) const {
  for (const ReplicaRecord& r : replicas) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

const ReplicaRecord* ObjectMeta::FindOnSegment(SegmentId id) const {
  for (const ReplicaRecord& r : replicas) {
    if (r.segment_id() == id) return &r;
  }
  return nullptr;
}

uint64_t ObjectMeta::HeldBytes() const {
  uint64_t bytes = 0;
  for (const ReplicaRecord& r : replicas) bytes += r.size;
  return bytes;
}

ObjectShards::ObjectShards(int64_t shard_count) {
  HS_CHECK(shard_count >= 1);
  shards_.reserve(static_cast<size_t>(shard_count));
  for (int64_t i = 0; i < shard_count; ++i) shards_.push_back(std::make_unique<Shard>());
}

}  // namespace heatsink::master_internal
