// Shared helpers for the tiering tests: a TierManager over logical regions in
// heap memory (VectorHeadMemory), so every multi-region path runs on a
// one-node machine.
#ifndef HEATSINK_TESTS_CORE_TIERING_TIERING_TEST_UTIL_H_
#define HEATSINK_TESTS_CORE_TIERING_TIERING_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/manual_env.h"
#include "core/env/vector_head_memory.h"
#include "core/metrics/metrics.h"
#include "core/tiering/tier_manager.h"
#include "gtest/gtest.h"

namespace heatsink::tiering_test {

inline TierKey Key(const std::string& name, uint32_t chunk = 0) {
  return TierKey{ObjectName{"t", name}, chunk};
}

// Deterministic bytes that differ per seed.
inline std::vector<uint8_t> Pattern(uint64_t size, uint64_t seed) {
  std::vector<uint8_t> out(size);
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (uint64_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x);
  }
  return out;
}

// Small knobs: 64 KiB blocks of 8 KiB heads (8 per block), a preferred
// region of `preferred_blocks` blocks and one foreign region of
// `foreign_blocks` blocks per entry.
inline TieringKnobs SmallKnobs(uint64_t preferred_blocks, std::vector<uint64_t> foreign_blocks) {
  TieringKnobs k = TieringKnobs::TestMin();
  k.memory_bytes = preferred_blocks * k.block_bytes;
  k.sub_memory_bytes.clear();
  for (uint64_t b : foreign_blocks) k.sub_memory_bytes.push_back(b * k.block_bytes);
  return k;
}

// HeadMemory over heap buffers whose Swap first calls a hook: lets a test act
// "during" an exchange (mark a decay pending) or make the swap fail.
class HookedMemory final : public HeadMemory {
 public:
  explicit HookedMemory(const std::vector<uint64_t>& sizes) : inner_(sizes) {}
  int region_count() const override { return inner_.region_count(); }
  uint64_t region_bytes(int region) const override { return inner_.region_bytes(region); }
  absl::Status Read(int region, uint64_t offset, absl::Span<uint8_t> out) const override {
    return inner_.Read(region, offset, out);
  }
  absl::Status Write(int region, uint64_t offset, absl::Span<const uint8_t> in) override {
    return inner_.Write(region, offset, in);
  }
  absl::Status Swap(const MemoryRange& a, const MemoryRange& b) override {
    ++swaps_;
    if (swap_hook_) {
      if (absl::Status s = swap_hook_(); !s.ok()) return s;
    }
    return inner_.Swap(a, b);
  }
  void set_swap_hook(std::function<absl::Status()> hook) { swap_hook_ = std::move(hook); }
  int swaps() const { return swaps_; }
  VectorHeadMemory& inner() { return inner_; }

 private:
  VectorHeadMemory inner_;
  std::function<absl::Status()> swap_hook_;
  int swaps_ = 0;
};

class TieringHarness {
 public:
  explicit TieringHarness(const TieringKnobs& knobs) : knobs_(knobs) {
    memory_ = std::make_unique<HookedMemory>(RegionSizes(PlanRegions(knobs)));
    absl::StatusOr<std::unique_ptr<TierManager>> tm =
        TierManager::Create(env_.env(), knobs, memory_.get(), &metrics_);
    HS_CHECK_OK(tm.status());
    manager_ = *std::move(tm);
  }

  TierManager& tm() { return *manager_; }
  HookedMemory& memory() { return *memory_; }
  ManualEnv& env() { return env_; }
  MetricsRegistry& metrics() { return metrics_; }
  const TieringKnobs& knobs() const { return knobs_; }
  uint64_t head_bytes() const { return knobs_.ram_head_bytes; }

  // Stores a fixed head (exactly ram_head bytes) with bytes Pattern(seed).
  void PutHead(const TierKey& key, uint64_t seed) {
    HS_CHECK_OK(manager_->Put(key, Pattern(knobs_.ram_head_bytes, seed)));
  }
  // Completes `n` logical reads of `key`.
  void Read(const TierKey& key, int n = 1) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<ReadToken> t = manager_->OpenRead(key);
      HS_CHECK_OK(t.status());
      manager_->CompleteRead(*std::move(t));
    }
  }
  double Score(const TierKey& key) {
    absl::StatusOr<double> s = manager_->Score(key);
    HS_CHECK_OK(s.status());
    return *s;
  }
  KeyInfo Info(const TierKey& key) {
    std::optional<KeyInfo> info = manager_->Lookup(key);
    HS_CHECK(info.has_value());
    return *info;
  }
  std::vector<uint8_t> ReadAll(const TierKey& key) {
    absl::StatusOr<ReadToken> t = manager_->OpenRead(key);
    HS_CHECK_OK(t.status());
    std::vector<uint8_t> out(t->size_bytes());
    HS_CHECK_OK(manager_->ReadBytes(*t, 0, absl::MakeSpan(out)));
    manager_->AbandonRead(*std::move(t));
    return out;
  }
  // Fills every head slot of the preferred region with keys `prefix`0.. and
  // returns them in slot order (placement is preferred-first, lowest first).
  std::vector<TierKey> FillRegion(const std::string& prefix, uint64_t heads, uint64_t seed_base) {
    std::vector<TierKey> keys;
    for (uint64_t i = 0; i < heads; ++i) {
      keys.push_back(Key(absl::StrCat(prefix, i)));
      PutHead(keys.back(), seed_base + i);
    }
    return keys;
  }

 private:
  TieringKnobs knobs_;
  ManualEnv env_;
  MetricsRegistry metrics_;
  std::unique_ptr<HookedMemory> memory_;
  std::unique_ptr<TierManager> manager_;
};

}  // namespace heatsink::tiering_test

#endif  // HEATSINK_TESTS_CORE_TIERING_TIERING_TEST_UTIL_H_
