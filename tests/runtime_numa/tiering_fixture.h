// Shared test code for the runtime NUMA tests: a real-clock Env without an
// executor (TierManager only reads the clock), keys with recognisable bytes,
// and filling and reading heads through the TierManager.
#ifndef HEATSINK_TESTS_RUNTIME_NUMA_TIERING_FIXTURE_H_
#define HEATSINK_TESTS_RUNTIME_NUMA_TIERING_FIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/env.h"
#include "core/env/rng.h"
#include "core/tiering/tier_manager.h"
#include "core/tiering/tiering_knobs.h"
#include "gtest/gtest.h"
#include "runtime/env/steady_clock.h"

namespace heatsink::runtime::testing {

struct SteadyEnv {
  SteadyEnv() : rng(1) {
    env.clock = &clock;
    env.rng = &rng;
  }
  SteadyClock clock;
  Rng rng;
  Env env;
};

// Default 2 MiB blocks of 256 KiB heads: `home_blocks` blocks in region 0
// and one block in each of `foreign_regions` regions; the promotion step
// waits 20 ms without an inversion.
inline TieringKnobs BlocksPerRegion(uint64_t home_blocks, size_t foreign_regions) {
  TieringKnobs knobs;
  knobs.memory_bytes = home_blocks * knobs.block_bytes;
  knobs.sub_memory_bytes.assign(foreign_regions, knobs.block_bytes);
  knobs.no_inversion_wait_ms = 20;
  return knobs;
}

inline TierKey Key(const std::string& prefix, int i) {
  return TierKey{ObjectName{"numa-test", absl::StrCat(prefix, "-", i)}, 0};
}

// Bytes of a head: every byte derived from the key's index and position, so
// a misplaced or torn head is detected.
inline std::vector<uint8_t> HeadBytes(uint64_t size, int tag) {
  std::vector<uint8_t> bytes(size);
  for (uint64_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(tag * 131 + i * 7 + (i >> 9));
  return bytes;
}

// Stores `count` fixed heads "prefix-0" ... with HeadBytes(ram_head, tag_base + i).
inline void PutHeads(TierManager& manager, const std::string& prefix, int count, int tag_base) {
  const uint64_t size = manager.knobs().ram_head_bytes;
  for (int i = 0; i < count; ++i) {
    ASSERT_TRUE(manager.Put(Key(prefix, i), HeadBytes(size, tag_base + i)).ok())
        << prefix << " " << i;
  }
}

// `times` successful logical reads of each key, checking the bytes.
inline void ReadHeads(TierManager& manager, const std::string& prefix, int count, int tag_base,
                      int times) {
  const uint64_t size = manager.knobs().ram_head_bytes;
  std::vector<uint8_t> out(size);
  for (int t = 0; t < times; ++t) {
    for (int i = 0; i < count; ++i) {
      absl::StatusOr<ReadToken> token = manager.OpenRead(Key(prefix, i));
      ASSERT_TRUE(token.ok()) << token.status();
      ASSERT_TRUE(manager.ReadBytes(*token, 0, absl::MakeSpan(out)).ok());
      ASSERT_EQ(out, HeadBytes(size, tag_base + i)) << prefix << " " << i;
      manager.CompleteRead(std::move(*token));
    }
  }
}

}  // namespace heatsink::runtime::testing

#endif  // HEATSINK_TESTS_RUNTIME_NUMA_TIERING_FIXTURE_H_
