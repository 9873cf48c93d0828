// File: core/master/dynamic_copy_calls.h
//
// The master-side entry points of the dynamic (leased) copy lifecycle, as an
// interface so that callers in core/worker (LocalMasterClient) and the
// runtime's RPC services can reach dynamic replication's lease checks without
// depending on core/replication. core/replication's ReplicatedMaster
// implements it; without it, callers fall back to MasterService's
// Leased* calls (fence checks only).
//
// Requests are the task fences of master_types.h: task id, plus the lease id
// and version recorded in the task. Thread-safe.
#ifndef HEATSINK_CORE_MASTER_DYNAMIC_COPY_CALLS_H_
#define HEATSINK_CORE_MASTER_DYNAMIC_COPY_CALLS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/master/master_types.h"
#include "core/model/ids.h"

namespace heatsink {

class DynamicCopyCalls {
 public:
  virtual ~DynamicCopyCalls() = default;
  [[nodiscard]] virtual absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(
      ClientId client, const CopyStartRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyEnd(ClientId client,
                                                           const CopyEndRequest& req) = 0;
  [[nodiscard]] virtual absl::Status DynamicReplicaCopyRevoke(ClientId client,
                                                              const CopyRevokeRequest& req) = 0;
  // Whether the copy lease of `query` lets `query.reader` read the range of
  // the lease's source segment: OK (with the lease's remaining time) when
  // the lease is live (granted or in flight, not expired), `asker` is the
  // lease's source client (the store that serves the source segment), the
  // reader is the source client or the owner of the lease's target segment,
  // and the range lies within the source replica. Otherwise NOT_FOUND (no
  // live lease of that id), PERMISSION_DENIED (another asker or reader),
  // OUT_OF_RANGE (another segment or range). Changes nothing.
  [[nodiscard]] virtual absl::StatusOr<CopyLeaseGrant> CheckCopyLease(
      ClientId asker, const CopyLeaseQuery& query) = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_MASTER_DYNAMIC_COPY_CALLS_H_
