// File: runtime/rpc/convert.h
//
// Conversions between the master's request/response structs
// (core/master/master_types.h) and their protobuf messages
// (proto/heatsink/master.proto). Field for field; no validation here: the
// master validates what it receives exactly as it does for in-process calls.
#ifndef HEATSINK_RUNTIME_RPC_CONVERT_H_
#define HEATSINK_RUNTIME_RPC_CONVERT_H_

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
void ToProto(const BatchGetReplicaListResponse& in, v1::BatchGetReplicaListResponse* out);
BatchGetReplicaListResponse FromProto(const v1::BatchGetReplicaListResponse& in);

void ToProto(const Task& in, v1::Task* out);
Task FromProto(const v1::Task& in);

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
