// File: runtime/env/runtime_env.h
//
// The Env of a production process: a steady clock, a thread-pool executor and
// a seeded Rng, owned together so that their lifetimes match. Components hold
// `env()` (non-owning); the RuntimeEnv must outlive every one of them, and
// Shutdown() (or the destructor) must run before the components that posted
// work are destroyed.
//
// Example:
//   RuntimeEnv runtime_env({.executor = {.threads = 4}, .seed = flags.seed});
//   Master master(runtime_env.env(), knobs);
//   ...
//   runtime_env.Shutdown();  // drains due work, drops future timers, joins
//
// Thread safety: env() may be used from any thread; the Rng it exposes is not
// thread-safe (core components Fork their own).
#ifndef HEATSINK_RUNTIME_ENV_RUNTIME_ENV_H_
#define HEATSINK_RUNTIME_ENV_RUNTIME_ENV_H_

#include <cstdint>

#include "core/env/env.h"
#include "core/env/rng.h"
#include "runtime/env/steady_clock.h"
#include "runtime/env/thread_pool_executor.h"

namespace heatsink::runtime {

struct RuntimeEnvOptions {
  ThreadPoolOptions executor;
  uint64_t seed = 1;
};

class RuntimeEnv {
 public:
  explicit RuntimeEnv(RuntimeEnvOptions options);
  ~RuntimeEnv();
  RuntimeEnv(const RuntimeEnv&) = delete;
  RuntimeEnv& operator=(const RuntimeEnv&) = delete;

  Env* env() { return &env_; }
  SteadyClock& clock() { return clock_; }
  ThreadPoolExecutor& executor() { return executor_; }
  Rng& rng() { return rng_; }

  // See ThreadPoolExecutor::Shutdown.
  void Shutdown() { executor_.Shutdown(); }

 private:
  SteadyClock clock_;
  ThreadPoolExecutor executor_;
  Rng rng_;
  Env env_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_ENV_RUNTIME_ENV_H_
