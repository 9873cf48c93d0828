// File: core/env/executor.h
//
// Where core components run their background work (admission, reaping, timers).
// The simulator runs posted work as events on its single queue; the runtime on
// real threads. Core never starts a thread itself.
//
// Contract:
//   - Post(fn) runs fn later, never inside the call to Post (no re-entrancy).
//   - PostAfter(delay, fn) runs fn no earlier than delay after now on the Env
//     clock. Work due at the same time runs in the order it was posted.
//   - Cancel(id) returns true if the timer had not started and will never run.
//   - All three are thread-safe.
#ifndef HEATSINK_CORE_ENV_EXECUTOR_H_
#define HEATSINK_CORE_ENV_EXECUTOR_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "core/env/time.h"

namespace heatsink {

using TimerId = uint64_t;
inline constexpr TimerId kNoTimer = 0;

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Post(absl::AnyInvocable<void() &&> fn) = 0;
  // Returns an id for Cancel; never kNoTimer.
  virtual TimerId PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) = 0;
  virtual bool Cancel(TimerId id) = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_EXECUTOR_H_
