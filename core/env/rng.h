// File: core/env/rng.h
//
// The project's deterministic PRNG: xoshiro256** seeded through SplitMix64.
// Integer API only at its core; every derived value (bounded integers, doubles,
// Bernoulli draws) is computed here from the 64-bit stream with arithmetic that
// is identical on every compiler and standard library. Not Abseil's bit generator (salted
// per process) and not std::*_distribution (differs between libraries).
//
// Example:
//   Rng root(scenario_seed);
//   Rng workload = root.Fork("workload");   // independent sub-stream
//   uint64_t reader = workload.Uniform(num_readers);
//
// Thread safety: none; each subsystem owns its own Rng.
#ifndef HEATSINK_CORE_ENV_RNG_H_
#define HEATSINK_CORE_ENV_RNG_H_

#include <array>
#include <cstdint>
#include "absl/strings/string_view.h"

namespace heatsink {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  uint64_t seed() const { return seed_; }

  // Next raw 64-bit value.
  uint64_t Next64();
  // Uniform in [0, bound); bound > 0. Unbiased (Lemire's method with rejection).
  uint64_t Uniform(uint64_t bound);
  // Uniform in [lo, hi]; lo <= hi.
  int64_t UniformRange(int64_t lo, int64_t hi);
  // True with probability numerator / denominator; 0 <= numerator <= denominator, denominator > 0.
  bool Bernoulli(uint64_t numerator, uint64_t denominator);
  // A double in [0, 1) with 53 random bits (exact IEEE arithmetic, portable).
  double NextDouble01();

  // A sub-seed for a named subsystem, derived from this Rng's seed (not its
  // current position), so adding draws in one subsystem never shifts another.
  uint64_t SubSeed(absl::string_view name) const;
  Rng Fork(absl::string_view name) const { return Rng(SubSeed(name)); }

 private:
  uint64_t seed_;
  std::array<uint64_t, 4> s_;
};

// SplitMix64 finaliser: a portable 64-bit mixing function for stable
// tie-breakers (for example hash of key and segment id).
uint64_t Mix64(uint64_t x);
// FNV-1a over bytes then Mix64: a stable hash of a string, identical in every
// process (unlike absl::Hash, which is salted per process).
uint64_t StableHash(absl::string_view bytes);
uint64_t StableHashCombine(uint64_t a, uint64_t b);

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_RNG_H_
