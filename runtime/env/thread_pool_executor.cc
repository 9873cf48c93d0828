#include "runtime/env/thread_pool_executor.h"

#include <algorithm>

#include "absl/time/time.h"
#include "core/base/check.h"

namespace heatsink::runtime {

ThreadPoolExecutor::ThreadPoolExecutor(const Clock* clock, ThreadPoolOptions options)
    : clock_(clock), options_(options) {
  HS_CHECK(clock_ != nullptr);
  HS_CHECK_MSG(options_.threads >= 1, "ThreadPoolExecutor needs at least one thread");
  HS_CHECK(options_.pending_max >= 1);
  threads_.reserve(static_cast<size_t>(options_.threads));
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPoolExecutor::~ThreadPoolExecutor() { Shutdown(); }

void ThreadPoolExecutor::Post(absl::AnyInvocable<void() &&> fn) {
  Enqueue(0, std::move(fn), /*is_timer=*/false);
}

TimerId ThreadPoolExecutor::PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) {
  HS_CHECK(delay_ns >= 0);
  return Enqueue(delay_ns, std::move(fn), /*is_timer=*/true);
}

TimerId ThreadPoolExecutor::Enqueue(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn,
                                    bool is_timer) {
  HS_CHECK(fn != nullptr);
  // A rejected callable is destroyed after the lock is released: its
  // destructor may run arbitrary code, including calls back into Post.
  absl::AnyInvocable<void() &&> rejected;
  TimerId id = kNoTimer;
  {
    MutexLock lock(&mu_);
    id = next_seq_++;
    if (stopping_) {
      rejected = std::move(fn);
    } else {
      HS_CHECK_MSG(queue_.size() < options_.pending_max,
                   "ThreadPoolExecutor pending_max exceeded: a caller posts without a bound");
      const TimeNs due = clock_->NowNs() + delay_ns;
      const bool new_head = queue_.empty() || Key{due, id} < queue_.begin()->first;
      queue_.emplace(Key{due, id}, std::move(fn));
      if (is_timer) timer_due_.emplace(id, due);
      // A worker sleeping until a later head must re-evaluate; otherwise one
      // idle worker is enough.
      if (new_head) {
        work_cv_.SignalAll();
      } else {
        work_cv_.Signal();
      }
    }
  }
  return id;
}

bool ThreadPoolExecutor::Cancel(TimerId id) {
  absl::AnyInvocable<void() &&> cancelled;
  {
    MutexLock lock(&mu_);
    auto it = timer_due_.find(id);
    if (it == timer_due_.end()) return false;
    auto q = queue_.find(Key{it->second, id});
    HS_CHECK(q != queue_.end());
    cancelled = std::move(q->second);
    queue_.erase(q);
    timer_due_.erase(it);
  }
  return true;
}

void ThreadPoolExecutor::WorkerLoop() {
  absl::AnyInvocable<void() &&> fn;
  mu_.Lock();
  while (true) {
    if (queue_.empty()) {
      if (stopping_) break;
      work_cv_.Wait(&mu_);
      continue;
    }
    auto head = queue_.begin();
    const TimeNs now = clock_->NowNs();
    if (head->first.first > now) {
      // Shutdown removed every item not yet due, so a future head here means
      // it was queued before stopping_ and is simply not due yet.
      work_cv_.WaitWithTimeout(&mu_, absl::Nanoseconds(head->first.first - now));
      continue;
    }
    fn = std::move(head->second);
    timer_due_.erase(head->first.second);
    queue_.erase(head);
    mu_.Unlock();
    std::move(fn)();
    fn = nullptr;  // destroy captured state before retaking the lock
    mu_.Lock();
  }
  mu_.Unlock();
}

void ThreadPoolExecutor::Shutdown() {
  MutexLock join_lock(&join_mu_);
  std::vector<absl::AnyInvocable<void() &&>> dropped;
  {
    MutexLock lock(&mu_);
    if (joined_) return;
    const auto self = std::this_thread::get_id();
    HS_CHECK_MSG(std::none_of(threads_.begin(), threads_.end(),
                              [self](const std::thread& t) { return t.get_id() == self; }),
                 "ThreadPoolExecutor::Shutdown called from one of its own threads");
    stopping_ = true;
    const TimeNs now = clock_->NowNs();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->first.first > now) {
        dropped.push_back(std::move(it->second));
        timer_due_.erase(it->first.second);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    work_cv_.SignalAll();
  }
  dropped.clear();
  for (std::thread& t : threads_) t.join();
  MutexLock lock(&mu_);
  joined_ = true;
}

void ThreadPoolExecutor::ClockAdvanced() {
  MutexLock lock(&mu_);
  work_cv_.SignalAll();
}

size_t ThreadPoolExecutor::pending() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace heatsink::runtime
