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
// Example:
//   mutable Mutex mu_;
//   int x_ ABSL_GUARDED_BY(mu_);
//   void Add() { MutexLock lock(&mu_); ++x_; }
#ifndef HEATSINK_CORE_BASE_MUTEX_H_
#define HEATSINK_CORE_BASE_MUTEX_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace heatsink {

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

}  // namespace heatsink

#endif  // HEATSINK_CORE_BASE_MUTEX_H_
