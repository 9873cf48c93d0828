#include "runtime/rpc/status.h"

#include <string>

namespace heatsink::runtime {

// The two enumerations must agree number for number; a mismatch would make
// every status on the wire lie, so it is checked at compile time.
static_assert(static_cast<int>(absl::StatusCode::kOk) == grpc::StatusCode::OK);
static_assert(static_cast<int>(absl::StatusCode::kCancelled) == grpc::StatusCode::CANCELLED);
static_assert(static_cast<int>(absl::StatusCode::kUnknown) == grpc::StatusCode::UNKNOWN);
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              grpc::StatusCode::INVALID_ARGUMENT);
static_assert(static_cast<int>(absl::StatusCode::kDeadlineExceeded) ==
              grpc::StatusCode::DEADLINE_EXCEEDED);
static_assert(static_cast<int>(absl::StatusCode::kNotFound) == grpc::StatusCode::NOT_FOUND);
static_assert(static_cast<int>(absl::StatusCode::kAlreadyExists) ==
              grpc::StatusCode::ALREADY_EXISTS);
static_assert(static_cast<int>(absl::StatusCode::kPermissionDenied) ==
              grpc::StatusCode::PERMISSION_DENIED);
static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) ==
              grpc::StatusCode::RESOURCE_EXHAUSTED);
static_assert(static_cast<int>(absl::StatusCode::kFailedPrecondition) ==
              grpc::StatusCode::FAILED_PRECONDITION);
static_assert(static_cast<int>(absl::StatusCode::kAborted) == grpc::StatusCode::ABORTED);
static_assert(static_cast<int>(absl::StatusCode::kOutOfRange) == grpc::StatusCode::OUT_OF_RANGE);
static_assert(static_cast<int>(absl::StatusCode::kUnimplemented) ==
              grpc::StatusCode::UNIMPLEMENTED);
static_assert(static_cast<int>(absl::StatusCode::kInternal) == grpc::StatusCode::INTERNAL);
static_assert(static_cast<int>(absl::StatusCode::kUnavailable) == grpc::StatusCode::UNAVAILABLE);
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) == grpc::StatusCode::DATA_LOSS);
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) ==
              grpc::StatusCode::UNAUTHENTICATED);

absl::StatusCode StatusCodeFromInt(int code) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(StatusCodeFromInt(static_cast<int>(status.error_code())),
                      status.error_message());
}

}  // namespace heatsink::runtime
