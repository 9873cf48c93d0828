#include "core/replication/admission_trigger_queue.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink {

AdmissionTriggerQueue::AdmissionTriggerQueue(size_t max_size) : max_size_(max_size) {
  HS_CHECK(max_size >= 1);
}

absl::StatusOr<TriggerEnqueue> AdmissionTriggerQueue::Enqueue(TimeNs now, HeatKeyView key) {
  HeatKey owned(key);
  MutexLock lock(&mu_);
  if (waiting_.contains(owned)) {
    ++stats_.duplicates;
    return TriggerEnqueue{.queued = false, .queue_was_empty = false};
  }
  if (fifo_.size() >= max_size_) {
    ++stats_.overflows;
    return absl::ResourceExhaustedError(absl::StrCat(
        "admission trigger queue full (dynamic_replication_trigger_queue_max = ", max_size_, ")"));
  }
  const bool was_empty = fifo_.empty();
  waiting_.insert(owned);
  fifo_.push_back(AdmissionTrigger{std::move(owned), now});
  ++stats_.enqueued;
  return TriggerEnqueue{.queued = true, .queue_was_empty = was_empty};
}

std::optional<AdmissionTrigger> AdmissionTriggerQueue::Take() {
  MutexLock lock(&mu_);
  if (fifo_.empty()) return std::nullopt;
  AdmissionTrigger t = std::move(fifo_.front());
  fifo_.pop_front();
  waiting_.erase(t.key);
  ++stats_.taken;
  return t;
}

std::vector<AdmissionTrigger> AdmissionTriggerQueue::TakeUpTo(size_t max_count) {
  std::vector<AdmissionTrigger> out;
  MutexLock lock(&mu_);
  while (out.size() < max_count && !fifo_.empty()) {
    out.push_back(std::move(fifo_.front()));
    fifo_.pop_front();
    waiting_.erase(out.back().key);
    ++stats_.taken;
  }
  return out;
}

bool AdmissionTriggerQueue::Contains(HeatKeyView key) const {
  const HeatKey owned(key);
  MutexLock lock(&mu_);
  return waiting_.contains(owned);
}

size_t AdmissionTriggerQueue::size() const {
  MutexLock lock(&mu_);
  return fifo_.size();
}

AdmissionTriggerQueueStats AdmissionTriggerQueue::stats() const {
  MutexLock lock(&mu_);
  AdmissionTriggerQueueStats s = stats_;
  s.size = static_cast<int64_t>(fifo_.size());
  return s;
}

}  // namespace heatsink
