// File: core/replication/heat_window.h
//
// The Master-side heat window of dynamic hot replication: a bounded, sharded,
// sliding count of reads per heat key (tenant + key, + requester domain when
// domain-aware). Record() is called once per key read, by the drain of the
// read buffer (core/replication/heat_read_buffer.h), not by the read itself.
//
// Sliding window (DESIGN decision 1). Each tracked key keeps a ring of
// `sub_buckets` 16-bit counters, one per window / sub_buckets of time, and
// the index of the newest bucket. The count "in the window" at time t is the
// sum of the buckets whose start lies in (t - window, t]: a read is counted
// for at least window - window/sub_buckets and at most window after it
// happened, and never longer. Record() reports `crossed` exactly on the read
// that brings this count from hit_count - 1 to hit_count, so the caller
// enqueues one admission trigger. If the key cools below the hit count and
// heats up again, it crosses again (the trigger queue and the admission
// cooldown absorb repeats). A key that stays at or above the hit count does
// not cross again: DynamicReplication looks at it again from background
// events (DESIGN decision 1, heat_recheck.h) through CountInWindow.
//
// Drain lag. Reads reach the window through DynamicReplication's read
// buffer: a read counts from the drain that applies it, at most one
// dynamic_replication_heat_drain_interval_ms after it happened (sooner when
// its buffer passes its high-water mark). The drain records each read with
// the read's own time, never the drain's, so a read never counts in a
// sub-bucket later than the one it happened in, and it leaves the window
// when it would have without the lag; only the crossing (and so the
// trigger) happens up to one drain interval later. A read dropped by a full
// buffer is never counted (dynamic_replication_heat_reads_dropped_total).
//
// Bound. At most `entries_max` keys are tracked, split evenly over the
// shards; the memory for them is reserved at construction (untouched pages
// are not resident). Cleanup is incremental: every Record() that inserts a
// key advances a clock hand over `cleanup_slots_per_record` slots of its
// shard and frees entries whose window is empty ("idle"). Cleanup exists to
// make room for new keys, so a read of a key already tracked does none and
// touches its own slot only; an idle entry lingers until an insert's
// cleanup or replacement probe reaches it (it is never counted, and it
// takes a slot the table reserved anyway). No call ever scans a whole shard.
//
// A full shard still admits a new key. The new key takes the slot of the
// coldest entry among the next `replacement_probe_slots` slots at the hand
// (an idle one at once; otherwise the lowest count in the window, ties to the
// least recently read, then to probe order). This is Space-Saving's
// "replace the minimum" applied to a bounded probe, with two deliberate
// differences:
//   * The newcomer does not inherit the victim's count. Space-Saving's
//     inherited count overstates a new key's reads, and here the count decides
//     admission: inheriting would make cold keys cross. Protection comes from
//     the clock instead: the newcomer sits in the slot the hand has just
//     passed, so it is not probed again until the hand has gone round the
//     shard (capacity / replacement_probe_slots further replacements), and
//     when probed it loses only to an entry that is colder or equally cold
//     and more recently read.
//   * An entry at or above the hit count is never replaced: it is hot now,
//     and its trigger may be waiting for the admission worker's re-check. A
//     key that finds only hot entries in its probe is not tracked (counted
//     in stats().untracked).
// Consequence: in a shard full of cold keys (below the hit count), a key
// read at the admission rate is tracked from its first read and crosses at
// its hit_count-th read, i.e. within one window, as long as fewer than
// capacity / probe new keys arrive between two of its reads. After its
// second read it outranks every one-read key and no flood of one-read keys
// can displace it. heat_window_test.cc proves both.
//
// Memory. Per tracked key: a 56-byte slot (newest-bucket index, hash, field
// lengths, the counter ring with room for kHeatWindowSubBucketsMax 16-bit
// counters, and the key block's pointer), a 4-byte index cell at load 0.75
// (the index is sized to the entry limit, not to a power of two), and one
// heap block holding exactly the key bytes. Memory() reports it; the fixed
// part is below 64 bytes per key at every entry limit (the test and the
// benchmark print it). The allocator's own per-block overhead is not
// visible to core and not included.
//
// Determinism. The shard of a key comes from StableHeatKeyHash; the victim
// choice from slot order and the clock hand, never from hash-map iteration.
// Used from one thread, the same sequence of calls gives the same results in
// every process.
//
// Thread safety: every method is thread-safe; each call locks one shard at a
// time, and nothing else (the read buffer's single drainer is the window's
// one writer in practice, so the shard locks are uncontended but for the
// admission worker's reads). stats() visits every shard.
//
// The caller decides whether a read counts: with mode off nothing is
// recorded, and a read of an object already at its replica cap records no
// heat (DESIGN decision 2).
//
// Example:
//   HeatWindow window(HeatWindow::Options::FromKnobs(knobs));
//   const HeatRecord r = window.Record(env->clock->NowNs(), {tenant, key, ""});
//   if (r.crossed) (void)triggers.Enqueue(...);
#ifndef HEATSINK_CORE_REPLICATION_HEAT_WINDOW_H_
#define HEATSINK_CORE_REPLICATION_HEAT_WINDOW_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/env/time.h"
#include "core/replication/heat_key.h"
#include "core/replication/replication_knobs.h"

namespace heatsink {

// What Record() saw.
struct HeatRecord {
  // Reads of the key in the window after this read (0 when not tracked).
  int64_t count_in_window = 0;
  // True exactly when this read brought the count to the hit count.
  bool crossed = false;
  // False when the key could not be tracked: its shard was full of hot keys,
  // or its tenant, key or domain is longer than 65535 bytes.
  bool tracked = true;
};

struct HotKey {
  HeatKey key;
  int64_t count_in_window = 0;
};

struct HeatWindowStats {
  int64_t records = 0;        // Record() calls
  int64_t inserts = 0;        // keys that started being tracked
  int64_t replacements = 0;   // of those, keys that displaced a non-idle entry
  int64_t idle_reclaims = 0;  // idle entries freed by cleanup or the probe
  int64_t untracked = 0;      // Record() calls that could not track their key
  int64_t crossings = 0;      // Record() calls that returned crossed
  int64_t slot_visits = 0;    // slots examined by cleanup and probes (work bound)
  int64_t tracked_keys = 0;   // keys tracked now
};

struct HeatWindowMemory {
  int64_t tracked_keys = 0;
  // Everything except the key text: slots, counters and index (their full
  // reserved capacity), the per-key length headers, the shards.
  int64_t fixed_bytes = 0;
  // The tenant, key and domain bytes of the tracked keys.
  int64_t key_bytes = 0;
};

class HeatWindow {
 public:
  struct Options {
    DurationNs window_ns = SecToNs(10);
    int32_t sub_buckets = 10;  // window_ns % sub_buckets == 0
    int64_t entries_max = 50'000;
    int64_t hit_count = 8;  // in [1, kAdmissionHitCountMax]
    // Independently locked parts; clamped to entries_max so every shard
    // holds at least one key.
    int32_t shards = 16;
    int32_t cleanup_slots_per_record = 2;
    int32_t replacement_probe_slots = 8;

    // Window, sub-buckets, entry limit and hit count from validated knobs.
    static Options FromKnobs(const ReplicationKnobs& knobs);
  };

  // REQUIRES: options valid (HS_CHECK; knobs are validated before this).
  explicit HeatWindow(const Options& options);
  ~HeatWindow();
  HeatWindow(const HeatWindow&) = delete;
  HeatWindow& operator=(const HeatWindow&) = delete;

  // Counts one read of `key` at `now` (REQUIRES now >= 0). Bounded work:
  // one index lookup, at most cleanup_slots_per_record + replacement_probe_slots
  // slot visits. A read whose `now` is older than the key's newest bucket
  // (the drain takes the read buffer's stripes one after the other, so two
  // threads' reads of a key can come out of time order) counts in the newest
  // bucket.
  HeatRecord Record(TimeNs now, HeatKeyView key);

  // Reads of `key` in the window at `now`; 0 when not tracked. The admission
  // worker's re-check: a trigger whose key has cooled below the hit count is
  // logged below_threshold (DESIGN decision 8).
  int64_t CountInWindow(TimeNs now, HeatKeyView key) const;
  // Reads of `key` in the newest `sub_buckets` sub-buckets at `now` (the
  // current one included): the reads of the last `sub_buckets` x
  // window / sub_buckets, at the same granularity as the window. With
  // options().sub_buckets it equals CountInWindow. The cold release's span
  // (knob dynamic_replication_release_span_ms). REQUIRES: 1 <= sub_buckets
  // <= options().sub_buckets.
  int64_t CountInLastSubBuckets(TimeNs now, HeatKeyView key, int32_t sub_buckets) const;

  // Tracked keys with at least `min_count` reads in the window at `now`,
  // hottest first (ties by tenant, key, domain), at most `limit`. Visits every
  // tracked key, one shard lock at a time: for background work (warmup), not
  // for the read path.
  std::vector<HotKey> HotKeys(TimeNs now, int64_t min_count, size_t limit) const;

  // Forgets every key (for example when the mode is switched off).
  void Clear();

  // O(shards): the shards' counters summed (for metrics and tests).
  HeatWindowStats stats() const;
  HeatWindowMemory Memory() const;
  // INTERNAL if any shard's slots, index, free list or byte counts disagree.
  // O(entries); for tests and the simulator.
  [[nodiscard]] absl::Status CheckInvariants() const;

  const Options& options() const { return options_; }
  int32_t shard_count() const { return shard_count_; }

 private:
  struct Slot;
  struct Shard;

  int32_t ShardIndexFor(uint64_t hash) const;
  // now / bucket_ns, without a division when `now` is in the same
  // sub-bucket as the previous call's.
  int64_t BucketAt(TimeNs now) const;
  // Advances the shard's hand over cleanup_slots_per_record slots, freeing
  // idle entries other than `touched`. REQUIRES: s.mu held.
  void Cleanup(Shard& s, uint32_t touched, int64_t cur);

  const Options options_;
  const DurationNs bucket_ns_;
  const int32_t shard_count_;
  std::unique_ptr<Shard[]> shards_;
  // The sub-bucket of the latest BucketAt() that divided; only a hint.
  mutable std::atomic<int64_t> last_bucket_{0};
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_HEAT_WINDOW_H_
