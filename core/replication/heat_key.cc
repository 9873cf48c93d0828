#include "core/replication/heat_key.h"

#include "core/env/rng.h"

namespace heatsink {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// Explicit little-endian assembly: the same value on every machine; compilers
// turn it into one load on little-endian targets.
inline uint64_t LoadLittleEndian64(const unsigned char* p) {
  return static_cast<uint64_t>(p[0]) | static_cast<uint64_t>(p[1]) << 8 |
         static_cast<uint64_t>(p[2]) << 16 | static_cast<uint64_t>(p[3]) << 24 |
         static_cast<uint64_t>(p[4]) << 32 | static_cast<uint64_t>(p[5]) << 40 |
         static_cast<uint64_t>(p[6]) << 48 | static_cast<uint64_t>(p[7]) << 56;
}

inline uint64_t Step(uint64_t h, uint64_t word) {
  h = (h ^ word) * kGolden;
  return h ^ (h >> 29);
}

// Mixes the field length first, so field boundaries change the hash.
uint64_t HashField(uint64_t h, absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  h = Step(h, static_cast<uint64_t>(n));
  for (; n >= 8; n -= 8, p += 8) h = Step(h, LoadLittleEndian64(p));
  if (n > 0) {
    uint64_t tail = 0;
    for (size_t i = 0; i < n; ++i) tail |= static_cast<uint64_t>(p[i]) << (8 * i);
    h = Step(h, tail);
  }
  return h;
}

}  // namespace

uint64_t StableHeatKeyHash(HeatKeyView key) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  h = HashField(h, key.tenant);
  h = HashField(h, key.key);
  h = HashField(h, key.domain);
  return Mix64(h);
}

}  // namespace heatsink
