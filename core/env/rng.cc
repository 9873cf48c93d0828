#include "core/env/rng.h"

#include "core/base/check.h"

namespace heatsink {
namespace {

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t SplitMixNext(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  return Mix64(state);
}

}  // namespace

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t StableHash(absl::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return Mix64(h);
}

uint64_t StableHashCombine(uint64_t a, uint64_t b) {
  return Mix64(a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
}

Rng::Rng(uint64_t seed) : seed_(seed) {
  uint64_t state = seed;
  for (uint64_t& word : s_) word = SplitMixNext(state);
}

uint64_t Rng::Next64() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Rng::Uniform(uint64_t bound) {
  HS_CHECK(bound > 0);
  unsigned __int128 m = static_cast<unsigned __int128>(Next64()) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next64()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

int64_t Rng::UniformRange(int64_t lo, int64_t hi) {
  HS_CHECK(lo <= hi);
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == UINT64_MAX) return static_cast<int64_t>(Next64());
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + Uniform(span + 1));
}

bool Rng::Bernoulli(uint64_t numerator, uint64_t denominator) {
  HS_CHECK(denominator > 0 && numerator <= denominator);
  if (numerator == 0) return false;
  if (numerator == denominator) return true;
  return Uniform(denominator) < numerator;
}

double Rng::NextDouble01() {
  return static_cast<double>(Next64() >> 11) * 0x1.0p-53;
}

uint64_t Rng::SubSeed(absl::string_view name) const {
  return StableHashCombine(Mix64(seed_), StableHash(name));
}

}  // namespace heatsink
