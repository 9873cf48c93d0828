// File: sim/limit_lines.h
//
// Limit lines: how much of the avoidable cross-domain traffic a run removed,
// beside the best that was possible on the same reads. The simulator feeds
// every completed object read to a LimitLineRecorder; at the end of the run
// Compute() returns the run's own split of its cross-domain bytes and two
// upper lines computed offline from the run's read sequence. The rules are
// documented in docs/outputs.md (Limit lines); in short:
//
// Pairs. Reads are grouped by (object, requester domain); an object is its
// name and version (a key put again is a new object). Only completed reads
// count, in the order they completed, each at the time the master served
// it (so a read in flight when a replica is decided on is not counted as
// removed by it).
//
// The run's split (what the run did). `first_touch_bytes`: the first read of
// a pair that crossed domains (unavoidable for a policy that does not
// predict); `repeat_bytes`: every later read of that pair that crossed
// domains (avoidable by a replica in the requester domain).
//
// The base (what the same reads cost without dynamic replicas). A read is
// a *base cross-domain read* when its requester domain held no ordinary
// (non-dynamic) replica of the object when the master answered it. Per pair,
// the first base read is unavoidable (`unavoidable_bytes`), the later ones
// are `avoidable_bytes`. In a run without dynamic replicas (mode off) and the
// spread selection policy, base and run split coincide.
// `avoidable_removed_bytes` = avoidable - repeat (never below 0).
//
// Online line: the best a policy without prediction can do. A replica
// appears in the requester domain, with zero copy time, right after the
// pair's second base read; it removes the pair's reads from the third on,
// and it is held from the second read to the pair's last read (the least a
// policy must hold to remove them; a real policy holds it longer).
//
// Clairvoyant line: a replica appears right before the pair's second base
// read (all of the pair's avoidable reads are removed) and is held until its
// last read. Pairs are taken greedily by removed bytes per byte of memory
// (ties: earlier second read, then first-seen order) while the extra-memory
// budget (optional) holds at every instant.
//
// Both lines respect the replica cap of the run
// (dynamic_replication_max_memory_replicas, originals included): with
// domain-aware placement the cap counts replicas in the target domain, so a
// domain without an ordinary replica can always take one (cap >= 1);
// without it, at most cap - originals dynamic replicas of an object exist at
// once, first come first served for the online line, in greedy order for
// the clairvoyant one.
//
// Memory of a line: the bytes its replicas hold, peak and time-averaged over
// the run (integer: floor of byte-nanoseconds / duration). Intervals are
// closed: a replica counts at both its first and last instant.
//
// Cost: O(1) per read (hash lookups keyed by object name and domain index);
// memory ~100 bytes per pair plus the name bytes per object. Compute() sorts
// the pairs (never iterates a hash map into the output): O(p log p).
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_LIMIT_LINES_H_
#define HEATSINK_SIM_LIMIT_LINES_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/base/check.h"
#include "core/env/time.h"
#include "core/model/ids.h"

namespace heatsink::sim {

struct LimitLineOptions {
  DurationNs duration_ns = 0;  // the run's length (time-averaged memory); > 0
  int64_t max_memory_replicas = 2;
  bool domain_aware = false;
  // Extra-memory budget of the clairvoyant line; nullopt: unlimited.
  std::optional<uint64_t> clairvoyant_budget_bytes;
};

// One upper line.
struct LimitLine {
  uint64_t removed_bytes = 0;       // base cross-domain bytes its replicas remove
  int64_t replicas = 0;             // replicas it creates (pairs served)
  uint64_t memory_peak_bytes = 0;   // most bytes held at one instant
  uint64_t memory_mean_bytes = 0;   // time-averaged over the run
  int64_t capped = 0;               // pairs refused by the replica cap
  int64_t over_budget = 0;          // pairs refused by the memory budget (clairvoyant)
};

struct LimitLines {
  // The run's split of its cross-domain reads.
  uint64_t cross_domain_bytes = 0;
  uint64_t first_touch_bytes = 0;
  uint64_t repeat_bytes = 0;
  // The same reads without dynamic replicas.
  uint64_t unavoidable_bytes = 0;
  uint64_t avoidable_bytes = 0;
  uint64_t avoidable_removed_bytes = 0;
  int64_t pairs = 0;  // (object, requester domain) pairs with a base read
  LimitLine online;
  LimitLine clairvoyant;
  std::optional<uint64_t> clairvoyant_budget_bytes;
};

// What the master answered for one object read, as the recorder needs it.
struct LimitReadTarget {
  int32_t domain = 0;              // requester domain (index into the scenario's domains)
  bool cross_domain = false;       // the replica chosen is in another domain
  bool base_cross_domain = false;  // the requester domain held no ordinary replica
  // Ordinary readable MEMORY replicas of the object (the cap counts them).
  int32_t ordinary_replicas = 0;
};

class LimitLineRecorder {
 public:
  LimitLineRecorder() = default;
  LimitLineRecorder(const LimitLineRecorder&) = delete;
  LimitLineRecorder& operator=(const LimitLineRecorder&) = delete;

  static constexpr uint32_t kNoPair = ~uint32_t{0};

  // Called when the master answers a read: the pair the read belongs to, or
  // kNoPair when the read is neither cross-domain nor a base cross-domain
  // read (nothing to record). Cheap to carry until the read completes.
  // REQUIRES: target.domain >= 0.
  uint32_t PairFor(const ObjectName& name, Version version, const LimitReadTarget& target);
  // The read of `pair`, served by the master at `t_ns`, completed with
  // `bytes` (`cross_domain` and `base_cross_domain` as given to PairFor).
  // Called in completion order. REQUIRES: t_ns >= 0.
  void OnRead(uint32_t pair, TimeNs t_ns, uint64_t bytes, bool cross_domain,
              bool base_cross_domain);

  // The run's split and both lines. REQUIRES: options.duration_ns > 0.
  LimitLines Compute(const LimitLineOptions& options) const;

  // Keeps the time and size of every avoidable read (16 bytes each) so that
  // AvoidableBytesAfter can answer after the run (observe-mode estimates).
  // REQUIRES: called before the first read.
  void KeepAvoidableReads() {
    HS_CHECK(pairs_.empty());
    keep_avoidable_reads_ = true;
  }
  // Bytes of the avoidable reads of (name, version) from `domain` that the
  // master served after `t_ns`: what a replica placed in that domain at `t_ns`
  // would have removed (copy time not counted). 0 for an unknown pair.
  // REQUIRES: KeepAvoidableReads() was called.
  uint64_t AvoidableBytesAfter(const ObjectName& name, Version version, int32_t domain,
                               TimeNs t_ns) const;

 private:
  struct Pair {
    uint32_t object = 0;
    int32_t domain = 0;
    uint64_t size_bytes = 0;      // of the first base read
    int64_t base_reads = 0;
    int64_t cross_reads = 0;      // reads that crossed domains (run split)
    TimeNs second_read_ns = 0;    // of the base reads
    TimeNs last_read_ns = 0;
    uint64_t avoidable_bytes = 0;  // base reads from the second on
    uint64_t online_bytes = 0;     // base reads from the third on
  };
  struct ObjectKey {
    ObjectName name;
    Version version = 0;
    friend bool operator==(const ObjectKey&, const ObjectKey&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const ObjectKey& k) {
      return H::combine(std::move(h), k.name, k.version);
    }
  };

  uint64_t first_touch_bytes_ = 0;
  uint64_t repeat_bytes_ = 0;
  uint64_t unavoidable_bytes_ = 0;
  absl::flat_hash_map<ObjectKey, uint32_t> object_ids_;  // first-seen order
  std::vector<int32_t> object_originals_;                // by object id
  absl::flat_hash_map<uint64_t, uint32_t> pair_index_;   // (object << 32 | domain) -> pairs_
  std::vector<Pair> pairs_;                              // first-seen order
  bool keep_avoidable_reads_ = false;
  // By pair, with keep_avoidable_reads_: (served time, bytes) of reads 2..n.
  std::vector<std::vector<std::pair<TimeNs, uint64_t>>> avoidable_reads_;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_LIMIT_LINES_H_
