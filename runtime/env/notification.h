// File: runtime/env/notification.h
//
// A one-shot event (the absl::Notification API) on heatsink::Mutex and
// heatsink::CondVar.
//
// Why not Abseil's: Debian's Abseil is not built with ThreadSanitizer, so the
// happens-before edges of absl::Mutex (and of absl::Notification and
// absl::BlockingCounter, built on it) are invisible to TSan, which then
// reports false races. heatsink::Mutex and heatsink::CondVar
// (core/base/mutex.h) draw those edges for TSan themselves.
//
// Example:
//   Notification done;
//   std::thread t([&] { Work(); done.Notify(); });
//   if (!done.WaitForNotificationWithTimeout(absl::Seconds(5))) ...  // timed out
#ifndef HEATSINK_RUNTIME_ENV_NOTIFICATION_H_
#define HEATSINK_RUNTIME_ENV_NOTIFICATION_H_

#include <chrono>

#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "runtime/env/wait_until.h"

namespace heatsink::runtime {

class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  bool HasBeenNotified() const {
    MutexLock lock(&mu_);
    return notified_;
  }
  void WaitForNotification() const {
    MutexLock lock(&mu_);
    while (!notified_) cv_.Wait(&mu_);
  }
  // True when notified within `timeout`.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
    MutexLock lock(&mu_);
    while (!notified_ && WaitUntil(&cv_, &mu_, deadline)) {
    }
    return notified_;
  }

 private:
  mutable Mutex mu_;
  mutable CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_NOTIFICATION_H_
