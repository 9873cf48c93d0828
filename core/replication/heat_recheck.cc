#include "core/replication/heat_recheck.h"

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {

HeatRecheckQueue::HeatRecheckQueue(size_t max_entries) : max_entries_(max_entries) {
  HS_CHECK(max_entries >= 1);
}

absl::Status HeatRecheckQueue::RoomLocked() const {
  if (waits_.size() < max_entries_) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("heat recheck table full (", max_entries_, " keys)"));
}

void HeatRecheckQueue::EraseLocked(const HeatKey& key, const Wait& wait) {
  if (const TimeNs* due = std::get_if<TimeNs>(&wait)) {
    by_due_.erase({*due, key});
    return;
  }
  const HeatKey& blocker = std::get<HeatKey>(wait);
  auto it = by_blocker_.find(blocker);
  HS_CHECK(it != by_blocker_.end());
  it->second.erase(key);
  if (it->second.empty()) by_blocker_.erase(it);
}

absl::Status HeatRecheckQueue::Schedule(TimeNs due_ns, HeatKeyView key_view) {
  MutexLock lock(&mu_);
  HeatKey key(key_view);
  auto it = waits_.find(key);
  if (it != waits_.end()) {
    if (const TimeNs* due = std::get_if<TimeNs>(&it->second); due != nullptr && *due <= due_ns) {
      return absl::OkStatus();
    }
    EraseLocked(key, it->second);
    it->second = due_ns;
  } else {
    if (absl::Status room = RoomLocked(); !room.ok()) return room;
    waits_.emplace(key, due_ns);
  }
  by_due_.emplace(due_ns, std::move(key));
  return absl::OkStatus();
}

absl::Status HeatRecheckQueue::Park(const HeatKey& blocker, HeatKeyView key_view) {
  MutexLock lock(&mu_);
  HeatKey key(key_view);
  auto it = waits_.find(key);
  if (it != waits_.end()) {
    if (std::holds_alternative<TimeNs>(it->second)) return absl::OkStatus();
    EraseLocked(key, it->second);
    it->second = blocker;
  } else {
    if (absl::Status room = RoomLocked(); !room.ok()) return room;
    waits_.emplace(key, blocker);
  }
  by_blocker_[blocker].insert(std::move(key));
  return absl::OkStatus();
}

size_t HeatRecheckQueue::ReleaseParked(const HeatKey& blocker, TimeNs now) {
  MutexLock lock(&mu_);
  auto it = by_blocker_.find(blocker);
  if (it == by_blocker_.end()) return 0;
  const std::set<HeatKey> keys = std::move(it->second);
  by_blocker_.erase(it);
  for (const HeatKey& key : keys) {
    waits_.at(key) = now;
    by_due_.emplace(now, key);
  }
  return keys.size();
}

std::vector<HeatKey> HeatRecheckQueue::TakeDue(TimeNs now, size_t max_count) {
  MutexLock lock(&mu_);
  std::vector<HeatKey> due;
  while (!by_due_.empty() && due.size() < max_count && by_due_.begin()->first <= now) {
    auto node = by_due_.extract(by_due_.begin());
    waits_.erase(node.value().second);
    due.push_back(std::move(node.value().second));
  }
  return due;
}

std::optional<TimeNs> HeatRecheckQueue::NextDue() const {
  MutexLock lock(&mu_);
  if (by_due_.empty()) return std::nullopt;
  return by_due_.begin()->first;
}

void HeatRecheckQueue::Clear() {
  MutexLock lock(&mu_);
  waits_.clear();
  by_due_.clear();
  by_blocker_.clear();
}

size_t HeatRecheckQueue::scheduled() const {
  MutexLock lock(&mu_);
  return by_due_.size();
}

size_t HeatRecheckQueue::parked() const {
  MutexLock lock(&mu_);
  return waits_.size() - by_due_.size();
}

}  // namespace heatsink
