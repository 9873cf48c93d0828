#include "runtime/env/runtime_env.h"

namespace heatsink::runtime {

RuntimeEnv::RuntimeEnv(RuntimeEnvOptions options)
    : executor_(&clock_, options.executor), rng_(options.seed) {
  env_.clock = &clock_;
  env_.executor = &executor_;
  env_.rng = &rng_;
}

RuntimeEnv::~RuntimeEnv() { Shutdown(); }

}  // namespace heatsink::runtime
