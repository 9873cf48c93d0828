// File: runtime/numa/segment_head_pool.h
//
// A store's segments as the ADR-0019 head pool (DESIGN data flow 5): the
// master sees ordinary MEMORY segments, while inside the store their 2 MiB
// blocks sit on NUMA nodes region by region -- the first --memory bytes on
// the serving node (region 0, preferred), then each --sub-memory region on
// its foreign node -- and the core's TierManager ranks and exchanges them.
//
// Keys. Every --ram-head chunk of every segment is one tiering key
// (ChunkKey: the segment id and the chunk's index), committed as a fixed head
// at start, so every block is complete and eligible for promotion. A read the
// store serves (TCP data endpoint or gRPC store service, reported through
// SegmentReadObserver) is one logical read of each chunk it covers: each
// covered chunk's score gets the increment once. Scores belong to address
// ranges, not to objects: the master's allocator decides which object a
// range holds, so a range handed to a new object keeps its decaying score
// (the ADR's "delete and recreate starts at zero" holds per range, never
// per object here).
//
// Remote share. The observer also counts the head bytes each served read
// took from each chunk, as local (the chunk's block sits on the serving
// node) or remote (any other node), by the block table at the time of the
// read; VerifyPlacement checks that table against the kernel's page nodes
// (move_pages). The counters are kept since start (also as the metric
// heatsink_store_head_served_bytes_total{memory="local"|"remote"}), up to
// the first exchange and since the last one, so a report can say what share
// of served bytes came from foreign memory before promotion moved anything
// and after it settled.
//
// Copies carry scores (score inheritance). A replica copy out of this store
// carries the current (decayed) score of every chunk its source range covers
// (CopyScores), and a copy landing here raises every chunk its target range
// covers to at least the largest score the source had for the bytes now in
// it (InheritScores: RaiseScore, never lowering). A hot object's new replica
// therefore starts as hot as its source and ranks for promotion at once
// instead of earning its heat again read by read. Chunks of both stores need
// not line up: a target chunk overlapping several source chunks takes the
// largest. A source without a head pool carries nothing (SegmentMemory
// without a keeper); inherit_copy_score = false makes this pool ignore what
// copies bring.
//
// Exchanges keep every address. The data plane addresses bytes by segment
// offset (clients, copies, UCX RMA puts into registered memory), so an
// exchange must not move an object's bytes to another address. The
// HeadMemory here is a table from (region, block) to a block of segment
// address space: Swap moves the two blocks' pages between the two regions'
// nodes (mbind MPOL_MF_MOVE, as the kernel migrates pages: readers and
// writers of those addresses simply wait for the page) and swaps the two
// table entries, so the core's view (the hot block is now in region 0) and
// the data plane's view (same address, now on the serving node) agree. No
// pins are needed for consistency; a page the kernel cannot move (pinned by
// an RDMA registration without on-demand paging) makes the exchange fail,
// the pages already moved go back, and the core counts it as failed.
//
// Limits: at most kSegmentHeadPoolBlocksMax blocks (each exchange may split
// the mapping into more kernel VMAs, bounded by vm.max_map_count); no
// small-object pool; every region a whole number of blocks; the pool split
// into equal segments of whole blocks.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto pool, SegmentHeadPool::Create(env, options));
//   SegmentMemory memory(pool.get(), {});       // Create() each segment id in order
//   memory.set_read_observer(pool.get());
//   HS_RETURN_IF_ERROR(pool->Start());
//
// Thread safety: thread-safe; Start/Stop from one thread.
#ifndef HEATSINK_RUNTIME_NUMA_SEGMENT_HEAD_POOL_H_
#define HEATSINK_RUNTIME_NUMA_SEGMENT_HEAD_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/env/env.h"
#include "core/metrics/metrics.h"
#include "core/model/ids.h"
#include "core/tiering/tier_manager.h"
#include "core/tiering/tiering_knobs.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/numa/bound_mapping.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/promotion_service.h"

namespace heatsink::runtime {

inline constexpr uint64_t kSegmentHeadPoolBlocksMax = 32768;

struct SegmentHeadPoolOptions {
  // The pool's geometry and scoring: memory_bytes + sub_memory_bytes are
  // every segment's bytes together.
  TieringKnobs knobs;
  // Region -> node, from PlanNumaPlacement (regions in PlanRegions order).
  NumaPlacement placement;
  NumaMemoryOptions memory;
  // The segments, in order; the pool is split into equal parts, one each.
  std::vector<SegmentId> segment_ids;
  // Binds the promotion threads and dense score arrays to their nodes, and
  // makes exchanges move pages (LinuxThreadBinder). Null: logical nodes --
  // nothing is bound and an exchange only swaps the table (tests planning
  // for an XML topology).
  ThreadBinder* binder = nullptr;
  // Copies landing here raise the chunks they cover to the source's scores
  // times knobs.copy_score_inheritance (heatsink-store --inherit-copy-score,
  // on by default; off is the same as copy_score_inheritance=0). This pool's
  // own copies out carry its scores either way.
  bool inherit_copy_score = true;

  // INVALID_ARGUMENT naming the flag: bad knobs (TieringKnobs::Validate,
  // which also holds every region to whole blocks), a small-object pool, a
  // pool that does not split into equal segments of whole blocks, too many
  // blocks, or a placement that does not match the knobs.
  [[nodiscard]] absl::Status Validate() const;
  uint64_t total_bytes() const;
  // REQUIRES: segment_ids is not empty.
  uint64_t segment_bytes() const;
};

// Head bytes served, by where their block was: on the serving node (local)
// or on another node (remote).
struct ServedHeadBytes {
  int64_t local_bytes = 0;
  int64_t remote_bytes = 0;

  int64_t total_bytes() const { return local_bytes + remote_bytes; }
  // remote / total; 0 when nothing was served.
  double remote_share() const;
  ServedHeadBytes operator-(const ServedHeadBytes& earlier) const {
    return ServedHeadBytes{local_bytes - earlier.local_bytes, remote_bytes - earlier.remote_bytes};
  }
};

// Counters of the read observer and the score keeper.
struct SegmentHeadPoolStats {
  ServedHeadBytes served;                  // since start
  ServedHeadBytes served_before_exchange;  // before the first exchange (all, without one)
  ServedHeadBytes served_since_exchange;   // since the last exchange (all, without one)
  int64_t exchanges = 0;                   // block exchanges this pool's memory made
  int64_t reads = 0;          // served reads reported
  int64_t chunk_reads = 0;    // chunk scores incremented
  int64_t reads_ignored = 0;  // reads of an unknown segment or out of range
  int64_t copies_scored_out = 0;      // copies out that carried scores
  int64_t copies_scored_in = 0;       // copies in whose scores were applied
  int64_t chunk_scores_raised = 0;    // RaiseScore calls they made
  int64_t copies_scores_ignored = 0;  // copies in with scores not applied
};

class SegmentHeadPool final : public SegmentAllocator,
                              public SegmentReadObserver,
                              public SegmentScoreKeeper {
 public:
  // Maps and binds every block (with a binder; then every page's node is
  // verified with move_pages), creates the TierManager and commits every
  // chunk as a fixed head. RESOURCE_EXHAUSTED when a node cannot hold its
  // blocks; INVALID_ARGUMENT for bad options. `env` outlives the pool.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SegmentHeadPool>> Create(
      Env* env, SegmentHeadPoolOptions options);
  ~SegmentHeadPool() override;  // Stop()
  SegmentHeadPool(const SegmentHeadPool&) = delete;
  SegmentHeadPool& operator=(const SegmentHeadPool&) = delete;

  // Starts the promotion workers, the coordinator and the decay thread
  // (runtime/numa/promotion_service.h). REQUIRES: not started.
  [[nodiscard]] absl::Status Start();
  // Joins them; idempotent.
  void Stop();

  // Hands out the segments in order, one per call; INVALID_ARGUMENT unless
  // `size_bytes` is segment_bytes(), RESOURCE_EXHAUSTED after the last.
  // A buffer keeps the mapping alive after the pool is gone.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<SegmentBuffer>> Allocate(
      uint64_t size_bytes) override;
  // One logical read of every chunk [offset, offset + size_bytes) covers.
  void OnSegmentRead(SegmentId id, uint64_t offset, uint64_t size_bytes) override;
  // One piece per chunk [offset, offset + size_bytes) covers with that
  // chunk's current score, neighbours of equal score merged; above
  // kCopyScorePiecesMax, neighbours are merged further, each group carrying
  // its largest score. Empty for an unknown segment, a bad range, or when
  // every score is 0.
  std::vector<ScorePiece> CopyScores(SegmentId id, uint64_t offset,
                                     uint64_t size_bytes) const override;
  // Raises every chunk [offset, offset + size_bytes) covers to the largest
  // score of the pieces overlapping it. Ignored (counted) when
  // inherit_copy_score is off, for an unknown segment or bad range, or
  // pieces that do not cover the range exactly.
  void InheritScores(SegmentId id, uint64_t offset, uint64_t size_bytes,
                     absl::Span<const ScorePiece> pieces) override;

  uint64_t segment_bytes() const { return options_.segment_bytes(); }
  const SegmentHeadPoolOptions& options() const { return options_; }
  TierManager& manager() { return *manager_; }
  const TierManager& manager() const { return *manager_; }
  PromotionServiceStats service_stats() const;
  MetricsRegistry& metrics() { return metrics_; }
  SegmentHeadPoolStats stats() const;
  // Served head bytes since start (the stats' `served`), without a lock.
  ServedHeadBytes ServedBytes() const;

  // The tiering key of chunk `chunk` (offset / ram_head) of segment `id`.
  static TierKey ChunkKey(SegmentId id, uint64_t chunk);
  // The node the core places the chunk holding `offset` of segment `id` on
  // (its region's node). NOT_FOUND / OUT_OF_RANGE for a bad address.
  [[nodiscard]] absl::StatusOr<int> ChunkNode(SegmentId id, uint64_t offset) const;
  // The node every page of the range sits on now (move_pages query).
  [[nodiscard]] absl::StatusOr<std::vector<int>> PageNodes(SegmentId id, uint64_t offset,
                                                           uint64_t size_bytes) const;
  // OK when every block's pages sit on the node of the region the core has
  // it in; FAILED_PRECONDITION naming the first misplaced block, or when
  // nothing is bound (no binder). Safe while the promotion threads run: each
  // block is checked with no exchange in progress (an exchange waits for at
  // most one block's move_pages query). Costs a query of every page.
  [[nodiscard]] absl::Status VerifyPlacement() const;

  class BlockTableMemory;
  struct Mapping;

 private:
  SegmentHeadPool(Env* env, SegmentHeadPoolOptions options);
  [[nodiscard]] absl::Status CommitChunks();
  // Segment index of `id`, or -1.
  int SegmentIndex(SegmentId id) const;

  Env* const env_;
  const SegmentHeadPoolOptions options_;
  std::shared_ptr<Mapping> mapping_;
  std::unique_ptr<BlockTableMemory> memory_;
  MetricsRegistry metrics_;
  std::unique_ptr<TierManager> manager_;
  std::unique_ptr<NumaPromotionService> service_;
  std::atomic<int> next_segment_{0};
  std::atomic<int64_t> reads_{0};
  std::atomic<int64_t> chunk_reads_{0};
  std::atomic<int64_t> reads_ignored_{0};
  // heatsink_store_head_served_bytes_total{memory="local"|"remote"}.
  Counter* served_local_bytes_ = nullptr;
  Counter* served_remote_bytes_ = nullptr;
  mutable std::atomic<int64_t> copies_scored_out_{0};
  std::atomic<int64_t> copies_scored_in_{0};
  std::atomic<int64_t> chunk_scores_raised_{0};
  std::atomic<int64_t> copies_scores_ignored_{0};
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_SEGMENT_HEAD_POOL_H_
