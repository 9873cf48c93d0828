#include "core/replication/heat_key.h"

#include "absl/base/attributes.h"
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
// Inlined: it runs three times per heat-window read.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint64_t HashField(uint64_t h, absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t size = s.size();
  size_t n = size;
  h = Step(h, static_cast<uint64_t>(n));
  for (; n >= 8; n -= 8, p += 8) h = Step(h, LoadLittleEndian64(p));
  if (n > 0) {
    // The remaining 1..7 bytes as a little-endian word, zero-extended. A
    // field of at least 8 bytes reads the word that ends with it and shifts
    // the bytes already hashed out; a shorter one assembles its bytes one by
    // one (no call to memcpy for a few bytes). Both give the same value.
    uint64_t tail = 0;
    if (size >= 8) {
      tail = LoadLittleEndian64(p + n - 8) >> (8 * (8 - n));
    } else {
      for (size_t i = 0; i < n; ++i) tail |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
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
