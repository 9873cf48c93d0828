// File: core/env/manual_env.h
//
// Test doubles: a clock that only moves when told, and an executor that runs
// posted work only when the test advances time. No threads, no sleeping.
//
// Example:
//   ManualEnv env(/*seed=*/7);
//   Master master(env.env(), knobs);
//   env.AdvanceBy(SecToNs(10));  // runs every timer due in the next 10 s, in order
//   env.RunUntilIdle();          // runs posted zero-delay work
#ifndef HEATSINK_CORE_ENV_MANUAL_ENV_H_
#define HEATSINK_CORE_ENV_MANUAL_ENV_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "core/env/env.h"

namespace heatsink {

class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeNs start_ns = 0) : now_ns_(start_ns) {}
  TimeNs NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  // REQUIRES: t >= NowNs().
  void SetNs(TimeNs t);
  void AdvanceBy(DurationNs d) { SetNs(NowNs() + d); }

 private:
  std::atomic<TimeNs> now_ns_;
};

// Runs work in (due time, post order). Work posted while running is queued,
// never run re-entrantly.
class ManualExecutor final : public Executor {
 public:
  explicit ManualExecutor(ManualClock* clock) : clock_(clock) {}

  void Post(absl::AnyInvocable<void() &&> fn) override;
  TimerId PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) override;
  bool Cancel(TimerId id) override;

  // Runs everything due at or before the current time, including work those
  // items post for the current time. Returns the number of items run.
  int64_t RunUntilIdle();
  // Moves the clock forward step by step to `t`, running each item at its due
  // time. REQUIRES: t >= clock time.
  int64_t RunUntil(TimeNs t);
  int64_t AdvanceBy(DurationNs d) { return RunUntil(clock_->NowNs() + d); }
  // Earliest due time of queued work, or -1 when empty.
  TimeNs NextDueNs() const;
  size_t pending() const;

 private:
  using Key = std::pair<TimeNs, uint64_t>;  // (due, sequence)
  bool PopDue(TimeNs limit, absl::AnyInvocable<void() &&>& fn);

  ManualClock* const clock_;
  mutable Mutex mu_;  // heatsink::Mutex: visible to ThreadSanitizer
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<Key, absl::AnyInvocable<void() &&>> queue_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TimerId, Key> timers_ ABSL_GUARDED_BY(mu_);
};

// A complete Env for tests.
class ManualEnv {
 public:
  explicit ManualEnv(uint64_t seed = 1, TimeNs start_ns = 0)
      : clock_(start_ns), executor_(&clock_), rng_(seed) {
    env_.clock = &clock_;
    env_.executor = &executor_;
    env_.rng = &rng_;
  }
  ManualEnv(const ManualEnv&) = delete;
  ManualEnv& operator=(const ManualEnv&) = delete;

  Env* env() { return &env_; }
  ManualClock& clock() { return clock_; }
  ManualExecutor& executor() { return executor_; }
  Rng& rng() { return rng_; }
  TimeNs NowNs() const { return clock_.NowNs(); }

  int64_t RunUntilIdle() { return executor_.RunUntilIdle(); }
  int64_t AdvanceBy(DurationNs d) { return executor_.AdvanceBy(d); }
  int64_t RunUntil(TimeNs t) { return executor_.RunUntil(t); }

 private:
  ManualClock clock_;
  ManualExecutor executor_;
  Rng rng_;
  Env env_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_MANUAL_ENV_H_
