#include "runtime/transport/endpoint_resolver.h"

#include "absl/strings/str_cat.h"

namespace heatsink::runtime {

absl::Status StaticEndpointResolver::Set(SegmentId segment, absl::string_view endpoint) {
  MutexLock lock(&mu_);
  auto it = endpoints_.find(segment);
  if (it != endpoints_.end()) {
    it->second = std::string(endpoint);
    return absl::OkStatus();
  }
  if (endpoints_.size() >= entries_max_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("endpoint table full (entries_max=", entries_max_, ")"));
  }
  endpoints_.emplace(segment, std::string(endpoint));
  return absl::OkStatus();
}

void StaticEndpointResolver::Erase(SegmentId segment) {
  MutexLock lock(&mu_);
  endpoints_.erase(segment);
}

absl::StatusOr<std::string> StaticEndpointResolver::Resolve(SegmentId segment) const {
  MutexLock lock(&mu_);
  auto it = endpoints_.find(segment);
  if (it == endpoints_.end()) {
    return absl::NotFoundError(absl::StrCat("no data endpoint known for segment ", segment.value));
  }
  return it->second;
}

}  // namespace heatsink::runtime
