// File: runtime/rpc/convert.h
//
// Conversions between the master's request/response structs
// (core/master/master_types.h) and their protobuf messages
// (proto/heatsink/master.proto). Field for field; no validation here: the
// master validates what it receives exactly as it does for in-process calls.
#ifndef HEATSINK_RUNTIME_RPC_CONVERT_H_
#define HEATSINK_RUNTIME_RPC_CONVERT_H_

#include "absl/status/statusor.h"
#include "core/master/master_types.h"
#include "heatsink/master.pb.h"

namespace heatsink::runtime {

void ToProto(const ObjectName& in, v1::ObjectName* out);
ObjectName FromProto(const v1::ObjectName& in);

void ToProto(const ReplicaDescriptor& in, v1::ReplicaDescriptor* out);
ReplicaDescriptor FromProto(const v1::ReplicaDescriptor& in);

void ToProto(const MountSegmentRequest& in, v1::MountSegmentRequest* out);
MountSegmentRequest FromProto(const v1::MountSegmentRequest& in);

void ToProto(const PutStartRequest& in, v1::PutStartRequest* out);
PutStartRequest FromProto(const v1::PutStartRequest& in);
void ToProto(const PutStartResponse& in, v1::PutStartResponse* out);
PutStartResponse FromProto(const v1::PutStartResponse& in);

void ToProto(const GetReplicaListRequest& in, v1::GetReplicaListRequest* out);
GetReplicaListRequest FromProto(const v1::GetReplicaListRequest& in);
void ToProto(const GetReplicaListResponse& in, v1::GetReplicaListResponse* out);
GetReplicaListResponse FromProto(const v1::GetReplicaListResponse& in);

void ToProto(const BatchGetReplicaListRequest& in, v1::BatchGetReplicaListRequest* out);
BatchGetReplicaListRequest FromProto(const v1::BatchGetReplicaListRequest& in);
// Each segment's location travels once per answer (`locations`, named by
// the replicas' location_index). INTERNAL for an index outside the table.
void ToProto(const BatchGetReplicaListResponse& in, v1::BatchGetReplicaListResponse* out);
[[nodiscard]] absl::StatusOr<BatchGetReplicaListResponse> FromProto(
    const v1::BatchGetReplicaListResponse& in);

// A per-key status of a batch call (code and message).
void ToProto(const absl::Status& in, v1::RpcStatus* out);
absl::Status FromProto(const v1::RpcStatus& in);

void ToProto(const BatchPutStartRequest& in, v1::BatchPutStartRequest* out);
BatchPutStartRequest FromProto(const v1::BatchPutStartRequest& in);
void ToProto(const BatchPutStartResponse& in, v1::BatchPutStartResponse* out);
BatchPutStartResponse FromProto(const v1::BatchPutStartResponse& in);
// BatchPutEnd and BatchPutRevoke carry the same (name, version) fences.
void ToProto(const BatchPutEndRequest& in, v1::BatchPutFenceRequest* out);
void ToProto(const BatchPutRevokeRequest& in, v1::BatchPutFenceRequest* out);
BatchPutEndRequest BatchPutEndFromProto(const v1::BatchPutFenceRequest& in);
BatchPutRevokeRequest BatchPutRevokeFromProto(const v1::BatchPutFenceRequest& in);
void ToProto(const BatchPutResponse& in, v1::BatchPutResponse* out);
BatchPutResponse FromProto(const v1::BatchPutResponse& in);

void ToProto(const Task& in, v1::Task* out);
Task FromProto(const v1::Task& in);
void ToProto(const ManifestEntry& in, v1::ManifestEntry* out);
ManifestEntry FromProto(const v1::ManifestEntry& in);
void ToProto(const ManifestChange& in, v1::ManifestChange* out);
ManifestChange FromProto(const v1::ManifestChange& in);

void ToProto(const CopyTaskFence& in, v1::CopyTaskFence* out);
CopyTaskFence FromProto(const v1::CopyTaskFence& in);
void ToProto(const CopyStartResponse& in, v1::CopyStartResponse* out);
CopyStartResponse FromProto(const v1::CopyStartResponse& in);

void ToProto(const MarkTaskCompleteRequest& in, v1::MarkTaskCompleteRequest* out);
MarkTaskCompleteRequest FromProto(const v1::MarkTaskCompleteRequest& in);

void ToProto(const SegmentView& in, v1::SegmentView* out);
// Location, capacity, usage and flags; the load counters stay in the master.
SegmentView FromProto(const v1::SegmentView& in);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_CONVERT_H_
