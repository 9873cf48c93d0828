#include "runtime/rpc/convert.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/rpc/status.h"

namespace heatsink::runtime {
namespace {

void ToProto(const SegmentLocation& in, v1::SegmentLocation* out) {
  out->set_id(in.id.value);
  out->set_name(in.name);
  out->set_owner(in.owner.value);
  out->set_host(in.host);
  out->set_domain(in.domain);
  out->set_transport_endpoint(in.transport_endpoint);
  out->set_data_service_endpoint(in.data_service_endpoint);
}

SegmentLocation FromProto(const v1::SegmentLocation& in) {
  SegmentLocation out;
  out.id = SegmentId(in.id());
  out.name = in.name();
  out.owner = ClientId(in.owner());
  out.host = in.host();
  out.domain = in.domain();
  out.transport_endpoint = in.transport_endpoint();
  out.data_service_endpoint = in.data_service_endpoint();
  return out;
}

}  // namespace

void ToProto(const ObjectName& in, v1::ObjectName* out) {
  out->set_tenant(in.tenant);
  out->set_key(in.key);
}

ObjectName FromProto(const v1::ObjectName& in) { return ObjectName{in.tenant(), in.key()}; }

namespace {

// Every field of a replica descriptor but its location.
void FieldsToProto(const ReplicaDescriptor& in, v1::ReplicaDescriptor* out) {
  out->set_replica_id(in.replica_id.value);
  out->set_status(in.status == ReplicaStatus::kComplete ? v1::REPLICA_STATUS_COMPLETE
                                                        : v1::REPLICA_STATUS_PROCESSING);
  out->set_origin(in.origin == ReplicaOrigin::kCopy ? v1::REPLICA_ORIGIN_COPY
                                                    : v1::REPLICA_ORIGIN_PUT);
  out->set_segment_id(in.segment_id.value);
  out->set_offset(in.offset);
  out->set_size_bytes(in.size_bytes);
  out->set_version(in.version);
  out->set_dynamic(in.dynamic);
  out->set_lease_id(in.lease_id.value);
}

ReplicaDescriptor FieldsFromProto(const v1::ReplicaDescriptor& in) {
  ReplicaDescriptor out;
  out.replica_id = ReplicaId(in.replica_id());
  out.status = in.status() == v1::REPLICA_STATUS_COMPLETE ? ReplicaStatus::kComplete
                                                          : ReplicaStatus::kProcessing;
  out.origin = in.origin() == v1::REPLICA_ORIGIN_COPY ? ReplicaOrigin::kCopy : ReplicaOrigin::kPut;
  out.segment_id = SegmentId(in.segment_id());
  out.offset = in.offset();
  out.size_bytes = in.size_bytes();
  out.version = in.version();
  out.dynamic = in.dynamic();
  out.lease_id = LeaseId(in.lease_id());
  return out;
}

}  // namespace

void ToProto(const ReplicaDescriptor& in, v1::ReplicaDescriptor* out) {
  FieldsToProto(in, out);
  if (in.location != nullptr) ToProto(*in.location, out->mutable_location());
}

ReplicaDescriptor FromProto(const v1::ReplicaDescriptor& in) {
  ReplicaDescriptor out = FieldsFromProto(in);
  out.location = std::make_shared<const SegmentLocation>(FromProto(in.location()));
  return out;
}

void ToProto(const MountSegmentRequest& in, v1::MountSegmentRequest* out) {
  out->set_segment_id(in.segment_id.value);
  out->set_name(in.name);
  out->set_host(in.host);
  out->set_domain(in.domain);
  out->set_capacity_bytes(in.capacity_bytes);
  out->set_transport_endpoint(in.transport_endpoint);
  out->set_allocatable(in.allocatable);
  out->set_data_service_endpoint(in.data_service_endpoint);
  out->set_manifest_pending(in.manifest_pending);
}

void ToProto(const ManifestEntry& in, v1::ManifestEntry* out) {
  ToProto(in.name, out->mutable_name());
  out->set_version(in.version);
  out->set_size_bytes(in.size_bytes);
  out->set_segment_id(in.segment_id.value);
  out->set_offset(in.offset);
  out->set_complete(in.complete);
  out->set_origin(in.origin == ReplicaOrigin::kCopy ? v1::REPLICA_ORIGIN_COPY
                                                    : v1::REPLICA_ORIGIN_PUT);
  out->set_dynamic(in.dynamic);
  out->set_lease_id(in.lease_id.value);
}

ManifestEntry FromProto(const v1::ManifestEntry& in) {
  ManifestEntry out;
  out.name = FromProto(in.name());
  out.version = in.version();
  out.size_bytes = in.size_bytes();
  out.segment_id = SegmentId(in.segment_id());
  out.offset = in.offset();
  out.complete = in.complete();
  out.origin = in.origin() == v1::REPLICA_ORIGIN_COPY ? ReplicaOrigin::kCopy : ReplicaOrigin::kPut;
  out.dynamic = in.dynamic();
  out.lease_id = LeaseId(in.lease_id());
  return out;
}

void ToProto(const ManifestChange& in, v1::ManifestChange* out) {
  out->set_seq(in.seq);
  out->set_present(in.present);
  ToProto(in.entry, out->mutable_entry());
}

ManifestChange FromProto(const v1::ManifestChange& in) {
  ManifestChange out;
  out.seq = in.seq();
  out.present = in.present();
  out.entry = FromProto(in.entry());
  return out;
}

MountSegmentRequest FromProto(const v1::MountSegmentRequest& in) {
  MountSegmentRequest out;
  out.segment_id = SegmentId(in.segment_id());
  out.name = in.name();
  out.host = in.host();
  out.domain = in.domain();
  out.capacity_bytes = in.capacity_bytes();
  out.transport_endpoint = in.transport_endpoint();
  out.allocatable = in.allocatable();
  out.data_service_endpoint = in.data_service_endpoint();
  out.manifest_pending = in.manifest_pending();
  return out;
}

void ToProto(const PutStartRequest& in, v1::PutStartRequest* out) {
  ToProto(in.name, out->mutable_name());
  out->set_size_bytes(in.size_bytes);
  out->set_replica_num(in.replica_num);
  for (SegmentId s : in.preferred_segments) out->add_preferred_segments(s.value);
}

PutStartRequest FromProto(const v1::PutStartRequest& in) {
  PutStartRequest out;
  out.name = FromProto(in.name());
  out.size_bytes = in.size_bytes();
  out.replica_num = in.replica_num();
  out.preferred_segments.reserve(in.preferred_segments_size());
  for (uint64_t s : in.preferred_segments()) out.preferred_segments.push_back(SegmentId(s));
  return out;
}

void ToProto(const PutStartResponse& in, v1::PutStartResponse* out) {
  out->set_version(in.version);
  for (const ReplicaDescriptor& r : in.replicas) ToProto(r, out->add_replicas());
}

PutStartResponse FromProto(const v1::PutStartResponse& in) {
  PutStartResponse out;
  out.version = in.version();
  out.replicas.reserve(in.replicas_size());
  for (const v1::ReplicaDescriptor& r : in.replicas()) out.replicas.push_back(FromProto(r));
  return out;
}

void ToProto(const GetReplicaListRequest& in, v1::GetReplicaListRequest* out) {
  ToProto(in.name, out->mutable_name());
  out->set_requester(in.requester.value);
  out->set_requester_domain(in.requester_domain);
}

GetReplicaListRequest FromProto(const v1::GetReplicaListRequest& in) {
  GetReplicaListRequest out;
  out.name = FromProto(in.name());
  out.requester = ClientId(in.requester());
  out.requester_domain = in.requester_domain();
  return out;
}

void ToProto(const GetReplicaListResponse& in, v1::GetReplicaListResponse* out) {
  out->set_version(in.version);
  out->set_size_bytes(in.size_bytes);
  for (const ReplicaDescriptor& r : in.replicas) ToProto(r, out->add_replicas());
  out->set_lease_expiry_ns(in.lease_expiry_ns);
}

GetReplicaListResponse FromProto(const v1::GetReplicaListResponse& in) {
  GetReplicaListResponse out;
  out.version = in.version();
  out.size_bytes = in.size_bytes();
  out.replicas.reserve(in.replicas_size());
  for (const v1::ReplicaDescriptor& r : in.replicas()) out.replicas.push_back(FromProto(r));
  out.lease_expiry_ns = in.lease_expiry_ns();
  return out;
}

void ToProto(const BatchGetReplicaListRequest& in, v1::BatchGetReplicaListRequest* out) {
  for (const ObjectName& n : in.names) ToProto(n, out->add_names());
  out->set_requester(in.requester.value);
  out->set_requester_domain(in.requester_domain);
}

BatchGetReplicaListRequest FromProto(const v1::BatchGetReplicaListRequest& in) {
  BatchGetReplicaListRequest out;
  out.names.reserve(in.names_size());
  for (const v1::ObjectName& n : in.names()) out.names.push_back(FromProto(n));
  out.requester = ClientId(in.requester());
  out.requester_domain = in.requester_domain();
  return out;
}

namespace {

// Per-key results of a batch call: a status each, and the response where it
// is OK (BatchGetReplicaList, BatchPutStart).
template <typename Result, typename ProtoResponse>
void ResultsToProto(const std::vector<absl::StatusOr<Result>>& in, ProtoResponse* out) {
  for (const absl::StatusOr<Result>& r : in) {
    auto* result = out->add_results();
    runtime::ToProto(r.status(), result->mutable_status());
    if (r.ok()) runtime::ToProto(*r, result->mutable_response());
  }
}

template <typename Result, typename ProtoResponse>
std::vector<absl::StatusOr<Result>> ResultsFromProto(const ProtoResponse& in) {
  std::vector<absl::StatusOr<Result>> out;
  out.reserve(in.results_size());
  for (const auto& r : in.results()) {
    absl::Status status = runtime::FromProto(r.status());
    if (status.ok()) {
      out.push_back(runtime::FromProto(r.response()));
    } else {
      out.push_back(std::move(status));
    }
  }
  return out;
}

}  // namespace

// A batch answer carries each segment's location once, in `locations`; its
// replicas name it by location_index (1-based). The master hands out one
// SegmentLocation object per segment, so replicas sharing a segment share the
// pointer the table is keyed on.
void ToProto(const BatchGetReplicaListResponse& in, v1::BatchGetReplicaListResponse* out) {
  absl::flat_hash_map<const SegmentLocation*, uint32_t> index;
  for (const absl::StatusOr<GetReplicaListResponse>& r : in.results) {
    v1::BatchGetReplicaListResult* result = out->add_results();
    runtime::ToProto(r.status(), result->mutable_status());
    if (!r.ok()) continue;
    v1::GetReplicaListResponse* response = result->mutable_response();
    response->set_version(r->version);
    response->set_size_bytes(r->size_bytes);
    response->set_lease_expiry_ns(r->lease_expiry_ns);
    for (const ReplicaDescriptor& replica : r->replicas) {
      v1::ReplicaDescriptor* proto = response->add_replicas();
      FieldsToProto(replica, proto);
      if (replica.location == nullptr) continue;
      auto [it, added] = index.try_emplace(replica.location.get(),
                                           static_cast<uint32_t>(out->locations_size()) + 1);
      if (added) ToProto(*replica.location, out->add_locations());
      proto->set_location_index(it->second);
    }
  }
}

absl::StatusOr<BatchGetReplicaListResponse> FromProto(const v1::BatchGetReplicaListResponse& in) {
  std::vector<std::shared_ptr<const SegmentLocation>> locations;
  locations.reserve(in.locations_size());
  for (const v1::SegmentLocation& l : in.locations()) {
    locations.push_back(std::make_shared<const SegmentLocation>(FromProto(l)));
  }
  BatchGetReplicaListResponse out;
  out.results.reserve(in.results_size());
  for (const v1::BatchGetReplicaListResult& r : in.results()) {
    absl::Status status = runtime::FromProto(r.status());
    if (!status.ok()) {
      out.results.push_back(std::move(status));
      continue;
    }
    GetReplicaListResponse one;
    one.version = r.response().version();
    one.size_bytes = r.response().size_bytes();
    one.lease_expiry_ns = r.response().lease_expiry_ns();
    one.replicas.reserve(r.response().replicas_size());
    for (const v1::ReplicaDescriptor& proto : r.response().replicas()) {
      const uint32_t i = proto.location_index();
      if (i == 0) {
        one.replicas.push_back(FromProto(proto));
        continue;
      }
      if (i > locations.size()) {
        return absl::InternalError(absl::StrCat("a replica names location ", i, " of ",
                                                locations.size(), " in a batch answer"));
      }
      ReplicaDescriptor replica = FieldsFromProto(proto);
      replica.location = locations[i - 1];
      one.replicas.push_back(std::move(replica));
    }
    out.results.push_back(std::move(one));
  }
  return out;
}

void ToProto(const absl::Status& in, v1::RpcStatus* out) {
  out->set_code(static_cast<int>(in.code()));
  out->set_message(std::string(in.message()));
}

absl::Status FromProto(const v1::RpcStatus& in) {
  return absl::Status(StatusCodeFromInt(in.code()), in.message());
}

void ToProto(const BatchPutStartRequest& in, v1::BatchPutStartRequest* out) {
  for (const ObjectName& n : in.names) ToProto(n, out->add_names());
  for (uint64_t size : in.sizes_bytes) out->add_sizes_bytes(size);
  out->set_replica_num(in.replica_num);
  for (SegmentId s : in.preferred_segments) out->add_preferred_segments(s.value);
}

BatchPutStartRequest FromProto(const v1::BatchPutStartRequest& in) {
  BatchPutStartRequest out;
  out.names.reserve(in.names_size());
  for (const v1::ObjectName& n : in.names()) out.names.push_back(FromProto(n));
  out.sizes_bytes.assign(in.sizes_bytes().begin(), in.sizes_bytes().end());
  out.replica_num = in.replica_num();
  for (uint64_t s : in.preferred_segments()) out.preferred_segments.push_back(SegmentId(s));
  return out;
}

void ToProto(const BatchPutStartResponse& in, v1::BatchPutStartResponse* out) {
  ResultsToProto(in.results, out);
}

BatchPutStartResponse FromProto(const v1::BatchPutStartResponse& in) {
  return BatchPutStartResponse{ResultsFromProto<PutStartResponse>(in)};
}

namespace {

template <typename Fence>
void FencesToProto(const std::vector<Fence>& in, v1::BatchPutFenceRequest* out) {
  for (const Fence& f : in) {
    v1::PutFenceRequest* p = out->add_puts();
    runtime::ToProto(f.name, p->mutable_name());
    p->set_version(f.version);
  }
}

template <typename Fence>
std::vector<Fence> FencesFromProto(const v1::BatchPutFenceRequest& in) {
  std::vector<Fence> out;
  out.reserve(in.puts_size());
  for (const v1::PutFenceRequest& p : in.puts()) {
    out.push_back(Fence{runtime::FromProto(p.name()), p.version()});
  }
  return out;
}

}  // namespace

void ToProto(const BatchPutEndRequest& in, v1::BatchPutFenceRequest* out) {
  FencesToProto(in.puts, out);
}
void ToProto(const BatchPutRevokeRequest& in, v1::BatchPutFenceRequest* out) {
  FencesToProto(in.puts, out);
}
BatchPutEndRequest BatchPutEndFromProto(const v1::BatchPutFenceRequest& in) {
  return BatchPutEndRequest{FencesFromProto<PutEndRequest>(in)};
}
BatchPutRevokeRequest BatchPutRevokeFromProto(const v1::BatchPutFenceRequest& in) {
  return BatchPutRevokeRequest{FencesFromProto<PutRevokeRequest>(in)};
}

void ToProto(const BatchPutResponse& in, v1::BatchPutResponse* out) {
  for (const absl::Status& r : in.results) ToProto(r, out->add_results());
}

BatchPutResponse FromProto(const v1::BatchPutResponse& in) {
  BatchPutResponse out;
  out.results.reserve(in.results_size());
  for (const v1::RpcStatus& r : in.results()) out.results.push_back(FromProto(r));
  return out;
}

void ToProto(const Task& in, v1::Task* out) {
  out->set_id(in.id.value);
  out->set_status(in.status == TaskStatus::kProcessing ? v1::TASK_STATUS_PROCESSING
                                                       : v1::TASK_STATUS_PENDING);
  out->set_assigned_client(in.assigned_client.value);
  v1::ReplicaCopyPayload* copy = out->mutable_copy();
  ToProto(in.copy.name, copy->mutable_name());
  copy->set_version(in.copy.version);
  copy->set_source_replica(in.copy.source_replica.value);
  copy->set_source_segment(in.copy.source_segment.value);
  copy->set_source_offset(in.copy.source_offset);
  copy->set_target_segment(in.copy.target_segment.value);
  copy->set_size_bytes(in.copy.size_bytes);
  copy->set_lease_id(in.copy.lease_id.value);
  out->set_created_ns(in.created_ns);
  out->set_updated_ns(in.updated_ns);
}

Task FromProto(const v1::Task& in) {
  Task out;
  out.id = TaskId(in.id());
  out.type = TaskType::kReplicaCopy;
  out.status =
      in.status() == v1::TASK_STATUS_PROCESSING ? TaskStatus::kProcessing : TaskStatus::kPending;
  out.assigned_client = ClientId(in.assigned_client());
  const v1::ReplicaCopyPayload& copy = in.copy();
  out.copy.name = FromProto(copy.name());
  out.copy.version = copy.version();
  out.copy.source_replica = ReplicaId(copy.source_replica());
  out.copy.source_segment = SegmentId(copy.source_segment());
  out.copy.source_offset = copy.source_offset();
  out.copy.target_segment = SegmentId(copy.target_segment());
  out.copy.size_bytes = copy.size_bytes();
  out.copy.lease_id = LeaseId(copy.lease_id());
  out.created_ns = in.created_ns();
  out.updated_ns = in.updated_ns();
  return out;
}

void ToProto(const CopyTaskFence& in, v1::CopyTaskFence* out) {
  out->set_task_id(in.task_id.value);
  out->set_version(in.version);
  out->set_lease_id(in.lease_id.value);
}

CopyTaskFence FromProto(const v1::CopyTaskFence& in) {
  return CopyTaskFence{TaskId(in.task_id()), in.version(), LeaseId(in.lease_id())};
}

void ToProto(const CopyStartResponse& in, v1::CopyStartResponse* out) {
  out->set_target_replica(in.target_replica.value);
  out->set_source_segment(in.range.source_segment.value);
  out->set_source_offset(in.range.source_offset);
  out->set_target_segment(in.range.target_segment.value);
  out->set_target_offset(in.range.target_offset);
  out->set_size_bytes(in.range.size_bytes);
  ToProto(in.range.object, out->mutable_object());
}

CopyStartResponse FromProto(const v1::CopyStartResponse& in) {
  CopyStartResponse out;
  out.target_replica = ReplicaId(in.target_replica());
  out.range.source_segment = SegmentId(in.source_segment());
  out.range.source_offset = in.source_offset();
  out.range.target_segment = SegmentId(in.target_segment());
  out.range.target_offset = in.target_offset();
  out.range.size_bytes = in.size_bytes();
  out.range.object = FromProto(in.object());
  return out;
}

void ToProto(const MarkTaskCompleteRequest& in, v1::MarkTaskCompleteRequest* out) {
  out->set_task_id(in.task_id.value);
  out->set_succeeded(in.succeeded);
  out->set_message(in.message);
}

MarkTaskCompleteRequest FromProto(const v1::MarkTaskCompleteRequest& in) {
  MarkTaskCompleteRequest out;
  out.task_id = TaskId(in.task_id());
  out.succeeded = in.succeeded();
  out.message = in.message();
  return out;
}

void ToProto(const SegmentView& in, v1::SegmentView* out) {
  ToProto(in.location, out->mutable_location());
  out->set_capacity_bytes(in.capacity_bytes);
  out->set_used_bytes(in.used_bytes);
  out->set_reserved_bytes(in.reserved_bytes);
  out->set_allocatable(in.allocatable);
  out->set_replica_count(in.replica_count);
}

SegmentView FromProto(const v1::SegmentView& in) {
  SegmentView out;
  out.location = FromProto(in.location());
  out.capacity_bytes = in.capacity_bytes();
  out.used_bytes = in.used_bytes();
  out.reserved_bytes = in.reserved_bytes();
  const uint64_t taken = out.used_bytes + out.reserved_bytes;
  out.free_bytes = taken < out.capacity_bytes ? out.capacity_bytes - taken : 0;
  out.allocatable = in.allocatable();
  out.replica_count = in.replica_count();
  return out;
}

}  // namespace heatsink::runtime
