#include "runtime/store/segment_directory_resolver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/time.h"

namespace heatsink::runtime {

SegmentDirectoryResolver::SegmentDirectoryResolver(const Clock* clock, Lister list,
                                                   int64_t refresh_interval_ms, size_t entries_max)
    : clock_(clock),
      list_(std::move(list)),
      refresh_interval_ms_(refresh_interval_ms),
      entries_max_(entries_max) {
  HS_CHECK(clock_ != nullptr);
}

absl::StatusOr<std::string> SegmentDirectoryResolver::Resolve(SegmentId segment) const {
  MutexLock lock(&mu_);
  auto it = endpoints_.find(segment);
  if (it != endpoints_.end()) return it->second;
  const TimeNs now = clock_->NowNs();
  if (refreshes_ > 0 && now - last_refresh_ns_ < MsToNs(refresh_interval_ms_)) {
    return absl::NotFoundError(absl::StrCat("segment ", segment.value, " has no known endpoint"));
  }
  last_refresh_ns_ = now;
  ++refreshes_;
  absl::StatusOr<std::vector<SegmentView>> views = list_();
  if (!views.ok()) return views.status();
  std::map<SegmentId, std::string> fresh;
  for (const SegmentView& view : *views) {
    if (fresh.size() >= entries_max_) break;
    if (view.location.transport_endpoint.empty() || view.unmounting) continue;
    fresh.emplace(view.location.id, view.location.transport_endpoint);
  }
  endpoints_ = std::move(fresh);
  it = endpoints_.find(segment);
  if (it == endpoints_.end()) {
    return absl::NotFoundError(absl::StrCat("segment ", segment.value, " is not mounted"));
  }
  return it->second;
}

void SegmentDirectoryResolver::Forget(SegmentId segment, absl::string_view endpoint) {
  MutexLock lock(&mu_);
  auto it = endpoints_.find(segment);
  if (it != endpoints_.end() && it->second == endpoint) endpoints_.erase(it);
}

int64_t SegmentDirectoryResolver::refreshes() const {
  MutexLock lock(&mu_);
  return refreshes_;
}

}  // namespace heatsink::runtime
