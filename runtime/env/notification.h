// File: runtime/env/notification.h
//
// A one-shot event (the absl::Notification API) on std::mutex and
// std::condition_variable.
//
// Why not Abseil's: Debian's Abseil is not built with ThreadSanitizer, so the
// happens-before edges of absl::Mutex (and of absl::Notification and
// absl::BlockingCounter, built on it) are invisible to TSan, which then
// reports false races. The runtime therefore synchronises with std::mutex,
// whose pthread calls TSan intercepts.
#ifndef HEATSINK_RUNTIME_ENV_NOTIFICATION_H_
#define HEATSINK_RUNTIME_ENV_NOTIFICATION_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/time/time.h"

namespace heatsink::runtime {

class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool HasBeenNotified() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }
  void WaitForNotification() const {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return notified_; });
  }
  // True when notified within `timeout`.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return notified_; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_NOTIFICATION_H_
