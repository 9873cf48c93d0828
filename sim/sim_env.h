// File: sim/sim_env.h
//
// Everything a simulated run needs to hand core components their core/env
// world: the engine, its clock and executor, and a tree of seeded Rngs. One
// master seed is split into named sub-seeds, one per subsystem (workload,
// network, faults, master), through Rng::Fork, so adding draws in one
// subsystem never shifts another's stream. Seeds() lists every (name, seed)
// pair so a run can print them next to its replay command.
//
// Core components get env(): clock and executor over the engine, and the
// "master" Rng for the decisions that need randomness.
//
// Example:
//   SimEnv sim(/*seed=*/42);
//   Master master(sim.env(), knobs);
//   for (const SeedEntry& s : sim.Seeds()) std::cout << s.name << "=" << s.seed;
//   HS_ASSIGN_OR_RETURN(StopReason why, sim.engine().RunUntil(SecToNs(60)));
//
// Thread safety: none (see engine.h).
#ifndef HEATSINK_SIM_SIM_ENV_H_
#define HEATSINK_SIM_SIM_ENV_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/env/env.h"
#include "core/env/rng.h"
#include "sim/engine.h"

namespace heatsink::sim {

inline constexpr absl::string_view kWorkloadSubsystem = "workload";
inline constexpr absl::string_view kNetworkSubsystem = "network";
inline constexpr absl::string_view kFaultsSubsystem = "faults";
inline constexpr absl::string_view kMasterSubsystem = "master";

struct SeedEntry {
  std::string name;  // "root" for the master seed, else the subsystem name
  uint64_t seed = 0;

  friend bool operator==(const SeedEntry&, const SeedEntry&) = default;
};

class SimEnv {
 public:
  // REQUIRES: engine_knobs.Validate().ok().
  explicit SimEnv(uint64_t seed, const EngineKnobs& engine_knobs = EngineKnobs());
  SimEnv(const SimEnv&) = delete;
  SimEnv& operator=(const SimEnv&) = delete;

  uint64_t seed() const { return seed_; }
  Engine& engine() { return engine_; }
  SimClock& clock() { return clock_; }
  SimExecutor& executor() { return executor_; }
  // The Env for core components; its rng is the "master" subsystem's.
  Env* env() { return &env_; }
  TimeNs NowNs() const { return engine_.NowNs(); }

  Rng& workload_rng() { return SubsystemRng(kWorkloadSubsystem); }
  Rng& network_rng() { return SubsystemRng(kNetworkSubsystem); }
  Rng& faults_rng() { return SubsystemRng(kFaultsSubsystem); }
  Rng& master_rng() { return SubsystemRng(kMasterSubsystem); }

  // The Rng of subsystem `name`, forked from the master seed on first use.
  // The reference stays valid for the SimEnv's lifetime.
  Rng& SubsystemRng(absl::string_view name);

  // ("root", seed) then every subsystem in creation order: the four standard
  // ones first, then any created through SubsystemRng.
  std::vector<SeedEntry> Seeds() const;

 private:
  const uint64_t seed_;
  const Rng root_;
  Engine engine_;
  SimClock clock_;
  SimExecutor executor_;
  // Few entries; linear lookup keeps creation order for Seeds().
  std::vector<std::pair<std::string, std::unique_ptr<Rng>>> subsystems_;
  Env env_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SIM_ENV_H_
