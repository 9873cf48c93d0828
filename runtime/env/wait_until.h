// File: runtime/env/wait_until.h
//
// One step of a condition-variable wait bounded by a steady-clock deadline:
// the heatsink::CondVar form of std::condition_variable::wait_until(lock,
// deadline, predicate). The caller's loop tests the predicate with the mutex
// held, so the thread-safety analysis sees every guarded read.
//
// Example:
//   MutexLock lock(&mu_);
//   const auto deadline = std::chrono::steady_clock::now() + interval;
//   while (!stopping_ && WaitUntil(&cv_, &mu_, deadline)) {
//   }
//   // here stopping_ holds, or the deadline has passed
#ifndef HEATSINK_RUNTIME_ENV_WAIT_UNTIL_H_
#define HEATSINK_RUNTIME_ENV_WAIT_UNTIL_H_

#include <chrono>

#include "absl/time/time.h"
#include "core/base/mutex.h"

namespace heatsink::runtime {

// REQUIRES: *mu held. Returns false at once, without waiting, when `deadline`
// has passed; otherwise waits on *cv (releasing *mu) until signalled, a
// spurious wake-up or the deadline, and returns true with *mu held again.
inline bool WaitUntil(CondVar* cv, Mutex* mu, std::chrono::steady_clock::time_point deadline)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return false;
  cv->WaitWithTimeout(mu, absl::FromChrono(deadline - now));
  return true;
}

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_WAIT_UNTIL_H_
