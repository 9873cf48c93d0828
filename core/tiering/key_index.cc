#include "core/tiering/key_index.h"

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/env/rng.h"
#include "core/tiering/score.h"

namespace heatsink {

std::string FormatTierKey(const TierKey& key) {
  return absl::StrCat(key.object.tenant, "/", key.object.key, "#", key.chunk);
}

KeyIndex::KeyIndex(int shards, int64_t keys_max) : keys_max_(keys_max) {
  HS_CHECK(shards >= 1 && keys_max > 0);
  shards_.reserve(shards);
  for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

KeyIndex::Shard& KeyIndex::ShardOf(size_t hash) const {
  // The shard only decides which lock a key shares; no decision or output
  // depends on it, so the per-process salted absl::Hash is fine here. It is
  // remixed first: the shard's own hash table probes with the same hash, and
  // picking shards from those bits would crowd each shard's keys into a
  // fraction of its table's groups.
  const uint64_t h = Mix64(hash);
  return *shards_[h % shards_.size()];
}

IndexEntry* KeyIndex::Find(const TierKey& key) const {
  const HashedKey hashed{key, absl::Hash<TierKey>{}(key)};
  Shard& s = ShardOf(hashed.hash);
  ReaderMutexLock lock(&s.mu);
  auto it = s.by_key.find(hashed);
  return it == s.by_key.end() ? nullptr : *it;
}

absl::StatusOr<IndexEntry*> KeyIndex::Insert(const TierKey& key, uint64_t incarnation) {
  const HashedKey hashed{key, absl::Hash<TierKey>{}(key)};
  Shard& s = ShardOf(hashed.hash);
  MutexLock lock(&s.mu);
  if (s.by_key.find(hashed) != s.by_key.end()) {
    return absl::AlreadyExistsError(absl::StrCat("key ", FormatTierKey(key), " already indexed"));
  }
  if (size_.fetch_add(1, std::memory_order_relaxed) >= keys_max_) {
    size_.fetch_sub(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        absl::StrCat("tiering index full: index_keys_max=", keys_max_));
  }
  IndexEntry* entry = nullptr;
  if (!s.free.empty()) {
    entry = s.free.back();
    s.free.pop_back();
  } else {
    if (s.chunks.empty() || s.used_in_last_chunk == ChunkEntries(s.chunks.size() - 1)) {
      s.chunks.push_back(std::make_unique<IndexEntry[]>(ChunkEntries(s.chunks.size())));
      s.used_in_last_chunk = 0;
    }
    entry = &s.chunks.back()[s.used_in_last_chunk++];
  }
  entry->key = key;
  entry->incarnation = incarnation;
  entry->residence = Residence::kEvicted;
  entry->region = -1;
  entry->offset = 0;
  entry->size_bytes = 0;
  entry->score.store(0.0, std::memory_order_relaxed);
  entry->live = true;
  // Absent (checked above): constructs the element in the probed slot
  // without hashing the key again.
  s.by_key.lazy_emplace(hashed, [&](const auto& construct) { construct(entry); });
  return entry;
}

bool KeyIndex::Erase(const TierKey& key) {
  const HashedKey hashed{key, absl::Hash<TierKey>{}(key)};
  Shard& s = ShardOf(hashed.hash);
  MutexLock lock(&s.mu);
  auto it = s.by_key.find(hashed);
  if (it == s.by_key.end()) return false;
  IndexEntry* entry = *it;
  s.by_key.erase(it);
  entry->live = false;
  entry->key = TierKey{};  // release the name's heap bytes, if any
  s.free.push_back(entry);
  size_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void KeyIndex::DecayShard(int shard, double factor) {
  HS_CHECK(shard >= 0 && shard < shard_count());
  // Entries whose score lives in a dense slot hold the tag and are skipped.
  // The order of visits cannot affect the result: each key is scaled alone.
  const Shard& s = *shards_[shard];
  ReaderMutexLock lock(&s.mu);
  VisitLive(s, [factor](IndexEntry& e) { AtomicScaleScore(e.score, factor); });
}

}  // namespace heatsink
