#include "core/replication/cooldown.h"

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {

CooldownTable::CooldownTable(absl::string_view name, size_t max_entries, size_t reclaim_per_call)
    : name_(name), max_entries_(max_entries), reclaim_per_call_(reclaim_per_call) {
  HS_CHECK(max_entries >= 1);
  HS_CHECK(reclaim_per_call >= 1);
}

size_t CooldownTable::ReclaimLocked(TimeNs now, size_t max_count) {
  size_t n = 0;
  while (n < max_count && !by_deadline_.empty() &&
         !CooldownActive(now, by_deadline_.begin()->first)) {
    deadlines_.erase(by_deadline_.begin()->second);
    by_deadline_.erase(by_deadline_.begin());
    ++n;
  }
  stats_.reclaimed += static_cast<int64_t>(n);
  return n;
}

absl::Status CooldownTable::Start(TimeNs now, HeatKeyView key, DurationNs duration) {
  if (duration <= 0) return absl::OkStatus();
  const TimeNs deadline = now + duration;
  HeatKey owned(key);
  MutexLock lock(&mu_);
  ReclaimLocked(now, reclaim_per_call_);
  auto it = deadlines_.find(owned);
  if (it != deadlines_.end()) {
    if (deadline > it->second) {
      // An expired entry not yet reclaimed starts afresh rather than extends.
      ++(CooldownActive(now, it->second) ? stats_.extended : stats_.started);
      by_deadline_.erase({it->second, owned});
      by_deadline_.emplace(deadline, owned);
      it->second = deadline;
    }
    return absl::OkStatus();
  }
  if (deadlines_.size() >= max_entries_) {
    ++stats_.rejected;
    return absl::ResourceExhaustedError(absl::StrCat(
        name_, " cooldown table full (dynamic_replication_cooldown_entries_max = ", max_entries_,
        ")"));
  }
  deadlines_.emplace(owned, deadline);
  by_deadline_.emplace(deadline, std::move(owned));
  ++stats_.started;
  return absl::OkStatus();
}

bool CooldownTable::Active(TimeNs now, HeatKeyView key) {
  const bool active = Deadline(now, key).has_value();
  if (active) {
    MutexLock lock(&mu_);
    ++stats_.hits;
  }
  return active;
}

std::optional<TimeNs> CooldownTable::Deadline(TimeNs now, HeatKeyView key) {
  const HeatKey owned(key);
  MutexLock lock(&mu_);
  ReclaimLocked(now, reclaim_per_call_);
  const auto it = deadlines_.find(owned);
  if (it == deadlines_.end() || !CooldownActive(now, it->second)) return std::nullopt;
  return it->second;
}

void CooldownTable::Erase(HeatKeyView key) {
  const HeatKey owned(key);
  MutexLock lock(&mu_);
  const auto it = deadlines_.find(owned);
  if (it == deadlines_.end()) return;
  by_deadline_.erase({it->second, owned});
  deadlines_.erase(it);
}

size_t CooldownTable::ReclaimExpired(TimeNs now, size_t max_count) {
  MutexLock lock(&mu_);
  return ReclaimLocked(now, max_count);
}

size_t CooldownTable::size() const {
  MutexLock lock(&mu_);
  return deadlines_.size();
}

CooldownStats CooldownTable::stats() const {
  MutexLock lock(&mu_);
  CooldownStats s = stats_;
  s.size = static_cast<int64_t>(deadlines_.size());
  return s;
}

}  // namespace heatsink
