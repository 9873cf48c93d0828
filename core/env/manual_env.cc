#include "core/env/manual_env.h"

#include "core/base/check.h"

namespace heatsink {

void ManualClock::SetNs(TimeNs t) {
  HS_CHECK_MSG(t >= NowNs(), "ManualClock must not go backwards");
  now_ns_.store(t, std::memory_order_release);
}

void ManualExecutor::Post(absl::AnyInvocable<void() &&> fn) {
  MutexLock lock(&mu_);
  queue_.emplace(Key{clock_->NowNs(), next_seq_++}, std::move(fn));
}

TimerId ManualExecutor::PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) {
  HS_CHECK(delay_ns >= 0);
  MutexLock lock(&mu_);
  const uint64_t seq = next_seq_++;
  const Key key{clock_->NowNs() + delay_ns, seq};
  queue_.emplace(key, std::move(fn));
  timers_.emplace(seq, key);
  return seq;
}

bool ManualExecutor::Cancel(TimerId id) {
  MutexLock lock(&mu_);
  auto it = timers_.find(id);
  if (it == timers_.end()) return false;
  queue_.erase(it->second);
  timers_.erase(it);
  return true;
}

bool ManualExecutor::PopDue(TimeNs limit, absl::AnyInvocable<void() &&>& fn) {
  MutexLock lock(&mu_);
  if (queue_.empty()) return false;
  auto it = queue_.begin();
  if (it->first.first > limit) return false;
  if (it->first.first > clock_->NowNs()) clock_->SetNs(it->first.first);
  fn = std::move(it->second);
  timers_.erase(it->first.second);
  queue_.erase(it);
  return true;
}

int64_t ManualExecutor::RunUntilIdle() { return RunUntil(clock_->NowNs()); }

int64_t ManualExecutor::RunUntil(TimeNs t) {
  HS_CHECK(t >= clock_->NowNs());
  int64_t ran = 0;
  absl::AnyInvocable<void() &&> fn;
  while (PopDue(t, fn)) {
    std::move(fn)();
    ++ran;
  }
  clock_->SetNs(t);
  return ran;
}

TimeNs ManualExecutor::NextDueNs() const {
  MutexLock lock(&mu_);
  return queue_.empty() ? -1 : queue_.begin()->first.first;
}

size_t ManualExecutor::pending() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace heatsink
