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
// u16 tenant length, u16 domain length, ahead of the key bytes in a block.
constexpr size_t kBlockHeaderBytes = 4;
constexpr uint16_t kCounterMax = std::numeric_limits<uint16_t>::max();
constexpr size_t kFieldBytesMax = std::numeric_limits<uint16_t>::max();

uint32_t TagOf(uint64_t hash) { return static_cast<uint32_t>(hash >> 56); }

size_t IndexSizeFor(uint32_t capacity) {
  // Load <= 0.75 at the entry limit, and always at least one empty cell.
  size_t size = 8;
  while (size * 3 < static_cast<size_t>(capacity) * 4 + 4) size *= 2;
  return size;
}

}  // namespace

struct HeatWindow::Slot {
  // [u16 tenant length][u16 domain length][tenant][key][domain], little
  // endian; null while the slot is free.
  std::unique_ptr<char[]> block;
  // Live: index of the newest sub-bucket (time / bucket_ns). Free: the next
  // free slot, or kNoSlot.
  int64_t head_bucket = 0;
  uint32_t hash32 = 0;     // low bits of StableHeatKeyHash: home index cell
  uint32_t block_len = 0;  // header + key bytes
  // The ring of sub-bucket counters (the first sub_buckets are used), kept in
  // the slot so that a read touches one place. Live: the newest bucket
  // (head_bucket % sub_buckets) is never 0, because a bucket becomes the
  // newest only through the read it counts; so a live entry is idle exactly
  // when its newest bucket has left the window.
  uint16_t ring[kHeatWindowSubBucketsMax] = {};
};
static_assert(sizeof(std::unique_ptr<char[]>) == 8);

struct alignas(64) HeatWindow::Shard {
  mutable Mutex mu;
  uint32_t capacity = 0;  // slots at most
  std::vector<Slot> slots ABSL_GUARDED_BY(mu);
  std::vector<uint32_t> index ABSL_GUARDED_BY(mu);   // open addressing, linear probing
  uint32_t live ABSL_GUARDED_BY(mu) = 0;
  uint32_t free_head ABSL_GUARDED_BY(mu) = kNoSlot;
  uint32_t hand ABSL_GUARDED_BY(mu) = 0;
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

bool BlockMatches(const char* block, HeatKeyView key) {
  const auto* h = reinterpret_cast<const unsigned char*>(block);
  const size_t tenant_len = static_cast<size_t>(h[0]) | static_cast<size_t>(h[1]) << 8;
  const size_t domain_len = static_cast<size_t>(h[2]) | static_cast<size_t>(h[3]) << 8;
  if (tenant_len != key.tenant.size() || domain_len != key.domain.size()) return false;
  const char* p = block + kBlockHeaderBytes;
  // Empty parts are skipped: their data() may be null, which memcmp must not see.
  const auto matches = [&p](absl::string_view part) {
    const bool same = part.empty() || std::memcmp(p, part.data(), part.size()) == 0;
    p += part.size();
    return same;
  };
  return matches(key.tenant) && matches(key.key) && matches(key.domain);
}

HeatKey DecodeBlock(const char* block, uint32_t block_len) {
  const auto* h = reinterpret_cast<const unsigned char*>(block);
  const size_t tenant_len = static_cast<size_t>(h[0]) | static_cast<size_t>(h[1]) << 8;
  const size_t domain_len = static_cast<size_t>(h[2]) | static_cast<size_t>(h[3]) << 8;
  const char* p = block + kBlockHeaderBytes;
  const size_t key_len = block_len - kBlockHeaderBytes - tenant_len - domain_len;
  return HeatKey(std::string(p, tenant_len), std::string(p + tenant_len, key_len),
                 std::string(p + tenant_len + key_len, domain_len));
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
  static_assert(sizeof(Slot) == 24 + 2 * kHeatWindowSubBucketsMax, "slot layout (memory bound)");
  shards_ = std::make_unique<Shard[]>(static_cast<size_t>(shard_count_));
  const int64_t base = options.entries_max / shard_count_;
  const int64_t extra = options.entries_max % shard_count_;
  for (int32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    s.capacity = static_cast<uint32_t>(base + (i < extra ? 1 : 0));
    s.slots.reserve(s.capacity);
    s.index.assign(IndexSizeFor(s.capacity), 0);
  }
}

HeatWindow::~HeatWindow() = default;

HeatWindow::Shard& HeatWindow::ShardFor(uint64_t hash) const {
  // Bits 32..63 choose the shard; bits 0..31 the index cell inside it. A
  // 32-bit remainder (bits 32..63 fit in 32 bits): the same shard, a cheaper
  // division on the read path.
  return shards_[static_cast<uint32_t>(hash >> 32) % static_cast<uint32_t>(shard_count_)];
}

namespace {

// Index position holding `key`, or the empty cell where it would go.
struct Probe {
  size_t pos;
  uint32_t slot;  // kNoSlot when absent
};

template <typename ShardT>
Probe FindKey(const ShardT& s, uint64_t hash, HeatKeyView key, size_t key_block_len) {
  const size_t mask = s.index.size() - 1;
  const uint32_t tag = TagOf(hash);
  const uint32_t hash32 = static_cast<uint32_t>(hash);
  size_t pos = hash32 & mask;
  for (;;) {
    const uint32_t cell = s.index[pos];
    if (cell == 0) return Probe{pos, kNoSlot};
    if ((cell >> kSlotBits) == tag) {
      const uint32_t slot = (cell & kSlotMask) - 1;
      const auto& e = s.slots[slot];
      if (e.hash32 == hash32 && e.block_len == key_block_len && BlockMatches(e.block.get(), key)) {
        return Probe{pos, slot};
      }
    }
    pos = (pos + 1) & mask;
  }
}

// Removes the index cell of `slot` and closes the gap by shifting later cells
// of the cluster back (no tombstones, so lookups never slow down with churn).
template <typename ShardT>
void EraseFromIndex(ShardT& s, uint32_t slot) {
  const size_t mask = s.index.size() - 1;
  size_t hole = s.slots[slot].hash32 & mask;
  while ((s.index[hole] & kSlotMask) != slot + 1) hole = (hole + 1) & mask;
  size_t j = hole;
  for (;;) {
    j = (j + 1) & mask;
    const uint32_t cell = s.index[j];
    if (cell == 0) break;
    const size_t home = s.slots[(cell & kSlotMask) - 1].hash32 & mask;
    // A cell whose home lies cyclically in (hole, j] must stay.
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      s.index[hole] = cell;
      hole = j;
    }
  }
  s.index[hole] = 0;
}

}  // namespace

HeatRecord HeatWindow::Record(TimeNs now, HeatKeyView key) {
  HS_CHECK(now >= 0);
  HeatRecord out;
  const size_t key_block_len =
      kBlockHeaderBytes + key.tenant.size() + key.key.size() + key.domain.size();
  const uint64_t hash = StableHeatKeyHash(key);
  Shard& s = ShardFor(hash);
  const int32_t n = options_.sub_buckets;
  const int64_t hit_count = options_.hit_count;
  const int64_t cur = now / bucket_ns_;

  MutexLock lock(&s.mu);
  ++s.stats.records;
  if (key.tenant.size() > kFieldBytesMax || key.domain.size() > kFieldBytesMax ||
      key_block_len > std::numeric_limits<uint32_t>::max()) {
    ++s.stats.untracked;
    out.tracked = false;
    return out;
  }

  int64_t before = 0;
  int64_t after = 0;
  uint32_t touched = kNoSlot;
  const Probe found = FindKey(s, hash, key, key_block_len);
  if (found.slot != kNoSlot) {
    Slot& e = s.slots[found.slot];
    const int64_t at = std::max(cur, e.head_bucket);
    const int32_t pos = Roll(e.ring, e.head_bucket, at, n);
    e.head_bucket = at;
    // After the roll every bucket of the ring lies inside the window.
    before = SumRing(e.ring, n);
    uint16_t& c = e.ring[pos];
    after = before;
    if (c < kCounterMax) {
      ++c;
      ++after;
    }
    touched = found.slot;
  } else {
    // Take a free slot, grow into the reserved capacity, or replace.
    uint32_t slot = kNoSlot;
    bool replaced = false;
    if (s.free_head != kNoSlot) {
      slot = s.free_head;
      s.free_head = static_cast<uint32_t>(s.slots[slot].head_bucket);
    } else if (s.slots.size() < s.capacity) {
      slot = static_cast<uint32_t>(s.slots.size());
      s.slots.emplace_back();
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
        return out;
      }
      if (best_count == 0) {
        ++s.stats.idle_reclaims;
      } else {
        ++s.stats.replacements;
      }
      EraseFromIndex(s, best);
      s.key_bytes -= s.slots[best].block_len - kBlockHeaderBytes;
      --s.live;
      slot = best;
      replaced = true;
    }
    Slot& e = s.slots[slot];
    // A replaced entry's block is reused when the new key has the same
    // length (keys of one workload usually do); otherwise it is reallocated.
    if (e.block == nullptr || e.block_len != key_block_len) {
      e.block = std::make_unique<char[]>(key_block_len);
    }
    char* b = e.block.get();
    b[0] = static_cast<char>(key.tenant.size() & 0xff);
    b[1] = static_cast<char>(key.tenant.size() >> 8);
    b[2] = static_cast<char>(key.domain.size() & 0xff);
    b[3] = static_cast<char>(key.domain.size() >> 8);
    char* p = b + kBlockHeaderBytes;
    // An empty view may have a null data(), which memcpy must not see even
    // for zero bytes (the stage-1 domain is such a view).
    const auto append = [&p](absl::string_view part) {
      if (!part.empty()) std::memcpy(p, part.data(), part.size());
      p += part.size();
    };
    append(key.tenant);
    append(key.key);
    append(key.domain);
    e.block_len = static_cast<uint32_t>(key_block_len);
    e.hash32 = static_cast<uint32_t>(hash);
    e.head_bucket = cur;
    std::fill(e.ring, e.ring + n, 0);
    e.ring[cur % n] = 1;
    // The replacement may have shifted index cells: find the empty cell again.
    const size_t cell = replaced ? FindKey(s, hash, key, key_block_len).pos : found.pos;
    s.index[cell] = (TagOf(hash) << kSlotBits) | (slot + 1);
    ++s.live;
    s.key_bytes += static_cast<int64_t>(key_block_len - kBlockHeaderBytes);
    ++s.stats.inserts;
    before = 0;
    after = 1;
    touched = slot;
  }

  // Incremental cleanup: a fixed number of slots per call, never a scan.
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
    s.key_bytes -= e.block_len - kBlockHeaderBytes;
    e.block.reset();
    e.head_bucket = s.free_head;
    s.free_head = idx;
    --s.live;
    ++s.stats.idle_reclaims;
  }

  out.count_in_window = after;
  out.crossed = before < hit_count && after >= hit_count;
  if (out.crossed) ++s.stats.crossings;
  return out;
}

int64_t HeatWindow::CountInWindow(TimeNs now, HeatKeyView key) const {
  HS_CHECK(now >= 0);
  const size_t key_block_len =
      kBlockHeaderBytes + key.tenant.size() + key.key.size() + key.domain.size();
  const uint64_t hash = StableHeatKeyHash(key);
  const Shard& s = ShardFor(hash);
  MutexLock lock(&s.mu);
  const Probe found = FindKey(s, hash, key, key_block_len);
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
      out.push_back(HotKey{DecodeBlock(e.block.get(), e.block_len), c});
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
        s.index.capacity() * sizeof(uint32_t) + s.live * kBlockHeaderBytes);
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
    const size_t mask = s.index.size() - 1;
    for (uint32_t idx = 0; idx < s.slots.size(); ++idx) {
      const Slot& e = s.slots[idx];
      if (e.block == nullptr) continue;
      ++live;
      key_bytes += e.block_len - kBlockHeaderBytes;
      if (e.ring[e.head_bucket % n] == 0) {
        return fail(absl::StrCat("slot ", idx, " has an empty newest bucket"));
      }
      if (std::any_of(e.ring + n, e.ring + kHeatWindowSubBucketsMax,
                      [](uint16_t c) { return c != 0; })) {
        return fail(absl::StrCat("slot ", idx, " counts beyond its sub-buckets"));
      }
      // Reachable from its home cell without crossing an empty cell.
      size_t pos = e.hash32 & mask;
      while (s.index[pos] != 0 && (s.index[pos] & kSlotMask) != idx + 1) pos = (pos + 1) & mask;
      if (s.index[pos] == 0) return fail(absl::StrCat("slot ", idx, " unreachable in index"));
      const HeatKey k = DecodeBlock(e.block.get(), e.block_len);
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
