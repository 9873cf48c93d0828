// File: runtime/rpc/status.h
//
// absl::Status <-> grpc::Status. Abseil's canonical codes are gRPC's codes
// (same names, same numbers), so the mapping is 1:1 in both directions and the
// message travels unchanged. A gRPC code outside the canonical range (never
// produced by gRPC itself) becomes UNKNOWN.
#ifndef HEATSINK_RUNTIME_RPC_STATUS_H_
#define HEATSINK_RUNTIME_RPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace heatsink::runtime {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// The same mapping for a bare integer code carried inside a message
// (BatchGetReplicaList's per-key results).
absl::StatusCode StatusCodeFromInt(int code);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_STATUS_H_
