#include "sim/sim_env.h"

namespace heatsink::sim {

SimEnv::SimEnv(uint64_t seed, const EngineKnobs& engine_knobs)
    : seed_(seed), root_(seed), engine_(engine_knobs), clock_(&engine_), executor_(&engine_) {
  // Created in a fixed order so Seeds() always lists them the same way.
  for (absl::string_view name :
       {kWorkloadSubsystem, kNetworkSubsystem, kFaultsSubsystem, kMasterSubsystem}) {
    SubsystemRng(name);
  }
  env_.clock = &clock_;
  env_.executor = &executor_;
  env_.rng = &master_rng();
}

Rng& SimEnv::SubsystemRng(absl::string_view name) {
  for (auto& [existing, rng] : subsystems_) {
    if (existing == name) return *rng;
  }
  subsystems_.emplace_back(std::string(name), std::make_unique<Rng>(root_.Fork(name)));
  return *subsystems_.back().second;
}

std::vector<SeedEntry> SimEnv::Seeds() const {
  std::vector<SeedEntry> out;
  out.reserve(subsystems_.size() + 1);
  out.push_back(SeedEntry{"root", seed_});
  for (const auto& [name, rng] : subsystems_) out.push_back(SeedEntry{name, rng->seed()});
  return out;
}

}  // namespace heatsink::sim
