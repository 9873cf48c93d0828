// File: core/base/mutex.h
//
// heatsink::Mutex: absl::Mutex that ThreadSanitizer can see through.
//
// Debian's Abseil is not built with ThreadSanitizer, so the happens-before
// edges of absl::Mutex are invisible to TSan, which then reports false races
// on everything the mutex guards. This wrapper keeps absl::Mutex (and its
// thread-safety annotations) and, only in -fsanitize=thread builds, tells TSan
// about the edges itself: acquire after locking, release before unlocking.
// In other builds it is exactly absl::Mutex.
//
// heatsink::CondVar is absl::CondVar for this Mutex: a wait tells TSan about
// the release of the mutex before it blocks and the acquire after it wakes,
// the same edges Lock and Unlock draw. Waits may wake spuriously; callers
// re-check their condition in a loop, as with any condition variable.
//
// Example:
//   mutable Mutex mu_;
//   int x_ ABSL_GUARDED_BY(mu_);
//   void Add() { MutexLock lock(&mu_); ++x_; }
//
//   CondVar changed_;
//   void AwaitPositive() {
//     MutexLock lock(&mu_);
//     while (x_ <= 0) changed_.Wait(&mu_);
//   }
#ifndef HEATSINK_CORE_BASE_MUTEX_H_
#define HEATSINK_CORE_BASE_MUTEX_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace heatsink {

class CondVar;

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    Acquired();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    Releasing();
    mu_.Unlock();
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    mu_.ReaderLock();
    Acquired();
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
    Releasing();
    mu_.ReaderUnlock();
  }
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }

 private:
  friend class CondVar;

  void Acquired() {
#if defined(__SANITIZE_THREAD__)
    __tsan_acquire(this);
#endif
  }
  void Releasing() {
#if defined(__SANITIZE_THREAD__)
    __tsan_release(this);
#endif
  }

  absl::Mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable whose waits release and re-acquire a heatsink::Mutex.
// Thread-safe. Wait* REQUIRE the caller to hold *mu exclusively; they return
// with it held again. Signal and SignalAll may be called with or without it.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Blocks until signalled (or a spurious wake-up).
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    mu->Releasing();
    cv_.Wait(&mu->mu_);
    mu->Acquired();
  }
  // As Wait, but gives up after `timeout`. True when it timed out; false when
  // woken (which does not promise the condition holds).
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    mu->Releasing();
    const bool timed_out = cv_.WaitWithTimeout(&mu->mu_, timeout);
    mu->Acquired();
    return timed_out;
  }
  void Signal() { cv_.Signal(); }
  void SignalAll() { cv_.SignalAll(); }

 private:
  absl::CondVar cv_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_BASE_MUTEX_H_
