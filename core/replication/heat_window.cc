#include "core/replication/heat_window.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
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
// Tenant, key and domain each up to 65535 bytes (16-bit lengths in the slot).
constexpr size_t kFieldBytesMax = std::numeric_limits<uint16_t>::max();

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
  // Live: the newest sub-bucket (time / bucket_ns). Free: the next free slot,
  // or kNoSlot.
  int64_t head_bucket = 0;
  uint32_t hash32 = 0;  // low bits of StableHeatKeyHash: home index cell
  uint16_t tenant_len = 0;
  uint16_t key_len = 0;
  uint16_t domain_len = 0;
  // The sub-bucket counters, newest first: ring[0] counts bucket head_bucket,
  // ring[k] bucket head_bucket - k (the first sub_buckets are used), kept in
  // the slot so that a read touches one place. Moving to a newer bucket
  // shifts the ring (at most once per sub-bucket per key), so no read
  // divides. Live: ring[0] is never 0, because a bucket becomes the newest
  // only through the read it counts; so a live entry is idle exactly when its
  // newest bucket has left the window.
  uint16_t ring[kHeatWindowSubBucketsMax] = {};
  // [tenant][key][domain]; null while the slot is free.
  std::unique_ptr<char[]> block;

  uint32_t block_len() const { return uint32_t{tenant_len} + key_len + domain_len; }
};
static_assert(sizeof(std::unique_ptr<char[]>) == 8);

struct alignas(64) HeatWindow::Shard {
  mutable Mutex mu;
  uint32_t capacity = 0;  // slots at most
  // Storage for `capacity` slots, allocated at construction and never moved;
  // the first slot_count are constructed.
  Slot* slot_base = nullptr;
  uint32_t slot_count ABSL_GUARDED_BY(mu) = 0;
  std::vector<uint32_t> index ABSL_GUARDED_BY(mu);   // open addressing, linear probing
  uint32_t live ABSL_GUARDED_BY(mu) = 0;
  uint32_t free_head ABSL_GUARDED_BY(mu) = kNoSlot;
  uint32_t hand ABSL_GUARDED_BY(mu) = 0;
  int64_t key_bytes ABSL_GUARDED_BY(mu) = 0;
  HeatWindowStats stats ABSL_GUARDED_BY(mu);

  Slot& slot(uint32_t i) const { return slot_base[i]; }
};

namespace {

// Everything below runs with the shard's lock held; the helpers take the
// pieces they need so that the locking stays in the public methods.

int64_t SumRing(const uint16_t* ring, int32_t n) {
  int64_t sum = 0;
  for (int32_t b = 0; b < n; ++b) sum += ring[b];
  return sum;
}

// Whether a live entry whose newest bucket is `head` has no read in the
// window at bucket `cur` (its newest bucket is never 0, see Slot::ring).
bool IdleAt(int64_t head, int64_t cur, int32_t n) { return cur - head >= n; }

// The reads in the newest `last` buckets at `cur` (ring[i] is bucket head - i);
// with last = n, the whole window.
int64_t CountAt(const uint16_t* ring, int64_t head, int64_t cur, int32_t last) {
  const int64_t age = std::max<int64_t>(0, cur - head);
  if (age >= last) return 0;
  return SumRing(ring, last - static_cast<int32_t>(age));
}

// Moves the ring's newest bucket forward by `steps` buckets: the counts
// shift towards the old end, the ones that leave the window drop, and the
// new buckets start at 0. REQUIRES: steps >= 1.
void Roll(uint16_t* ring, int64_t steps, int32_t n) {
  if (steps >= n) {
    std::fill(ring, ring + n, 0);
    return;
  }
  const auto k = static_cast<int32_t>(steps);
  std::memmove(ring + k, ring, static_cast<size_t>(n - k) * sizeof(uint16_t));
  std::fill(ring, ring + k, 0);
}

// One read of a live entry at bucket `cur`.
template <typename SlotT>
HeatRecord CountRead(SlotT& e, int64_t cur, int32_t n, int64_t hit_count) {
  if (cur > e.head_bucket) {
    Roll(e.ring, cur - e.head_bucket, n);
    e.head_bucket = cur;
  }
  // A read older than the newest bucket (the drain applies the stripes one
  // after the other, so reads of one key from two threads can come out of
  // time order) counts in the newest bucket. After the roll every
  // bucket of the ring lies inside the window.
  const int64_t before = SumRing(e.ring, n);
  int64_t after = before;
  if (e.ring[0] < kCounterMax) {
    ++e.ring[0];
    ++after;
  }
  HeatRecord out;
  out.count_in_window = after;
  out.crossed = before < hit_count && after >= hit_count;
  return out;
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

// The slot's key, viewing its block (valid while the slot keeps its key).
template <typename SlotT>
HeatKeyView SlotView(const SlotT& e) {
  const char* p = e.block.get();
  return HeatKeyView{absl::string_view(p, e.tenant_len),
                     absl::string_view(p + e.tenant_len, e.key_len),
                     absl::string_view(p + e.tenant_len + e.key_len, e.domain_len)};
}

template <typename SlotT>
HeatKey DecodeSlot(const SlotT& e) {
  const HeatKeyView v = SlotView(e);
  return HeatKey(std::string(v.tenant), std::string(v.key), std::string(v.domain));
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
  static_assert(sizeof(Slot) == 32 + 2 * kHeatWindowSubBucketsMax, "slot layout (memory bound)");
  shards_ = std::make_unique<Shard[]>(static_cast<size_t>(shard_count_));
  const int64_t base = options.entries_max / shard_count_;
  const int64_t extra = options.entries_max % shard_count_;
  for (int32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    s.capacity = static_cast<uint32_t>(base + (i < extra ? 1 : 0));
    // Uninitialised storage: pages no slot has been constructed in are not
    // touched, so they are not resident.
    s.slot_base = std::allocator<Slot>().allocate(s.capacity);
    s.index.assign(IndexSizeFor(s.capacity), 0);
  }
}

HeatWindow::~HeatWindow() {
  for (int32_t i = 0; i < shard_count_; ++i) {
    Shard& s = shards_[static_cast<size_t>(i)];
    MutexLock lock(&s.mu);
    std::destroy(s.slot_base, s.slot_base + s.slot_count);
    std::allocator<Slot>().deallocate(s.slot_base, s.capacity);
    s.slot_base = nullptr;
  }
}

int32_t HeatWindow::ShardIndexFor(uint64_t hash) const {
  // Bits 32..63 choose the shard; bits 0..31 the index cell inside it. A
  // 32-bit remainder (bits 32..63 fit in 32 bits): the same shard, a cheaper
  // division on the read path.
  return static_cast<int32_t>(static_cast<uint32_t>(hash >> 32) %
                              static_cast<uint32_t>(shard_count_));
}

int64_t HeatWindow::BucketAt(TimeNs now) const {
  // Most reads fall in the same sub-bucket as the read before them: check
  // the last one with a multiplication instead of dividing.
  const int64_t last = last_bucket_.load(std::memory_order_relaxed);
  const int64_t start = last * bucket_ns_;
  if (now >= start && now - start < bucket_ns_) return last;
  const int64_t cur = now / bucket_ns_;
  last_bucket_.store(cur, std::memory_order_relaxed);
  return cur;
}

namespace {

// Index position holding `key`, or the empty cell where it would go.
struct Probe {
  size_t pos;
  uint32_t slot;  // kNoSlot when absent
};

template <typename ShardT>
Probe FindKey(const ShardT& s, uint64_t hash, HeatKeyView key) ABSL_SHARED_LOCKS_REQUIRED(s.mu) {
  const size_t size = s.index.size();
  const uint32_t tag = TagOf(hash);
  const uint32_t hash32 = static_cast<uint32_t>(hash);
  size_t pos = HomeCell(hash32, size);
  for (;;) {
    const uint32_t cell = s.index[pos];
    if (cell == 0) return Probe{pos, kNoSlot};
    if ((cell >> kSlotBits) == tag) {
      const uint32_t slot = (cell & kSlotMask) - 1;
      const auto& e = s.slot(slot);
      if (e.hash32 == hash32 && SlotMatches(e, key)) return Probe{pos, slot};
    }
    pos = NextCell(pos, size);
  }
}

// Removes the index cell of `slot` and closes the gap by shifting later cells
// of the cluster back (no tombstones, so lookups never slow down with churn).
template <typename ShardT>
void EraseFromIndex(ShardT& s, uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
  const size_t size = s.index.size();
  size_t hole = HomeCell(s.slot(slot).hash32, size);
  while ((s.index[hole] & kSlotMask) != slot + 1) hole = NextCell(hole, size);
  size_t j = hole;
  for (;;) {
    j = NextCell(j, size);
    const uint32_t cell = s.index[j];
    if (cell == 0) break;
    const size_t home = HomeCell(s.slot((cell & kSlotMask) - 1).hash32, size);
    // A cell whose home lies cyclically in (hole, j] must stay.
    if (CyclicDistance(home, j, size) >= CyclicDistance(hole, j, size)) {
      s.index[hole] = cell;
      hole = j;
    }
  }
  s.index[hole] = 0;
}

// Frees a live slot: out of the index, key dropped, onto the free list.
// REQUIRES: the shard lock.
template <typename ShardT>
void FreeSlot(ShardT& s, uint32_t idx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
  auto& e = s.slot(idx);
  EraseFromIndex(s, idx);
  s.key_bytes -= e.block_len();
  e.block.reset();
  e.head_bucket = s.free_head;
  s.free_head = idx;
  --s.live;
}

// The coldest entry of the replacement probe at the shard's hand, which the
// probe advances: an idle one at once; otherwise the lowest count in the
// window, ties to the least recently read, then to probe order. kNoSlot when
// every probed entry is at or above the hit count (hot now: never replaced).
// `*count`: the victim's count. REQUIRES: the shard lock, every slot live.
template <typename ShardT>
uint32_t ProbeVictim(ShardT& s, int32_t probe_slots, int64_t cur, int32_t n, int64_t hit_count,
                     int64_t* count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
  uint32_t best = kNoSlot;
  int64_t best_count = 0;
  int64_t best_head = 0;
  const uint32_t size = s.slot_count;
  for (int32_t i = 0; i < probe_slots; ++i) {
    const uint32_t idx = s.hand;
    s.hand = idx + 1 == size ? 0 : idx + 1;
    ++s.stats.slot_visits;
    if (idx == best) continue;  // a probe longer than the shard
    const auto& e = s.slot(idx);
    const int64_t c = CountAt(e.ring, e.head_bucket, cur, n);
    const bool better = c < hit_count && (best == kNoSlot || c < best_count ||
                                          (c == best_count && e.head_bucket < best_head));
    if (!better) continue;
    best = idx;
    best_count = c;
    best_head = e.head_bucket;
    if (c == 0) break;
  }
  *count = best_count;
  return best;
}

// Makes `e` the entry of `key` with one read in sub-bucket `cur`.
// `key_block_len`: its tenant, key and domain bytes together.
template <typename SlotT>
void FillNewEntry(SlotT& e, HeatKeyView key, size_t key_block_len, uint64_t hash, int64_t cur,
                  int32_t n) {
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
  e.key_len = static_cast<uint16_t>(key.key.size());
  e.domain_len = static_cast<uint16_t>(key.domain.size());
  e.hash32 = static_cast<uint32_t>(hash);
  e.head_bucket = cur;
  std::fill(e.ring, e.ring + n, 0);
  e.ring[0] = 1;
}

}  // namespace

HeatRecord HeatWindow::Record(TimeNs now, HeatKeyView key) {
  HS_CHECK(now >= 0);
  const int32_t n = options_.sub_buckets;
  const int64_t hit_count = options_.hit_count;
  const int64_t cur = BucketAt(now);

  HeatRecord out;
  const uint64_t hash = StableHeatKeyHash(key);
  const int32_t shard_index = ShardIndexFor(hash);
  Shard& s = shards_[static_cast<size_t>(shard_index)];

  MutexLock lock(&s.mu);
  ++s.stats.records;
  if (key.tenant.size() > kFieldBytesMax || key.key.size() > kFieldBytesMax ||
      key.domain.size() > kFieldBytesMax) {
    ++s.stats.untracked;
    out.tracked = false;
    return out;
  }
  const size_t key_block_len = key.tenant.size() + key.key.size() + key.domain.size();

  const Probe found = FindKey(s, hash, key);
  if (found.slot != kNoSlot) {
    out = CountRead(s.slot(found.slot), cur, n, hit_count);
    if (out.crossed) ++s.stats.crossings;
    return out;
  }
  // Take a free slot, grow into the reserved capacity, or replace.
  uint32_t slot = kNoSlot;
  bool replaced = false;
  if (s.free_head != kNoSlot) {
    slot = s.free_head;
    s.free_head = static_cast<uint32_t>(s.slot(slot).head_bucket);
  } else if (s.slot_count < s.capacity) {
    slot = s.slot_count;
    new (&s.slot(slot)) Slot();
    ++s.slot_count;
  } else {
    // Full: every slot is live. Probe at the hand for the coldest entry.
    int64_t best_count = 0;
    const uint32_t best =
        ProbeVictim(s, options_.replacement_probe_slots, cur, n, hit_count, &best_count);
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
    Slot& victim = s.slot(best);
    EraseFromIndex(s, best);
    s.key_bytes -= victim.block_len();
    --s.live;
    slot = best;
    replaced = true;
  }
  FillNewEntry(s.slot(slot), key, key_block_len, hash, cur, n);
  // The replacement may have shifted index cells: find the empty cell again.
  const size_t cell = replaced ? FindKey(s, hash, key).pos : found.pos;
  s.index[cell] = (TagOf(hash) << kSlotBits) | (slot + 1);
  ++s.live;
  s.key_bytes += static_cast<int64_t>(key_block_len);
  ++s.stats.inserts;
  Cleanup(s, slot, cur);
  out.count_in_window = 1;
  out.crossed = hit_count <= 1;
  if (out.crossed) ++s.stats.crossings;
  return out;
}

// The declaration cannot name s.mu (Shard is incomplete in the header).
void HeatWindow::Cleanup(Shard& s, uint32_t touched, int64_t cur)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
  // Incremental cleanup: a fixed number of slots per call, never a scan.
  const int32_t n = options_.sub_buckets;
  const uint32_t size = s.slot_count;
  for (int32_t i = 0; i < options_.cleanup_slots_per_record && size > 0; ++i) {
    // The hand wraps at the slot count of its time, which only grows, so it
    // is below `size`; the test is a safeguard.
    const uint32_t idx = s.hand < size ? s.hand : 0;
    s.hand = idx + 1 == size ? 0 : idx + 1;
    ++s.stats.slot_visits;
    const Slot& e = s.slot(idx);
    if (e.block == nullptr || idx == touched) continue;
    if (!IdleAt(e.head_bucket, cur, n)) continue;
    FreeSlot(s, idx);
    ++s.stats.idle_reclaims;
  }
}

int64_t HeatWindow::CountInWindow(TimeNs now, HeatKeyView key) const {
  return CountInLastSubBuckets(now, key, options_.sub_buckets);
}

int64_t HeatWindow::CountInLastSubBuckets(TimeNs now, HeatKeyView key,
                                          int32_t sub_buckets) const {
  HS_CHECK(now >= 0);
  HS_CHECK(sub_buckets >= 1 && sub_buckets <= options_.sub_buckets);
  const uint64_t hash = StableHeatKeyHash(key);
  const Shard& s = shards_[static_cast<size_t>(ShardIndexFor(hash))];
  MutexLock lock(&s.mu);
  const Probe found = FindKey(s, hash, key);
  if (found.slot == kNoSlot) return 0;
  const Slot& e = s.slot(found.slot);
  return CountAt(e.ring, e.head_bucket, now / bucket_ns_, sub_buckets);
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
    for (uint32_t idx = 0; idx < s.slot_count; ++idx) {
      const Slot& e = s.slot(idx);
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
    // Slots stay constructed; every one goes onto the free list.
    s.free_head = kNoSlot;
    for (uint32_t idx = s.slot_count; idx-- > 0;) {
      Slot& e = s.slot(idx);
      e.block.reset();
      e.head_bucket = s.free_head;
      s.free_head = idx;
    }
    std::fill(s.index.begin(), s.index.end(), 0);
    s.live = 0;
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
    m.fixed_bytes +=
        static_cast<int64_t>(s.capacity * sizeof(Slot) + s.index.capacity() * sizeof(uint32_t));
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
    if (s.slot_count > s.capacity) return fail("more slots than capacity");
    uint32_t live = 0;
    int64_t key_bytes = 0;
    const size_t index_size = s.index.size();
    for (uint32_t idx = 0; idx < s.slot_count; ++idx) {
      const Slot& e = s.slot(idx);
      if (e.block == nullptr) continue;
      ++live;
      key_bytes += e.block_len();
      if (e.ring[0] == 0) {
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
      if (static_cast<uint32_t>(StableHeatKeyHash(SlotView(e))) != e.hash32) {
        return fail(absl::StrCat("slot ", idx, " hash does not match its key"));
      }
    }
    size_t cells = 0;
    for (const uint32_t cell : s.index) {
      if (cell == 0) continue;
      ++cells;
      const uint32_t slot = (cell & kSlotMask) - 1;
      if (slot >= s.slot_count || s.slot(slot).block == nullptr) {
        return fail("index cell points at a free or missing slot");
      }
    }
    if (live != s.live || cells != live) return fail("live count disagrees with slots/index");
    if (key_bytes != s.key_bytes) return fail("key byte count disagrees with slots");
    size_t free_len = 0;
    for (uint32_t f = s.free_head; f != kNoSlot; f = static_cast<uint32_t>(s.slot(f).head_bucket)) {
      if (f >= s.slot_count || s.slot(f).block != nullptr || ++free_len > s.slot_count) {
        return fail("free list corrupt");
      }
    }
    if (free_len + live != s.slot_count) return fail("free list misses free slots");
  }
  return absl::OkStatus();
}

}  // namespace heatsink
