// File: core/env/env.h
//
// The world a core component lives in: its clock, its executor and its seeded
// randomness. Held as `Env* const env_` by every component (LevelDB's Env).
// The simulator and the runtime each build one; tests use ManualEnv.
// Non-owning: whoever builds the Env keeps the parts alive longer than every
// component that holds it.
#ifndef HEATSINK_CORE_ENV_ENV_H_
#define HEATSINK_CORE_ENV_ENV_H_

#include "core/env/clock.h"
#include "core/env/executor.h"
#include "core/env/rng.h"

namespace heatsink {

struct Env {
  Clock* clock = nullptr;
  Executor* executor = nullptr;
  // Seeded randomness for decisions that need it (the `random` allocation
  // strategy). Components that run concurrently must Fork their own.
  Rng* rng = nullptr;

  TimeNs NowNs() const { return clock->NowNs(); }
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_ENV_H_
