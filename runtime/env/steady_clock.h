// File: runtime/env/steady_clock.h
//
// The runtime's Clock: std::chrono::steady_clock in integer nanoseconds.
// Monotonic and thread-safe; its epoch is arbitrary (boot time on Linux), so
// its values are only meaningful relative to each other inside one process.
#ifndef HEATSINK_RUNTIME_ENV_STEADY_CLOCK_H_
#define HEATSINK_RUNTIME_ENV_STEADY_CLOCK_H_

#include <chrono>

#include "core/env/clock.h"

namespace heatsink::runtime {

class SteadyClock final : public Clock {
 public:
  SteadyClock() = default;
  SteadyClock(const SteadyClock&) = delete;
  SteadyClock& operator=(const SteadyClock&) = delete;

  TimeNs NowNs() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_STEADY_CLOCK_H_
