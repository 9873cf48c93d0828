// File: runtime/transport/endpoint_resolver.h
//
// Where a segment's bytes are served: segment id -> the data endpoint
// ("host:port") of the store that mounted it. The store fills it from the
// master's segment descriptors; tests and tools use the static table.
#ifndef HEATSINK_RUNTIME_TRANSPORT_ENDPOINT_RESOLVER_H_
#define HEATSINK_RUNTIME_TRANSPORT_ENDPOINT_RESOLVER_H_

#include <cstddef>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/model/ids.h"

namespace heatsink::runtime {

class EndpointResolver {
 public:
  virtual ~EndpointResolver() = default;
  // NOT_FOUND when the segment's store is unknown. Thread-safe.
  [[nodiscard]] virtual absl::StatusOr<std::string> Resolve(SegmentId segment) const = 0;
  // `endpoint`, which Resolve gave for `segment`, refused or timed out a
  // connection: the store may have died, or restarted under the same client
  // id (so the same segment ids) on another port. A resolver that learns
  // endpoints from the master drops it, so the next Resolve asks afresh.
  // Default: nothing (a fixed table knows no better). Thread-safe.
  virtual void Forget(SegmentId /*segment*/, absl::string_view /*endpoint*/) {}
};

// A thread-safe table, bounded by `entries_max`.
class StaticEndpointResolver final : public EndpointResolver {
 public:
  explicit StaticEndpointResolver(size_t entries_max = 4096) : entries_max_(entries_max) {}
  StaticEndpointResolver(const StaticEndpointResolver&) = delete;
  StaticEndpointResolver& operator=(const StaticEndpointResolver&) = delete;

  // Adds or replaces; RESOURCE_EXHAUSTED when a new entry would pass entries_max.
  [[nodiscard]] absl::Status Set(SegmentId segment, absl::string_view endpoint);
  void Erase(SegmentId segment);
  [[nodiscard]] absl::StatusOr<std::string> Resolve(SegmentId segment) const override;

 private:
  const size_t entries_max_;
  mutable Mutex mu_;
  std::map<SegmentId, std::string> endpoints_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_ENDPOINT_RESOLVER_H_
