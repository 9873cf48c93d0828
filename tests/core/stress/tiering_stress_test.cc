// Multi-threaded stress of the tiering core (run under the tsan preset):
// reader threads stream heads and complete reads while a promotion thread
// exchanges blocks (scanning regions on per-node threads), an eviction thread
// evicts and readmits heads, a trade thread tries hot-copy head trades
// (PlaceHotNewcomer) on random keys, and -- in the second test -- a decay thread runs
// passes whose regions are decayed on separate threads. Every read checks the
// bytes it streamed, so a head moved under a pinned reader would show. With no
// decay, every key's final score equals its completed reads exactly (no lost
// increment); with decay, each key's score lies within exact bounds derived
// from the pass counters observed around each read.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/manual_env.h"
#include "core/env/vector_head_memory.h"
#include "core/tiering/tier_manager.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

constexpr int kReaders = 4;
constexpr int kReadsPerReader = 6000;
// Hammer threads complete reads of a few keys in a tight loop (no streaming),
// maximising concurrent increments of one score.
constexpr int kHammers = 2;
constexpr int kReadsPerHammer = 20000;
constexpr int kHammerKeys[] = {0, 40, 70, 90};
constexpr int kFixedKeys = 88;  // 32 preferred + 32 + 24 foreign
constexpr int kArenaKeys = 8;
constexpr int kKeys = kFixedKeys + kArenaKeys;
constexpr int kPassesMax = 12;

TierKey KeyOf(int i) { return TierKey{ObjectName{"stress", absl::StrCat("k", i)}, 0}; }

// Byte j of key i's value: cheap to check anywhere in the value.
uint8_t ByteOf(int key, uint64_t j) { return static_cast<uint8_t>(key * 131 + j * 7 + (j >> 9)); }

std::vector<uint8_t> ValueOf(int key, uint64_t size) {
  std::vector<uint8_t> v(size);
  for (uint64_t j = 0; j < size; ++j) v[j] = ByteOf(key, j);
  return v;
}

uint64_t XorShift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

class TieringStress : public ::testing::Test {
 protected:
  TieringStress() {
    knobs_ = TieringKnobs::TestMin();  // 64 KiB blocks, 8 KiB heads
    knobs_.memory_bytes = 4 * knobs_.block_bytes;
    knobs_.sub_memory_bytes = {6 * knobs_.block_bytes, 6 * knobs_.block_bytes};
    knobs_.stores_in_flight_max = 64;
    memory_ = std::make_unique<VectorHeadMemory>(RegionSizes(PlanRegions(knobs_)));
    auto tm = TierManager::Create(env_.env(), knobs_, memory_.get());
    HS_CHECK_OK(tm.status());
    tm_ = *std::move(tm);
    for (int i = 0; i < kFixedKeys; ++i) {
      HS_CHECK_OK(tm_->Put(KeyOf(i), ValueOf(i, knobs_.ram_head_bytes)));
    }
    for (int i = kFixedKeys; i < kKeys; ++i) HS_CHECK_OK(tm_->Put(KeyOf(i), ValueOf(i, 200)));
  }

  // One reader: skewed key choice whose hot range moves over time, so
  // different foreign blocks become the hottest and exchanges keep happening.
  // Records, per key, the decay counters seen around each completed read.
  void ReaderLoop(int id, bool hammer, std::vector<std::vector<int64_t>>* seen) {
    uint64_t s = 0x9E3779B97F4A7C15ULL * (id + 1);
    std::vector<uint8_t> buf(1024);
    const int reads = hammer ? kReadsPerHammer : kReadsPerReader;
    for (int n = 0; n < reads; ++n) {
      const int phase = n / 400;
      int key = XorShift(s) % 4 != 0
                    ? (phase * 16 + static_cast<int>(XorShift(s) % 16)) % kKeys
                    : static_cast<int>(XorShift(s) % kKeys);
      if (hammer) key = kHammerKeys[n % 4];
      const int64_t finished_before = finished_.load();
      absl::StatusOr<ReadToken> t = tm_->OpenRead(KeyOf(key));
      HS_CHECK_OK(t.status());
      if (!hammer && t->residence() != Residence::kEvicted) {
        // Stream the value in chunks (and re-read one, as a retry would).
        const uint64_t size = t->size_bytes();
        for (uint64_t off = 0; off < size; off += 4096) {
          const uint64_t len = std::min<uint64_t>({4096, size - off, buf.size()});
          HS_CHECK_OK(tm_->ReadBytes(*t, off, absl::MakeSpan(buf.data(), len)));
          for (uint64_t j = 0; j < len; j += 61) HS_CHECK(buf[j] == ByteOf(key, off + j));
        }
        HS_CHECK_OK(tm_->ReadBytes(*t, 0, absl::MakeSpan(buf.data(), 8)));
      }
      tm_->CompleteRead(*std::move(t));
      const int64_t started_after = started_.load();
      (*seen)[key][finished_before * (kPassesMax + 1) + started_after] += 1;
    }
  }

  void PromotionLoop() {
    int round_number = 0;
    while (!readers_done_.load()) {
      absl::StatusOr<PromotionRound> round = tm_->TryBeginPromotion();
      if (!round.ok()) {
        std::this_thread::yield();
        continue;
      }
      std::vector<RegionSummary> summaries(round->region_count());
      if (++round_number % 4 == 0) {
        // As the runtime does: one scanning worker per node.
        std::vector<std::thread> workers;
        for (int r = 0; r < round->region_count(); ++r) {
          workers.emplace_back([&, r] { summaries[r] = round->ScanRegion(r); });
        }
        for (std::thread& w : workers) w.join();
      } else {
        for (int r = 0; r < round->region_count(); ++r) summaries[r] = round->ScanRegion(r);
      }
      const PromotionResult result = round->Exchange(round->Reduce(summaries));
      HS_CHECK(result.outcome != PromotionOutcome::kFailed);
      round->Finish();
    }
  }

  void EvictionLoop() {
    uint64_t s = 12345;
    while (!readers_done_.load()) {
      const int key = static_cast<int>(XorShift(s) % kFixedKeys);
      const absl::Status evicted = tm_->EvictHead(KeyOf(key));
      HS_CHECK(evicted.ok() || absl::IsFailedPrecondition(evicted));
      std::this_thread::yield();
      // Readmission keeps the key's score; retry while the pool is full of
      // orphaned heads that readers still pin.
      absl::Status admitted;
      do {
        admitted = tm_->Put(KeyOf(key), ValueOf(key, knobs_.ram_head_bytes));
        HS_CHECK(admitted.ok() || absl::IsResourceExhausted(admitted));
      } while (!admitted.ok());
    }
  }

  // Hot-copy trades (PlaceHotNewcomer) on random keys: a trade moves a
  // score with its key, so no increment may be lost across it either.
  void TradeLoop() {
    uint64_t s = 777;
    while (!readers_done_.load()) {
      const int key = static_cast<int>(XorShift(s) % kFixedKeys);
      const absl::StatusOr<bool> traded = tm_->PlaceHotNewcomer(KeyOf(key));
      HS_CHECK_OK(traded.status());
      std::this_thread::yield();
    }
  }

  void DecayLoop(int passes) {
    for (int p = 0; p < passes && !readers_done_.load(); ++p) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      tm_->MarkDecayPending();
      absl::StatusOr<DecayPass> pass = tm_->TryBeginDecay();
      while (!pass.ok()) {
        HS_CHECK(absl::IsUnavailable(pass.status()));
        std::this_thread::yield();
        pass = tm_->TryBeginDecay();
      }
      started_.fetch_add(1);
      // Each region decayed by "its node's" worker, the index here.
      std::vector<std::thread> workers;
      for (int r = 0; r < pass->region_count(); ++r) {
        workers.emplace_back([&, r] { pass->DecayRegion(r); });
      }
      for (int sh = 0; sh < pass->shard_count(); ++sh) pass->DecayIndexShard(sh);
      for (std::thread& w : workers) w.join();
      pass->Finish();
      finished_.fetch_add(1);
    }
  }

  // Runs readers plus the background threads; returns per-key observations.
  std::vector<std::vector<int64_t>> Run(int decay_passes) {
    constexpr int kThreads = kReaders + kHammers;
    std::vector<std::vector<std::vector<int64_t>>> seen(
        kThreads, std::vector<std::vector<int64_t>>(
                      kKeys, std::vector<int64_t>((kPassesMax + 1) * (kPassesMax + 1), 0)));
    std::vector<std::thread> background;
    background.emplace_back([this] { PromotionLoop(); });
    background.emplace_back([this] { EvictionLoop(); });
    background.emplace_back([this] { TradeLoop(); });
    std::thread decay([this, decay_passes] { DecayLoop(decay_passes); });
    std::vector<std::thread> readers;
    for (int i = 0; i < kThreads; ++i) {
      readers.emplace_back([this, i, &seen] { ReaderLoop(i, i >= kReaders, &seen[i]); });
    }
    for (std::thread& t : readers) t.join();
    readers_done_.store(true);
    for (std::thread& t : background) t.join();
    decay.join();
    std::vector<std::vector<int64_t>> merged = seen[0];
    for (int i = 1; i < kThreads; ++i) {
      for (int k = 0; k < kKeys; ++k) {
        for (size_t c = 0; c < merged[k].size(); ++c) merged[k][c] += seen[i][k][c];
      }
    }
    return merged;
  }

  TieringKnobs knobs_;
  ManualEnv env_;
  std::unique_ptr<VectorHeadMemory> memory_;
  std::unique_ptr<TierManager> tm_;
  std::atomic<bool> readers_done_{false};
  std::atomic<int64_t> started_{0};
  std::atomic<int64_t> finished_{0};
};

TEST_F(TieringStress, NoLostIncrementUnderExchangesAndOwnershipMoves) {
  const std::vector<std::vector<int64_t>> seen = Run(/*decay_passes=*/0);
  int64_t total = 0;
  for (int k = 0; k < kKeys; ++k) {
    int64_t reads = 0;
    for (int64_t c : seen[k]) reads += c;
    total += reads;
    absl::StatusOr<double> score = tm_->Score(KeyOf(k));
    ASSERT_TRUE(score.ok());
    EXPECT_EQ(*score, static_cast<double>(reads)) << "key " << k;
  }
  EXPECT_EQ(total, int64_t{kReaders} * kReadsPerReader + int64_t{kHammers} * kReadsPerHammer);
  const TieringStats st = tm_->stats();
  EXPECT_EQ(st.reads_local + st.reads_foreign + st.reads_evicted, total);
  EXPECT_GT(st.exchanges, 0);
  EXPECT_GT(st.evictions, 0);
  RecordProperty("exchanges", static_cast<int>(st.exchanges));
  RecordProperty("evictions", static_cast<int>(st.evictions));
  RecordProperty("head_trades", static_cast<int>(st.head_trades));
  EXPECT_TRUE(tm_->CheckInvariants().ok()) << tm_->CheckInvariants();
}

TEST_F(TieringStress, DecayedScoresStayWithinExactBounds) {
  const std::vector<std::vector<int64_t>> seen = Run(kPassesMax);
  const int64_t passes = finished_.load();
  ASSERT_EQ(passes, started_.load());
  ASSERT_GT(passes, 0);
  for (int k = 0; k < kKeys; ++k) {
    // A read that saw `f` passes finished before it and `s` started after it
    // was decayed by between passes - s and passes - f of them. With
    // increment 1 and decay 0.5 every value here is exact in binary.
    double low = 0, high = 0;
    for (int f = 0; f <= kPassesMax; ++f) {
      for (int s = 0; s <= kPassesMax; ++s) {
        const int64_t count = seen[k][f * (kPassesMax + 1) + s];
        if (count == 0) continue;
        low += static_cast<double>(count) * std::ldexp(1.0, -static_cast<int>(passes - f));
        high += static_cast<double>(count) * std::ldexp(1.0, -static_cast<int>(passes - s));
      }
    }
    absl::StatusOr<double> score = tm_->Score(KeyOf(k));
    ASSERT_TRUE(score.ok());
    EXPECT_GE(*score, low) << "key " << k;
    EXPECT_LE(*score, high) << "key " << k;
  }
  EXPECT_EQ(tm_->stats().decay_passes, passes);
  RecordProperty("decay_passes", static_cast<int>(passes));
  RecordProperty("exchanges", static_cast<int>(tm_->stats().exchanges));
  EXPECT_TRUE(tm_->CheckInvariants().ok()) << tm_->CheckInvariants();
}

}  // namespace
}  // namespace heatsink
