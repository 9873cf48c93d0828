// File: core/env/clock.h
//
// The one clock of a core component. The simulator's clock is virtual time; the
// runtime's is a steady clock. Core code never reads any other.
#ifndef HEATSINK_CORE_ENV_CLOCK_H_
#define HEATSINK_CORE_ENV_CLOCK_H_

#include "core/env/time.h"

namespace heatsink {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic: never decreases between calls. Thread-safe.
  virtual TimeNs NowNs() const = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_CLOCK_H_
