// File: runtime/store/segment_directory_resolver.h
//
// An EndpointResolver that learns where segments are served from the
// master's segment descriptors: a cached segment id -> data endpoint table,
// refreshed through `list` (for example GrpcMasterClient::ListSegments) when a
// segment is not in it. A refresh replaces the whole table, so unmounted
// segments disappear and remounted ones get their new endpoint.
//
// A cached endpoint that refuses a connection is dropped (Forget, called by
// the data movers), so a store restarted under the same client id, whose
// segments keep their ids but move to a new port, is found again at the
// next copy to it.
//
// Refreshes are rate-limited to one per `refresh_interval_ms` so that copies
// to an unknown segment cannot hammer the master; within the interval an
// unknown segment is NOT_FOUND. The interval is measured on `clock`, the
// process Env's clock (a test's ManualClock moves it without sleeping).
// Thread-safe.
#ifndef HEATSINK_RUNTIME_STORE_SEGMENT_DIRECTORY_RESOLVER_H_
#define HEATSINK_RUNTIME_STORE_SEGMENT_DIRECTORY_RESOLVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/master/master_types.h"
#include "runtime/transport/endpoint_resolver.h"

namespace heatsink::runtime {

class SegmentDirectoryResolver final : public EndpointResolver {
 public:
  using Lister = std::function<absl::StatusOr<std::vector<SegmentView>>()>;

  // `clock` (never null) must outlive the resolver.
  SegmentDirectoryResolver(const Clock* clock, Lister list, int64_t refresh_interval_ms = 100,
                           size_t entries_max = 65'536);
  SegmentDirectoryResolver(const SegmentDirectoryResolver&) = delete;
  SegmentDirectoryResolver& operator=(const SegmentDirectoryResolver&) = delete;

  // NOT_FOUND when the master does not list the segment (or lists it without
  // an endpoint); the lister's error when a due refresh fails.
  [[nodiscard]] absl::StatusOr<std::string> Resolve(SegmentId segment) const override;
  // Drops `segment` if it still resolves to `endpoint` (a concurrent refresh
  // may have replaced it already).
  void Forget(SegmentId segment, absl::string_view endpoint) override;

  int64_t refreshes() const;

 private:
  const Clock* const clock_;
  const Lister list_;
  const int64_t refresh_interval_ms_;
  const size_t entries_max_;
  mutable Mutex mu_;  // held across a refresh
  mutable std::map<SegmentId, std::string> endpoints_ ABSL_GUARDED_BY(mu_);
  mutable TimeNs last_refresh_ns_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int64_t refreshes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_STORE_SEGMENT_DIRECTORY_RESOLVER_H_
