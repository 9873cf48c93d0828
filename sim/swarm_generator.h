// File: sim/swarm_generator.h
//
// The scenario generator of `heatsink-sim swarm` (docs/swarm.md): one seed
// gives one small scenario as JSON text, ready for the ordinary loader, so a
// failing seed can be written out and replayed with `heatsink-sim run` or
// `heatsink-sim swarm --scenario FILE`.
//
// Each scenario draws, from the seed alone (core/env/rng.h, forked by name so
// one part's draws never shift another's):
//   topology  1-3 domains of 1-3 hosts, each host one tiny MEMORY segment
//             (2-6 MiB) and one client; slow or fast NICs;
//   knobs     the "swarm" preset: tiny tables (heat window entries, trigger
//             queue, pending actions, cooldown entries, tasks per client),
//             replica limit 1-2, short lease TTLs, short cooldowns and
//             timeouts, stage 2 on or off, mode observe or enforce, core
//             invariant checks after every event;
//   workloads a Zipf read storm from every domain, sometimes cross-domain
//             reuse, and a script of puts, re-puts, removes, bursts of reads
//             of one key from several domains, fail_copy, delay_copies (long
//             copies that outlive their lease) and foreign copy_start calls;
//   faults    worker crashes with restarts, segment unmounts with remounts,
//             copy failures, control-message drops and delays, trunk
//             partitions and degradations.
// Every workload operation and fault ends by `faults_end_ms`; the run goes
// on for `liveness_ms` more (2 x lease TTL, the task and put timeouts, the
// reaping period, the longest copy delay and an RPC timeout), in which the
// system must heal.
#ifndef HEATSINK_SIM_SWARM_GENERATOR_H_
#define HEATSINK_SIM_SWARM_GENERATOR_H_

#include <cstdint>
#include <string>

namespace heatsink::sim {

struct SwarmScenario {
  uint64_t seed = 0;
  std::string name;  // "swarm-<seed>"
  std::string json;  // the scenario file's text
  int64_t faults_end_ms = 0;
  int64_t liveness_ms = 0;
};

// Deterministic: the same seed gives byte-identical JSON in any process.
SwarmScenario GenerateSwarmScenario(uint64_t seed);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SWARM_GENERATOR_H_
