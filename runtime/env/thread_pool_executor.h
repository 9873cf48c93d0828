// File: runtime/env/thread_pool_executor.h
//
// The runtime's Executor: N worker threads draining one timer heap ordered by
// (due time, post sequence), so work due at the same time runs in post order
// when there is one thread (with several threads, items start in that order but
// may overlap).
//
// Shutdown policy (drain what is due, drop the future):
//   Shutdown() stops accepting work, then runs every item that was posted
//   before the call and is due by the time of the call (Post items and expired
//   timers), destroys without running every timer not yet due and every item
//   posted after the call started (including items posted by draining work),
//   and joins the threads. No work runs after Shutdown() returns. Destroying a
//   dropped callable runs its destructor, never its body.
//
// Limits: at most `pending_max` queued items. The Executor interface cannot
// reject work, and every core caller bounds what it posts by its own `*_max`
// knobs, so exceeding the limit is a programmer error (HS_CHECK).
//
// Time: due times are read from the Clock given at construction. The
// production clock is a SteadyClock; tests may drive a ManualClock and call
// ClockAdvanced() after moving it, instead of sleeping.
//
// Example:
//   SteadyClock clock;
//   ThreadPoolExecutor executor(&clock, {.threads = 4});
//   TimerId t = executor.PostAfter(MsToNs(100), [] { Reap(); });
//   executor.Cancel(t);
//   executor.Shutdown();
//
// Thread safety: every method is thread-safe. Shutdown() must not be called
// from one of the pool's own threads (it joins them).
#ifndef HEATSINK_RUNTIME_ENV_THREAD_POOL_EXECUTOR_H_
#define HEATSINK_RUNTIME_ENV_THREAD_POOL_EXECUTOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/env/executor.h"

namespace heatsink::runtime {

struct ThreadPoolOptions {
  int threads = 2;
  // Queued items (posted and timers) at most; see "Limits" above.
  size_t pending_max = size_t{1} << 20;
};

class ThreadPoolExecutor final : public Executor {
 public:
  // `clock` must outlive the executor; due times are read from it.
  ThreadPoolExecutor(const Clock* clock, ThreadPoolOptions options);
  ~ThreadPoolExecutor() override;  // calls Shutdown()
  ThreadPoolExecutor(const ThreadPoolExecutor&) = delete;
  ThreadPoolExecutor& operator=(const ThreadPoolExecutor&) = delete;

  void Post(absl::AnyInvocable<void() &&> fn) override;
  TimerId PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) override;
  bool Cancel(TimerId id) override;

  // See "Shutdown policy" above. Idempotent; a second caller waits for the
  // first to finish.
  void Shutdown();

  // Items queued and not yet started.
  size_t pending() const;

  // For a clock that something else moves (a ManualClock in tests): wakes
  // the workers to read it again, so timers that came due run now. A worker
  // waiting for a timer otherwise sleeps until the timer's due time measured
  // in real time. A steady clock needs no call.
  void ClockAdvanced();
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  using Key = std::pair<TimeNs, uint64_t>;  // (due, sequence)

  TimerId Enqueue(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn, bool is_timer);
  void WorkerLoop();

  const Clock* const clock_;
  const ThreadPoolOptions options_;

  mutable Mutex mu_;
  CondVar work_cv_;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Key, absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  // Due time of each timer still queued (its key is (due, id)). Looked up
  // only, never iterated.
  absl::flat_hash_map<TimerId, TimeNs> timer_due_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;  // written only by the constructor and Shutdown
  Mutex join_mu_;                     // serialises Shutdown callers
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_THREAD_POOL_EXECUTOR_H_
