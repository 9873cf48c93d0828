// File: core/tiering/key_index.h
//
// The sharded key index of the tiering core. One entry per indexed key (an
// object chunk of at most --ram-head bytes, DESIGN data flow 5) with its
// residence and, for keys whose score is not in a dense slot, the score
// itself (ADR-0019 single owner):
//
//   residence    where the bytes are           who owns the score
//   kFixedHead   a fixed buddy slot            the region's dense slot; the
//                                              entry holds the no-score tag
//   kArena       the compact small-object      the entry (relaxed atomic)
//                arena, never promoted
//   kEvicted     elsewhere (disk-backed; the   the entry (relaxed atomic)
//                head was evicted)
//
// Storage: each shard keeps its entries in chunks (stable addresses, reused
// through a free list) beside a hash set of pointers to them, probed by key
// (a key is stored once, in its entry). Chunks grow
// geometrically from kChunkEntriesMin to kChunkEntriesMax entries, so a shard
// holding a few keys (a small host, or many shards) does not construct and
// touch a full chunk, and a shard's last chunk leaves at most 63 entries
// unused (with 1,024-entry chunks, 64 shards of four hosts holding 10^5 keys
// left a quarter of their entries unused: 33 bytes per key). Decay and iteration walk the chunks in
// storage order -- sequential memory, not a pointer chase through the map -- which is also a
// deterministic order for a given sequence of inserts and erases (the chunk
// sizes do not change it: slots are handed out in the same order).
//
// Each call hashes its key once: the same hash picks the shard and probes the
// shard's map.
//
// Thread safety: each shard has its own mutex guarding its map, so Find,
// Insert, Erase and DecayShard are thread-safe. An entry's memory lives as
// long as the index (an erased entry is reused, never freed), so a pointer
// kept across calls stays dereferenceable; `live` and `incarnation` tell
// whether it still denotes the same key. Its residence/location fields are guarded by the caller's
// tier lock (written under the exclusive lock, read under the shared one); its score is a relaxed
// atomic.
#ifndef HEATSINK_CORE_TIERING_KEY_INDEX_H_
#define HEATSINK_CORE_TIERING_KEY_INDEX_H_

#include <algorithm>
#include <atomic>
#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/model/ids.h"

namespace heatsink {

// One indexed key: an object and the index of one of its --ram-head chunks.
struct TierKey {
  ObjectName object;
  uint32_t chunk = 0;

  friend auto operator<=>(const TierKey&, const TierKey&) = default;
  friend bool operator==(const TierKey&, const TierKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TierKey& k) {
    return H::combine(std::move(h), k.object, k.chunk);
  }
};

// "tenant/key#chunk", for messages.
std::string FormatTierKey(const TierKey& key);

enum class Residence : uint8_t { kFixedHead, kArena, kEvicted };

struct IndexEntry {
  IndexEntry() = default;
  IndexEntry(const IndexEntry&) = delete;
  IndexEntry& operator=(const IndexEntry&) = delete;

  // Set by KeyIndex::Insert and constant while the entry is live.
  TierKey key;
  // Distinguishes a key from an earlier one of the same name: a delete and
  // recreate gets a new incarnation (and a score of zero); a replacement keeps
  // both.
  uint64_t incarnation = 0;

  // Guarded by the tier lock.
  Residence residence = Residence::kEvicted;
  // False while the entry sits on the free list. Written under the shard
  // mutex, and only by Insert/Erase, which TierManager calls under its
  // exclusive tier lock; so a holder of the shared tier lock may read it.
  // (Beside residence: the two share the padding before region.)
  bool live = false;
  int region = -1;          // kFixedHead / kArena: region of the bytes
  uint64_t offset = 0;      // kFixedHead / kArena: byte offset in the region
  uint64_t size_bytes = 0;  // value size

  // The score when residence != kFixedHead, the no-score tag otherwise.
  std::atomic<double> score{0.0};
};

class KeyIndex {
 public:
  KeyIndex(int shards, int64_t keys_max);
  KeyIndex(const KeyIndex&) = delete;
  KeyIndex& operator=(const KeyIndex&) = delete;

  IndexEntry* Find(const TierKey& key) const;
  // A new entry (score 0, residence kEvicted until the caller sets it).
  // ALREADY_EXISTS if present; RESOURCE_EXHAUSTED at keys_max.
  [[nodiscard]] absl::StatusOr<IndexEntry*> Insert(const TierKey& key, uint64_t incarnation);
  // Removes and destroys the entry; false if absent.
  bool Erase(const TierKey& key);

  int64_t size() const { return size_.load(std::memory_order_relaxed); }
  int64_t keys_max() const { return keys_max_; }
  int shard_count() const { return static_cast<int>(shards_.size()); }

  // score *= factor for every live entry of `shard` that owns its score
  // (entries holding the tag are skipped).
  void DecayShard(int shard, double factor);

  // Calls fn(const IndexEntry&) for every live entry of `shard`, in storage
  // order.
  template <typename Fn>
  void ForEachInShard(int shard, Fn&& fn) const {
    const Shard& s = *shards_[shard];
    ReaderMutexLock lock(&s.mu);
    VisitLive(s, [&fn](const IndexEntry& e) { fn(e); });
  }

 private:
  static constexpr size_t kChunkEntriesMin = 16;
  static constexpr size_t kChunkEntriesMax = 64;
  // Entries of the shard's chunk number `c`.
  static constexpr size_t ChunkEntries(size_t c) {
    return c >= 2 ? kChunkEntriesMax : kChunkEntriesMin << c;
  }

  // A key with its absl::Hash, for lookups that hash once (heterogeneous
  // lookup: the set's hasher returns `hash` instead of hashing `key` again).
  struct HashedKey {
    const TierKey& key;
    size_t hash;
  };
  // The shard's set holds entry pointers and finds them by key: the key is
  // stored once, in the entry (constant while it is live), and the set's
  // slots are one pointer each. Growing the set hashes its keys again (an
  // entry keeping its hash cost 8 bytes per key, for a rare event).
  struct EntryHash {
    using is_transparent = void;
    size_t operator()(const IndexEntry* e) const { return absl::Hash<TierKey>{}(e->key); }
    size_t operator()(const HashedKey& key) const { return key.hash; }
  };
  struct EntryEq {
    using is_transparent = void;
    bool operator()(const IndexEntry* a, const IndexEntry* b) const { return a == b; }
    bool operator()(const IndexEntry* a, const HashedKey& b) const { return a->key == b.key; }
    bool operator()(const HashedKey& a, const IndexEntry* b) const { return (*this)(b, a); }
  };

  struct Shard {
    mutable Mutex mu;
    absl::flat_hash_set<IndexEntry*, EntryHash, EntryEq> by_key ABSL_GUARDED_BY(mu);
    std::vector<std::unique_ptr<IndexEntry[]>> chunks ABSL_GUARDED_BY(mu);
    size_t used_in_last_chunk ABSL_GUARDED_BY(mu) = 0;
    std::vector<IndexEntry*> free ABSL_GUARDED_BY(mu);
  };
  Shard& ShardOf(size_t hash) const;
  // Visits every live entry of `s` in storage order. REQUIRES: s.mu held.
  template <typename Fn>
  static void VisitLive(const Shard& s, Fn&& fn) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (size_t c = 0; c < s.chunks.size(); ++c) {
      const size_t used = c + 1 == s.chunks.size() ? s.used_in_last_chunk : ChunkEntries(c);
      for (size_t i = 0; i < used; ++i) {
        if (s.chunks[c][i].live) fn(s.chunks[c][i]);
      }
    }
  }

  const int64_t keys_max_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<int64_t> size_{0};
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_KEY_INDEX_H_
