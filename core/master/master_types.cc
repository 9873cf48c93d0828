#include "core/master/master_types.h"

namespace heatsink {

absl::string_view ReplicaStatusName(ReplicaStatus s) {
  switch (s) {
    case ReplicaStatus::kProcessing:
      return "PROCESSING";
    case ReplicaStatus::kComplete:
      return "COMPLETE";
  }
  return "UNKNOWN";
}

absl::string_view ReplicaOriginName(ReplicaOrigin o) {
  switch (o) {
    case ReplicaOrigin::kPut:
      return "put";
    case ReplicaOrigin::kCopy:
      return "copy";
  }
  return "unknown";
}

absl::string_view TaskTypeName(TaskType t) {
  switch (t) {
    case TaskType::kReplicaCopy:
      return "REPLICA_COPY";
  }
  return "UNKNOWN";
}

absl::string_view TaskStatusName(TaskStatus s) {
  switch (s) {
    case TaskStatus::kPending:
      return "PENDING";
    case TaskStatus::kProcessing:
      return "PROCESSING";
  }
  return "UNKNOWN";
}

absl::string_view RemovalCauseName(RemovalCause c) {
  switch (c) {
    case RemovalCause::kEviction:
      return "eviction";
    case RemovalCause::kUnmount:
      return "unmount";
    case RemovalCause::kClientDead:
      return "client_dead";
    case RemovalCause::kRemove:
      return "remove";
    case RemovalCause::kPutRevoked:
      return "put_revoked";
    case RemovalCause::kPutDiscarded:
      return "put_discarded";
    case RemovalCause::kCopyRevoked:
      return "copy_revoked";
    case RemovalCause::kCopyTimedOut:
      return "copy_timed_out";
    case RemovalCause::kCopyCancelled:
      return "copy_cancelled";
    case RemovalCause::kSuperseded:
      return "superseded";
    case RemovalCause::kReleased:
      return "released";
  }
  return "unknown";
}

}  // namespace heatsink
