// File: core/env/time.h
//
// Integer time. Every timestamp in core is nanoseconds on the Env's clock,
// held in an int64 (about 292 years of range). Never double seconds.
#ifndef HEATSINK_CORE_ENV_TIME_H_
#define HEATSINK_CORE_ENV_TIME_H_

#include <cstdint>

namespace heatsink {

using TimeNs = int64_t;      // a point on the Env clock, in nanoseconds
using DurationNs = int64_t;  // a span, in nanoseconds

inline constexpr DurationNs kNsPerUs = 1'000;
inline constexpr DurationNs kNsPerMs = 1'000'000;
inline constexpr DurationNs kNsPerSec = 1'000'000'000;
inline constexpr DurationNs kNsPerMin = 60 * kNsPerSec;

constexpr DurationNs MsToNs(int64_t ms) { return ms * kNsPerMs; }
constexpr DurationNs SecToNs(int64_t s) { return s * kNsPerSec; }

// DESIGN "time comparisons": expired when now >= expiry; a cooldown is active
// while now < deadline. These helpers keep every comparison the same way round.
constexpr bool IsExpired(TimeNs now, TimeNs expiry) { return now >= expiry; }
constexpr bool CooldownActive(TimeNs now, TimeNs deadline) { return now < deadline; }

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_TIME_H_
