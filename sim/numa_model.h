// File: sim/numa_model.h
//
// NUMA inside one simulated store-worker host (ADR-0019, DESIGN data flow 5):
// the real tiering core (TierManager, paced by TieringDriver) over modelled
// head memory. The host's head pool has the regions the tiering knobs
// describe, placed by the core's rule that heatsink-store also follows
// (core/tiering/numa_placement.h): region 0 (preferred) on the NIC's NUMA
// node, the foreign regions on the host's other nodes with memory, nearest
// first by numa_distances (ties, and hosts without distances: ascending id).
// A set-up the store would refuse is refused here too, naming the host's
// numa_nodes path: more foreign regions than other nodes with memory (no node
// absorbs the extras), or more head-region bytes on a node than its
// capacity_bytes.
//
// An object stored on the host is indexed as --ram-head chunks (object key +
// chunk index), each with its own score; a final partial chunk goes to the
// compact arena. A read of the object served by the host opens and
// completes a read of every chunk (one increment per logical read) and costs,
// per chunk, the node's latency plus chunk bytes over its bandwidth: local
// values for a head in the preferred region, the node's remote values for a
// head in a foreign region. Chunks the pool could not hold (it was full) are
// served from the segment's backing memory at no extra modelled cost and are
// not head reads.
//
// Which chunks of an object are indexed is the tiering core's index alone (a
// store that the pool refused leaves its chunk unindexed): a read asks it for
// every chunk (TierManager::OpenReadIfIndexed, which builds no status for a
// chunk it does not hold). Where the pool is full most asks find nothing
// (1,329,544 of 1,576,800 on pd-conversation-replay, 2026-12-08). A record
// of the refused chunks was tried: it saved those asks but cost as much in
// the stores, which must then ask whether a refused chunk was indexed
// before (docs/performance.md).
//
// Modelled tiering costs (TieringCostModel): a scan costs
// scan_ns_per_head per head of the scanned region, an exchange moves both
// blocks at the NIC node's local bandwidth, a decay pass costs
// decay_ns_per_key per indexed key.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_NUMA_MODEL_H_
#define HEATSINK_SIM_NUMA_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/env/env.h"
#include "core/env/head_memory.h"
#include "core/model/ids.h"
#include "core/tiering/numa_placement.h"
#include "core/tiering/tier_manager.h"
#include "core/tiering/tiering_driver.h"
#include "core/tiering/tiering_knobs.h"
#include "sim/run_result.h"
#include "sim/scenario.h"

namespace heatsink::sim {

// The head pool's placement on `host` (PlanNumaPlacement over
// HostTopology(host), serving node nic_numa_node). A refusal is
// INVALID_ARGUMENT "<host.numa_where>: <what>", naming the knobs by their
// scenario paths ($.knobs.sub_memory, ...).
[[nodiscard]] absl::StatusOr<NumaPlacement> PlanHostNumaPlacement(const ScenarioHost& host,
                                                                  const TieringKnobs& knobs);

// HeadMemory without bytes: sizes and range checks only (the simulator
// models where bytes are, not what they are).
class ModelledHeadMemory final : public HeadMemory {
 public:
  explicit ModelledHeadMemory(std::vector<uint64_t> region_bytes)
      : region_bytes_(std::move(region_bytes)) {}
  int region_count() const override { return static_cast<int>(region_bytes_.size()); }
  uint64_t region_bytes(int region) const override;
  absl::Status Read(int region, uint64_t offset, absl::Span<uint8_t> out) const override;
  absl::Status Write(int region, uint64_t offset, absl::Span<const uint8_t> in) override;
  absl::Status Swap(const MemoryRange& a, const MemoryRange& b) override;

 private:
  std::vector<uint64_t> region_bytes_;
};

struct NumaCosts {
  int64_t scan_ns_per_head = 2;
  int64_t decay_ns_per_key = 5;
};

// What one object read cost inside the serving host.
struct NumaReadCost {
  DurationNs memory_ns = 0;
  int64_t head_reads = 0;   // chunks read from a head (local or foreign)
  int64_t local_reads = 0;  // of which from the preferred region
};

class NumaHostModel {
 public:
  // REQUIRES: knobs.Validate().ok(). `env` outlives the model.
  static absl::StatusOr<std::unique_ptr<NumaHostModel>> Create(Env* env, const TieringKnobs& knobs,
                                                               const ScenarioHost& host,
                                                               const NumaCosts& costs);
  NumaHostModel(const NumaHostModel&) = delete;
  NumaHostModel& operator=(const NumaHostModel&) = delete;
  ~NumaHostModel();

  // Starts the decay and promotion schedule.
  void Start();
  // Indexes the chunks of an object that landed on the host (a put or a
  // copy). A chunk the pool cannot take stays unindexed.
  void Store(const ObjectName& name, uint64_t size_bytes);
  // Drops the chunks of an object that left the host.
  void Remove(const ObjectName& name, uint64_t size_bytes);
  // Reads every chunk once and returns the modelled cost. `interval` is the
  // sampling interval the read counts in (non-decreasing across calls).
  NumaReadCost Read(const ObjectName& name, uint64_t size_bytes, size_t interval);
  // The copy of an object landed here from a host whose model is `source`
  // (score inheritance): every chunk the source indexes raises this host's
  // score of the same chunk to the source's score. Call after Store.
  void InheritScores(const ObjectName& name, uint64_t size_bytes, const NumaHostModel& source);
  // Closes `interval` (every read of it has been made) and returns its
  // figures. REQUIRES: intervals closed in increasing order.
  NumaIntervalStats CloseInterval(size_t interval);

  // Which node backs each region (PlanHostNumaPlacement).
  const NumaPlacement& placement() const { return placement_; }
  // Every promotion pacing decision of the host's TieringDriver (tests that
  // compare the simulator's decisions with the runtime's). Before Start.
  void set_pacing_observer(TieringDriver::PacingObserver observer) {
    driver_->set_pacing_observer(std::move(observer));
  }
  TieringStats stats() const { return manager_->stats(); }
  int64_t stores_failed() const { return stores_failed_; }
  // The tiering core's invariants (TierManager::CheckInvariants): finite
  // scores, exactly one score owner per key, head pool accounting. Which
  // chunks of an object are indexed is the TierManager's index alone: the
  // model keeps no second record of the names.
  [[nodiscard]] absl::Status CheckInvariants() const;

 private:
  class Costs;
  // Per region: the node parameters that price a read of a head there.
  struct RegionCost {
    DurationNs latency_ns = 0;
    int64_t bytes_per_s = 1;
  };
  NumaHostModel() = default;
  DurationNs ChunkCost(int region, uint64_t bytes) const;

  // Head reads of the open interval per chunk: (reads, of which local).
  struct ChunkReads {
    int64_t reads = 0;
    int64_t local = 0;
  };
  void CloseOpenInterval();

  std::unique_ptr<ModelledHeadMemory> memory_;
  std::unique_ptr<TierManager> manager_;
  std::unique_ptr<Costs> costs_;
  std::unique_ptr<TieringDriver> driver_;
  NumaPlacement placement_;
  std::vector<RegionCost> region_costs_;
  uint64_t ram_head_bytes_ = 0;
  int64_t stores_failed_ = 0;
  // The interval being counted and its per-chunk reads (summed into
  // order-independent totals when it closes, never iterated into an order).
  size_t open_interval_ = 0;
  absl::flat_hash_map<TierKey, ChunkReads> interval_reads_;
  NumaIntervalStats open_stats_;
  // Closed intervals not yet taken (at most a few: a read can close the
  // interval before CloseInterval asks for it).
  std::vector<std::pair<size_t, NumaIntervalStats>> closed_;
  int64_t exchanges_seen_ = 0;
  int64_t rounds_seen_ = 0;
  int64_t head_trades_seen_ = 0;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_NUMA_MODEL_H_
