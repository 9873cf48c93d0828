#include "core/replication/heat_window.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/mutex.h"

namespace heatsink {
namespace {

constexpr uint32_t kNoSlot = std::numeric_limits<uint32_t>::max();
// An index cell holds (tag << 24) | (slot + 1); 0 is empty. The 8-bit tag
// (top bits of the key's hash) rejects most non-matching cells without
// touching the slot.
constexpr uint32_t kSlotBits = 24;
constexpr uint32_t kSlotMask = (uint32_t{1} << kSlotBits) - 1;
constexpr uint16_t kCounterMax = std::numeric_limits<uint16_t>::max();
constexpr size_t kFieldBytesMax = std::numeric_limits<uint16_t>::max();
constexpr size_t kKeyBytesMax = std::numeric_limits<uint32_t>::max();

// HeatHandle bits: [generation:32][shard:8][slot + 1:24].
constexpr int kHandleShardShift = kSlotBits;
constexpr int kHandleGenerationShift = 32;
constexpr int32_t kShardsMax = 256;

uint32_t TagOf(uint64_t hash) { return static_cast<uint32_t>(hash >> 56); }

size_t IndexSizeFor(uint32_t capacity) {
  // Load <= 0.75 at the entry limit, and always at least one empty cell. Not
  // a power of two (a cell is found by multiply-shift, not by a mask), so
  // the index costs 4 / 0.75 bytes per key at every entry limit.
  return static_cast<size_t>(capacity) * 4 / 3 + 2;
}

// The home cell of a key: the high bits of hash32 scaled to the index size
// (Lemire's multiply-shift reduction).
size_t HomeCell(uint32_t hash32, size_t size) {
  return static_cast<size_t>((static_cast<uint64_t>(hash32) * size) >> 32);
}

size_t NextCell(size_t pos, size_t size) { return pos + 1 == size ? 0 : pos + 1; }

// Cells from `from` forward to `to`, cyclically.
size_t CyclicDistance(size_t from, size_t to, size_t size) {
  return to >= from ? to - from : to + size - from;
}

}  // namespace

struct HeatWindow::Slot {
  // The fields a read of a tracked key touches come first.
  // Live: index of the newest sub-bucket (time / bucket_ns). Free: the next
  // free slot, or kNoSlot.
  int64_t head_bucket = 0;
  // A number from the shard's generation clock, drawn when a key takes the
  // slot and again when the slot is freed: a HeatHandle names the slot and
  // this number, so it matches only while the slot holds the key it was
  // issued for.
  uint32_t generation = 0;
  uint32_t key_len = 0;
  uint16_t tenant_len = 0;
  uint16_t domain_len = 0;
  // The ring of sub-bucket counters (the first sub_buckets are used), kept in
  // the slot so that a read touches one place. Live: the newest bucket
  // (head_bucket % sub_buckets) is never 0, because a bucket becomes the
  // newest only through the read it counts; so a live entry is idle exactly
  // when its newest bucket has left the window.
  uint16_t ring[kHeatWindowSubBucketsMax] = {};
  uint32_t hash32 = 0;  // low bits of StableHeatKeyHash: home index cell
  // [tenant][key][domain]; null while the slot is free.
  std::unique_ptr<char[]> block;

  uint32_t block_len() const { return tenant_len + key_len + domain_len; }
};
static_assert(sizeof(std::unique_ptr<char[]>) == 8);

struct alignas(64) HeatWindow::Shard {
  mutable Mutex mu;
  uint32_t capacity = 0;  // slots at most
  std::vector<Slot> slots ABSL_GUARDED_BY(mu);
  // slots.data(): fixed after construction, because the capacity is
  // reserved then and never exceeded. Read without the lock, for prefetching
  // only.
  const Slot* slot_base = nullptr;
  std::vector<uint32_t> index ABSL_GUARDED_BY(mu);   // open addressing, linear probing
  uint32_t live ABSL_GUARDED_BY(mu) = 0;
  uint32_t free_head ABSL_GUARDED_BY(mu) = kNoSlot;
  uint32_t hand ABSL_GUARDED_BY(mu) = 0;
  // Keys inserted so far (wraps): the generation of the next insert. Not
  // reset by Clear(), so a handle from before a Clear() never matches.
  uint32_t generation_clock ABSL_GUARDED_BY(mu) = 0;
  int64_t key_bytes ABSL_GUARDED_BY(mu) = 0;
  HeatWindowStats stats ABSL_GUARDED_BY(mu);
};

namespace {

// Everything below runs with the shard's lock held; the helpers take the
// pieces they need so that the locking stays in the public methods.

struct Geometry {
  int32_t n;  // sub-buckets
  int64_t hit_count;
};

int64_t SumRing(const uint16_t* ring, int32_t n) {
  int64_t sum = 0;
  for (int32_t b = 0; b < n; ++b) sum += ring[b];
  return sum;
}

// Whether a live entry whose newest bucket is `head` has no read in the
// window at bucket `cur` (its newest bucket is never 0, see Slot::ring).
bool IdleAt(int64_t head, int64_t cur, int32_t n) { return cur - head >= n; }

// Reads in the window at bucket `cur` of a ring whose newest bucket is `head`.
int64_t CountAt(const uint16_t* ring, int64_t head, int64_t cur, int32_t n) {
  const int64_t age = std::max<int64_t>(0, cur - head);
  if (age >= n) return 0;
  if (age == 0) return SumRing(ring, n);  // the common case: read this bucket
  const int32_t head_pos = static_cast<int32_t>(head % n);
  int64_t sum = 0;
  for (int32_t k = 0; k < n - age; ++k) {
    int32_t pos = head_pos - k;
    if (pos < 0) pos += n;
    sum += ring[pos];
  }
  return sum;
}

// Moves the ring's newest bucket from `head` forward to `to`, zeroing the
// buckets it passes, and returns the position of bucket `to` in the ring.
// REQUIRES: to >= head. One division, none per step.
int32_t Roll(uint16_t* ring, int64_t head, int64_t to, int32_t n) {
  const int64_t steps = to - head;
  if (steps >= n) {
    std::fill(ring, ring + n, 0);
    return static_cast<int32_t>(to % n);
  }
  int32_t pos = static_cast<int32_t>(head % n);
  for (int64_t k = 0; k < steps; ++k) {
    if (++pos == n) pos = 0;
    ring[pos] = 0;
  }
  return pos;
}

template <typename SlotT>
bool SlotMatches(const SlotT& e, HeatKeyView key) {
  if (e.tenant_len != key.tenant.size() || e.key_len != key.key.size() ||
      e.domain_len != key.domain.size()) {
    return false;
  }
  const char* p = e.block.get();
  // Empty parts are skipped: their data() may be null, which memcmp must not see.
  const auto matches = [&p](absl::string_view part) {
    const bool same = part.empty() || std::memcmp(p, part.data(), part.size()) == 0;
    p += part.size();
    return same;
  };
  return matches(key.tenant) && matches(key.key) && matches(key.domain);
}

template <typename SlotT>
HeatKey DecodeSlot(const SlotT& e) {
  const char* p = e.block.get();
  return HeatKey(std::string(p, e.tenant_len), std::string(p + e.tenant_len, e.key_len),
                 std::string(p + e.tenant_len + e.key_len, e.domain_len));
}

}  // namespace

HeatWindow::Options HeatWindow::Options::FromKnobs(const ReplicationKnobs& knobs) {
  Options o;
  o.window_ns = knobs.heat_window_ns();
  o.sub_buckets = static_cast<int32_t>(knobs.dynamic_replication_heat_window_sub_buckets);
  o.entries_max = knobs.dynamic_replication_heat_window_entries_max;
  o.hit_count = knobs.AdmissionHitCount();
  return o;
}

HeatWindow::HeatWindow(const Options& options)
    : options_(options),
      bucket_ns_(options.sub_buckets > 0 ? options.window_ns / options.sub_buckets : 0),
      shard_count_(static_cast<int32_t>(
          std::min<int64_t>(std::max<int32_t>(options.shards, 1), options.entries_max))) {
  HS_CHECK(options.sub_buckets >= 1 && options.sub_buckets <= kHeatWindowSubBucketsMax);
  HS_CHECK(options.window_ns > 0 && options.window_ns % options.sub_buckets == 0);
  HS_CHECK(options.entries_max >= 1 && options.entries_max <= kHeatWindowEntriesMaxLimit);
  HS_CHECK(options.hit_count >= 1 && options.hit_count <= kAdmissionHitCountMax);
  HS_CHECK(options.cleanup_slots_per_record >= 0);
  HS_CHECK(options.replacement_probe_slots >= 1);
  HS_CHECK_MSG(shard_count_ <= kShardsMax, "a HeatHandle has 8 bits of shard");
  static_assert(sizeof(Slot) == 32 + 2 * kHeatWindowSubBucketsMax, "slot layout (memory bound)");
  shards_ = std::make_unique<Shard[]>(static_cast<size_t>(shard_count_));
  const int64_t base = options.entries_max / shard_count_;
  const int64_t extra = options.entries_max % shard_count_;
  for (int32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    s.capacity = static_cast<uint32_t>(base + (i < extra ? 1 : 0));
    s.slots.reserve(s.capacity);
    s.slot_base = s.slots.data();
    s.index.assign(IndexSizeFor(s.capacity), 0);
  }
}

HeatWindow::~HeatWindow() = default;

int32_t HeatWindow::ShardIndexFor(uint64_t hash) const {
  // Bits 32..63 choose the shard; bits 0..31 the index cell inside it. A
  // 32-bit remainder (bits 32..63 fit in 32 bits): the same shard, a cheaper
  // division on the read path.
  return static_cast<int32_t>(static_cast<uint32_t>(hash >> 32) %
                              static_cast<uint32_t>(shard_count_));
}

namespace {

// Index position holding `key`, or the empty cell where it would go.
struct Probe {
  size_t pos;
  uint32_t slot;  // kNoSlot when absent
};

template <typename ShardT>
Probe FindKey(const ShardT& s, uint64_t hash, HeatKeyView key) {
  const size_t size = s.index.size();
  const uint32_t tag = TagOf(hash);
  const uint32_t hash32 = static_cast<uint32_t>(hash);
  size_t pos = HomeCell(hash32, size);
  for (;;) {
    const uint32_t cell = s.index[pos];
    if (cell == 0) return Probe{pos, kNoSlot};
    if ((cell >> kSlotBits) == tag) {
      const uint32_t slot = (cell & kSlotMask) - 1;
      const auto& e = s.slots[slot];
      if (e.hash32 == hash32 && SlotMatches(e, key)) return Probe{pos, slot};
    }
    pos = NextCell(pos, size);
  }
}

// Removes the index cell of `slot` and closes the gap by shifting later cells
// of the cluster back (no tombstones, so lookups never slow down with churn).
template <typename ShardT>
void EraseFromIndex(ShardT& s, uint32_t slot) {
  const size_t size = s.index.size();
  size_t hole = HomeCell(s.slots[slot].hash32, size);
  while ((s.index[hole] & kSlotMask) != slot + 1) hole = NextCell(hole, size);
  size_t j = hole;
  for (;;) {
    j = NextCell(j, size);
    const uint32_t cell = s.index[j];
    if (cell == 0) break;
    const size_t home = HomeCell(s.slots[(cell & kSlotMask) - 1].hash32, size);
    // A cell whose home lies cyclically in (hole, j] must stay.
    if (CyclicDistance(home, j, size) >= CyclicDistance(hole, j, size)) {
      s.index[hole] = cell;
      hole = j;
    }
  }
  s.index[hole] = 0;
}

HeatHandle MakeHandle(int32_t shard, uint32_t slot, uint32_t generation) {
  return static_cast<uint64_t>(generation) << kHandleGenerationShift |
         static_cast<uint64_t>(shard) << kHandleShardShift | (slot + 1);
}

}  // namespace

HeatRecord HeatWindow::Record(TimeNs now, HeatKeyView key) { return Record(now, key, nullptr); }

HeatRecord HeatWindow::Record(TimeNs now, HeatKeyView key, HeatHandle* handle) {
  HS_CHECK(now >= 0);
  const int32_t n = options_.sub_buckets;
  const int64_t cur = now / bucket_ns_;

  // The handle's slot, if it still holds this key: no hashing, no index.
  if (handle != nullptr && *handle != kNoHeatHandle) {
    const uint32_t slot = static_cast<uint32_t>(*handle & kSlotMask) - 1;
    const uint32_t shard = static_cast<uint32_t>(*handle >> kHandleShardShift) & 0xff;
    const uint32_t generation = static_cast<uint32_t>(*handle >> kHandleGenerationShift);
    if (shard < static_cast<uint32_t>(shard_count_)) {
      Shard& s = shards_[shard];
      MutexLock lock(&s.mu);
      if (slot < s.slots.size()) {
        Slot& e = s.slots[slot];
        // Same tenant and key (the handle's contract) and equal lengths:
        // an empty domain matches without reading the key bytes; another
        // domain is compared.
        if (e.generation == generation && e.tenant_len == key.tenant.size() && e.key_len == key.key.size() &&
            e.domain_len == key.domain.size() &&
            (key.domain.empty() ||
             std::memcmp(e.block.get() + e.tenant_len + e.key_len, key.domain.data(),
                         key.domain.size()) == 0)) {
          ++s.stats.handle_hits;
          return RecordLocked(s, slot, cur);
        }
      }
    }
  }

  HeatRecord out;
  const uint64_t hash = StableHeatKeyHash(key);
  const int32_t shard_index = ShardIndexFor(hash);
  Shard& s = shards_[static_cast<size_t>(shard_index)];
  const int64_t hit_count = options_.hit_count;

  MutexLock lock(&s.mu);
  if (key.tenant.size() > kFieldBytesMax || key.domain.size() > kFieldBytesMax ||
      key.key.size() > kKeyBytesMax ||
      key.tenant.size() + key.key.size() + key.domain.size() > kKeyBytesMax) {
    ++s.stats.records;
    ++s.stats.untracked;
    out.tracked = false;
    if (handle != nullptr) *handle = kNoHeatHandle;
    return out;
  }
  const size_t key_block_len = key.tenant.size() + key.key.size() + key.domain.size();

  const Probe found = FindKey(s, hash, key);
  if (found.slot != kNoSlot) {
    if (handle != nullptr) {
      *handle = MakeHandle(shard_index, found.slot, s.slots[found.slot].generation);
    }
    return RecordLocked(s, found.slot, cur);
  }
  ++s.stats.records;
  // Take a free slot, grow into the reserved capacity, or replace.
  uint32_t slot = kNoSlot;
  bool replaced = false;
  if (s.free_head != kNoSlot) {
    slot = s.free_head;
    s.free_head = static_cast<uint32_t>(s.slots[slot].head_bucket);
  } else if (s.slots.size() < s.capacity) {
    slot = static_cast<uint32_t>(s.slots.size());
    s.slots.emplace_back();  // within the reserved capacity: slot_base stays
  } else {
    // Full: every slot is live. Probe at the hand for the coldest entry.
    uint32_t best = kNoSlot;
    int64_t best_count = 0;
    int64_t best_head = 0;
    const uint32_t size = static_cast<uint32_t>(s.slots.size());
    for (int32_t i = 0; i < options_.replacement_probe_slots; ++i) {
      const uint32_t idx = s.hand;
      s.hand = idx + 1 == size ? 0 : idx + 1;
      ++s.stats.slot_visits;
      const Slot& e = s.slots[idx];
      const int64_t c = CountAt(e.ring, e.head_bucket, cur, n);
      if (c == 0) {
        best = idx;
        best_count = 0;
        break;
      }
      if (c >= hit_count) continue;  // hot now: never replaced
      if (best == kNoSlot || c < best_count || (c == best_count && e.head_bucket < best_head)) {
        best = idx;
        best_count = c;
        best_head = e.head_bucket;
      }
    }
    if (best == kNoSlot) {
      ++s.stats.untracked;
      out.tracked = false;
      if (handle != nullptr) *handle = kNoHeatHandle;
      return out;
    }
    if (best_count == 0) {
      ++s.stats.idle_reclaims;
    } else {
      ++s.stats.replacements;
    }
    EraseFromIndex(s, best);
    s.key_bytes -= s.slots[best].block_len();
    --s.live;
    slot = best;
    replaced = true;
  }
  Slot& e = s.slots[slot];
  // A replaced entry's block is reused when the new key has the same
  // length (keys of one workload usually do); otherwise it is reallocated.
  if (e.block == nullptr || e.block_len() != key_block_len) {
    e.block = std::make_unique<char[]>(key_block_len);
  }
  char* p = e.block.get();
  // An empty view may have a null data(), which memcpy must not see even
  // for zero bytes (the stage-1 domain is such a view).
  const auto append = [&p](absl::string_view part) {
    if (!part.empty()) std::memcpy(p, part.data(), part.size());
    p += part.size();
  };
  append(key.tenant);
  append(key.key);
  append(key.domain);
  e.tenant_len = static_cast<uint16_t>(key.tenant.size());
  e.key_len = static_cast<uint32_t>(key.key.size());
  e.domain_len = static_cast<uint16_t>(key.domain.size());
  e.hash32 = static_cast<uint32_t>(hash);
  e.generation = s.generation_clock++;
  e.head_bucket = cur;
  std::fill(e.ring, e.ring + n, 0);
  e.ring[cur % n] = 1;
  // The replacement may have shifted index cells: find the empty cell again.
  const size_t cell = replaced ? FindKey(s, hash, key).pos : found.pos;
  s.index[cell] = (TagOf(hash) << kSlotBits) | (slot + 1);
  ++s.live;
  s.key_bytes += static_cast<int64_t>(key_block_len);
  ++s.stats.inserts;
  if (handle != nullptr) *handle = MakeHandle(shard_index, slot, e.generation);
  Cleanup(s, slot, cur);
  out.count_in_window = 1;
  out.crossed = hit_count <= 1;
  if (out.crossed) ++s.stats.crossings;
  return out;
}

HeatRecord HeatWindow::RecordLocked(Shard& s, uint32_t slot, int64_t cur) {
  const int32_t n = options_.sub_buckets;
  const int64_t hit_count = options_.hit_count;
  ++s.stats.records;
  Slot& e = s.slots[slot];
  const int64_t at = std::max(cur, e.head_bucket);
  const int32_t pos = Roll(e.ring, e.head_bucket, at, n);
  e.head_bucket = at;
  // After the roll every bucket of the ring lies inside the window.
  const int64_t before = SumRing(e.ring, n);
  uint16_t& c = e.ring[pos];
  int64_t after = before;
  if (c < kCounterMax) {
    ++c;
    ++after;
  }
  // No cleanup here: it makes room for new keys, so inserts run it (a read
  // of a tracked key then touches its own slot only).
  HeatRecord out;
  out.count_in_window = after;
  out.crossed = before < hit_count && after >= hit_count;
  if (out.crossed) ++s.stats.crossings;
  return out;
}

void HeatWindow::Cleanup(Shard& s, uint32_t touched, int64_t cur) {
  // Incremental cleanup: a fixed number of slots per call, never a scan.
  const int32_t n = options_.sub_buckets;
  const uint32_t size = static_cast<uint32_t>(s.slots.size());
  for (int32_t i = 0; i < options_.cleanup_slots_per_record && size > 0; ++i) {
    // The hand wraps at the size of its time, which only grows until Clear
    // (which resets it), so it is below `size`; the test is a safeguard.
    const uint32_t idx = s.hand < size ? s.hand : 0;
    s.hand = idx + 1 == size ? 0 : idx + 1;
    ++s.stats.slot_visits;
    Slot& e = s.slots[idx];
    if (e.block == nullptr || idx == touched) continue;
    if (!IdleAt(e.head_bucket, cur, n)) continue;
    EraseFromIndex(s, idx);
    s.key_bytes -= e.block_len();
    e.block.reset();
    e.generation = s.generation_clock++;  // handles to the old key stop matching
    e.head_bucket = s.free_head;
    s.free_head = idx;
    --s.live;
    ++s.stats.idle_reclaims;
  }
}

void HeatWindow::Prefetch(HeatHandle handle) const {
  if (handle == kNoHeatHandle) return;
  const uint32_t slot = static_cast<uint32_t>(handle & kSlotMask) - 1;
  const uint32_t shard = static_cast<uint32_t>(handle >> kHandleShardShift) & 0xff;
  if (shard >= static_cast<uint32_t>(shard_count_)) return;
  const Shard& s = shards_[shard];
  if (slot >= s.capacity) return;
  // The shard's lock word and the slot's two cache lines, for writing.
  __builtin_prefetch(&s, 1);
  const char* p = reinterpret_cast<const char*>(s.slot_base + slot);
  __builtin_prefetch(p, 1);
  __builtin_prefetch(p + sizeof(Slot) - 1, 1);
}

int64_t HeatWindow::CountInWindow(TimeNs now, HeatKeyView key) const {
  HS_CHECK(now >= 0);
  const uint64_t hash = StableHeatKeyHash(key);
  const Shard& s = shards_[static_cast<size_t>(ShardIndexFor(hash))];
  MutexLock lock(&s.mu);
  const Probe found = FindKey(s, hash, key);
  if (found.slot == kNoSlot) return 0;
  const Slot& e = s.slots[found.slot];
  return CountAt(e.ring, e.head_bucket, now / bucket_ns_, options_.sub_buckets);
}

std::vector<HotKey> HeatWindow::HotKeys(TimeNs now, int64_t min_count, size_t limit) const {
  HS_CHECK(now >= 0);
  const int32_t n = options_.sub_buckets;
  const int64_t cur = now / bucket_ns_;
  const int64_t threshold = std::max<int64_t>(1, min_count);
  std::vector<HotKey> out;
  if (limit == 0) return out;
  const auto hotter = [](const HotKey& a, const HotKey& b) {
    if (a.count_in_window != b.count_in_window) return a.count_in_window > b.count_in_window;
    return a.key < b.key;
  };
  for (int32_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    for (size_t idx = 0; idx < s.slots.size(); ++idx) {
      const Slot& e = s.slots[idx];
      if (e.block == nullptr) continue;
      const int64_t c = CountAt(e.ring, e.head_bucket, cur, n);
      if (c < threshold) continue;
      out.push_back(HotKey{DecodeSlot(e), c});
    }
    // Keep at most `limit` between shards so the result stays bounded.
    if (out.size() > limit) {
      std::partial_sort(out.begin(), out.begin() + static_cast<ptrdiff_t>(limit), out.end(),
                        hotter);
      out.resize(limit);
    }
  }
  std::sort(out.begin(), out.end(), hotter);
  return out;
}

void HeatWindow::Clear() {
  for (int32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    s.slots.clear();  // keeps the reserved capacity
    std::fill(s.index.begin(), s.index.end(), 0);
    s.live = 0;
    s.free_head = kNoSlot;
    s.hand = 0;
    s.key_bytes = 0;
  }
}

HeatWindowStats HeatWindow::stats() const {
  HeatWindowStats total;
  for (int32_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    total.records += s.stats.records;
    total.handle_hits += s.stats.handle_hits;
    total.inserts += s.stats.inserts;
    total.replacements += s.stats.replacements;
    total.idle_reclaims += s.stats.idle_reclaims;
    total.untracked += s.stats.untracked;
    total.crossings += s.stats.crossings;
    total.slot_visits += s.stats.slot_visits;
    total.tracked_keys += s.live;
  }
  return total;
}

HeatWindowMemory HeatWindow::Memory() const {
  HeatWindowMemory m;
  m.fixed_bytes =
      static_cast<int64_t>(sizeof(HeatWindow)) + static_cast<int64_t>(sizeof(Shard)) * shard_count_;
  for (int32_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    m.tracked_keys += s.live;
    m.fixed_bytes += static_cast<int64_t>(
        s.slots.capacity() * sizeof(Slot) +
        s.index.capacity() * sizeof(uint32_t));
    m.key_bytes += s.key_bytes;
  }
  return m;
}

absl::Status HeatWindow::CheckInvariants() const {
  const int32_t n = options_.sub_buckets;
  for (int32_t i = 0; i < shard_count_; ++i) {
    const Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    const auto fail = [i](absl::string_view what) {
      return absl::InternalError(absl::StrCat("heat window shard ", i, ": ", what));
    };
    if (s.slots.size() > s.capacity) return fail("more slots than capacity");
    uint32_t live = 0;
    int64_t key_bytes = 0;
    const size_t index_size = s.index.size();
    for (uint32_t idx = 0; idx < s.slots.size(); ++idx) {
      const Slot& e = s.slots[idx];
      if (e.block == nullptr) continue;
      ++live;
      key_bytes += e.block_len();
      if (e.ring[e.head_bucket % n] == 0) {
        return fail(absl::StrCat("slot ", idx, " has an empty newest bucket"));
      }
      if (std::any_of(e.ring + n, e.ring + kHeatWindowSubBucketsMax,
                      [](uint16_t c) { return c != 0; })) {
        return fail(absl::StrCat("slot ", idx, " counts beyond its sub-buckets"));
      }
      // Reachable from its home cell without crossing an empty cell.
      size_t pos = HomeCell(e.hash32, index_size);
      while (s.index[pos] != 0 && (s.index[pos] & kSlotMask) != idx + 1) {
        pos = NextCell(pos, index_size);
      }
      if (s.index[pos] == 0) return fail(absl::StrCat("slot ", idx, " unreachable in index"));
      const HeatKey k = DecodeSlot(e);
      if (static_cast<uint32_t>(StableHeatKeyHash(k.view())) != e.hash32) {
        return fail(absl::StrCat("slot ", idx, " hash does not match its key"));
      }
    }
    size_t cells = 0;
    for (const uint32_t cell : s.index) {
      if (cell == 0) continue;
      ++cells;
      const uint32_t slot = (cell & kSlotMask) - 1;
      if (slot >= s.slots.size() || s.slots[slot].block == nullptr) {
        return fail("index cell points at a free or missing slot");
      }
    }
    if (live != s.live || cells != live) return fail("live count disagrees with slots/index");
    if (key_bytes != s.key_bytes) return fail("key byte count disagrees with slots");
    size_t free_len = 0;
    for (uint32_t f = s.free_head; f != kNoSlot;
         f = static_cast<uint32_t>(s.slots[f].head_bucket)) {
      if (f >= s.slots.size() || s.slots[f].block != nullptr || ++free_len > s.slots.size()) {
        return fail("free list corrupt");
      }
    }
    if (free_len + live != s.slots.size()) return fail("free list misses free slots");
  }
  return absl::OkStatus();
}

}  // namespace heatsink
