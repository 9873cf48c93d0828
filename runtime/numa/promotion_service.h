// File: runtime/numa/promotion_service.h
//
// ADR-0019 promotion and decay on real threads, around the core's
// TierManager (which makes every decision and never waits):
//   - one persistent worker per NUMA node holding head regions, bound to that
//     node, first moves its regions' dense score arrays onto the node (the
//     binder's BindMemory), then scans those node-local arrays during a round
//     and decays them during a decay pass; only one RegionSummary per region
//     crosses nodes;
//   - a coordinator on the serving node begins a round, has the workers scan,
//     reduces their summaries and exchanges at most one pair of blocks under
//     the exclusive tier lock; what it does next is the core's pacing rule
//     (core/tiering/promotion_pacing.h, shared with the simulator's
//     TieringDriver): after an exchange (or a stale candidate) it scans again
//     at once, after a scan without inversion it sleeps no_inversion_wait_ms
//     (the ADR's one second), after a round a decay preempted (or when the
//     gate is busy) it waits for that decay pass to end;
//   - a decay thread on the serving node marks a rescore pending every
//     decay_interval_ms (the ADR's minute), waits for the gate -- the
//     coordinator wakes it when its round ends -- then has each worker decay
//     its node's dense arrays while it decays the index shards itself.
//
// The core's priority gate gets real waiting here: condition variables
// signalled when a round ends (decay may take the gate) and when a decay pass
// ends (promotion may resume). A pending decay therefore never waits for more
// than the exchange already in progress.
//
// With no_numa_promotion, or without a foreign head region, the coordinator
// stops at its first attempt (kStop) and decay keeps its schedule.
//
// Time: every time value a decision reads comes from the Env's clock (env->
// clock): the pacing input's now_ns (the TierManager's too) and the decay
// schedule, whose due times are Env times and whose missed intervals are
// skipped, not run late one after another (the first pass is due
// decay_interval_ms after Start). Waiting is real: the coordinator's
// pause of wait_ns and the decay thread's re-check of a busy gate are
// condition-variable waits with a real timeout, and the decay thread waits in
// real time for as long as the Env clock says is left, then reads that clock
// again. With a test's ManualClock, decay is due once the test has advanced
// the clock past the due time, and runs at the thread's next wake-up (the end
// of a round, RequestDecay, Stop or the end of that real wait).
//
// Binding: a ThreadBinder pins each thread to its node (CPUs and memory
// policy) as the thread starts. Start() fails, with every thread joined, when
// a binding fails -- e.g. a node the machine does not have. Tests that plan
// for a topology loaded from XML pass no binder (logical nodes).
//
// Thread safety: Start/Stop/RequestDecay/stats from any thread except the
// service's own. The TierManager, Env and binder must outlive the service.
#ifndef HEATSINK_RUNTIME_NUMA_PROMOTION_SERVICE_H_
#define HEATSINK_RUNTIME_NUMA_PROMOTION_SERVICE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/env/env.h"
#include "core/model/topology.h"
#include "core/tiering/promotion_pacing.h"
#include "core/tiering/tier_manager.h"

namespace heatsink::runtime {

// Binds the calling thread, and memory the thread is about to own, to a node.
class ThreadBinder {
 public:
  virtual ~ThreadBinder() = default;
  [[nodiscard]] virtual absl::Status BindCurrentThread(int node) = 0;
  // Places [addr, addr + bytes) (page-aligned, whole pages) on `node`,
  // moving pages already there. The default leaves memory where it is
  // (logical nodes).
  [[nodiscard]] virtual absl::Status BindMemory(const void* addr, uint64_t bytes, int node) {
    (void)addr;
    (void)bytes;
    (void)node;
    return absl::OkStatus();
  }
};

// The real binding: the node's CPUs (sched_setaffinity) and its memory
// (set_mempolicy MPOL_BIND | MPOL_F_STATIC_NODES), so the thread runs and
// allocates there. INVALID_ARGUMENT for a node not in the topology.
class LinuxThreadBinder final : public ThreadBinder {
 public:
  // `topology` must outlive the binder.
  explicit LinuxThreadBinder(const Topology* topology) : topology_(topology) {}
  [[nodiscard]] absl::Status BindCurrentThread(int node) override;
  // mbind with MPOL_MF_MOVE (MoveRangeToNode).
  [[nodiscard]] absl::Status BindMemory(const void* addr, uint64_t bytes, int node) override;

 private:
  const Topology* const topology_;
};

struct PromotionServiceOptions {
  // Node of every region of the manager's plan, index = region (see
  // NumaPlacement::regions). Only head regions are scanned and decayed by
  // workers.
  std::vector<int> region_nodes;
  int serving_node = 0;
  ThreadBinder* binder = nullptr;  // null: threads are not bound
  // Called with every pacing decision (the attempt's outcome and what the
  // coordinator does next), on the coordinator thread. For tests that compare
  // the two worlds' decisions; may be empty.
  std::function<void(PromotionOutcome, const PromotionPacing&)> pacing_observer = nullptr;
};

struct PromotionServiceStats {
  int64_t rounds = 0;          // rounds that scanned
  int64_t exchanges = 0;
  int64_t no_inversion = 0;
  int64_t stale = 0;
  int64_t preempted = 0;       // a decay became pending before the exchange
  int64_t rate_limited = 0;
  int64_t failed = 0;
  int64_t decay_passes = 0;
  bool promotion_disabled = false;
  // Regions scanned / decayed by each node's worker, by node.
  std::map<int, int64_t> region_scans_by_node;
  std::map<int, int64_t> region_decays_by_node;
};

class NumaPromotionService {
 public:
  NumaPromotionService(Env* env, TierManager* manager, PromotionServiceOptions options);
  NumaPromotionService(const NumaPromotionService&) = delete;
  NumaPromotionService& operator=(const NumaPromotionService&) = delete;
  ~NumaPromotionService();  // Stop()

  // Starts the workers, the coordinator and the decay thread.
  // INVALID_ARGUMENT when region_nodes does not match the manager's regions;
  // a binder's error when a thread cannot be bound (nothing keeps running).
  // REQUIRES: not started.
  [[nodiscard]] absl::Status Start();
  // Finishes the round or pass in progress and joins every thread. Idempotent.
  void Stop();

  // Runs one decay pass as soon as the gate allows, besides the schedule.
  void RequestDecay();

  // The nodes that have a worker, ascending.
  std::vector<int> worker_nodes() const;
  PromotionServiceStats stats() const;

 private:
  enum class CommandKind { kScan, kDecay };
  struct Worker {
    int node = 0;
    std::vector<int> regions;  // head regions on this node
    std::thread thread;
  };

  void WorkerLoop(Worker* worker);
  void CoordinatorLoop();
  // Decay passes on schedule from `first_due_ns` (Env time), and on request.
  void DecayLoop(TimeNs first_due_ns);
  // Runs one command on every worker and waits until all are done.
  void RunOnWorkers(CommandKind kind, PromotionRound* round, DecayPass* pass);
  // Binds the calling thread (and, for a worker, its regions' dense score
  // arrays) and reports the result to Start.
  bool BindAndReport(int node, const std::string& who, const Worker* worker = nullptr);
  void RunDecayPass();
  // Scans on the workers, reduces, exchanges at most one pair of blocks and
  // releases the gate; counts the outcome.
  PromotionResult RunRound(PromotionRound& round);

  Env* const env_;
  TierManager* const manager_;
  const PromotionServiceOptions options_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::thread coordinator_;
  std::thread decay_thread_;

  mutable Mutex mu_;
  CondVar cv_;       // state changes for the service threads
  CondVar done_cv_;  // worker command completion, start-up reports
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // The coordinator and the decay thread stop.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Set once nobody can dispatch a command.
  bool workers_stopping_ ABSL_GUARDED_BY(mu_) = false;
  int bind_reports_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status bind_status_ ABSL_GUARDED_BY(mu_);
  // Current worker command.
  uint64_t command_generation_ ABSL_GUARDED_BY(mu_) = 0;
  CommandKind command_kind_ ABSL_GUARDED_BY(mu_) = CommandKind::kScan;
  PromotionRound* command_round_ ABSL_GUARDED_BY(mu_) = nullptr;
  DecayPass* command_pass_ ABSL_GUARDED_BY(mu_) = nullptr;
  int command_pending_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<RegionSummary> summaries_ ABSL_GUARDED_BY(mu_);  // index = head region
  // Gate waiting.
  uint64_t rounds_finished_ ABSL_GUARDED_BY(mu_) = 0;  // the coordinator released the gate
  uint64_t decays_finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool decay_requested_ ABSL_GUARDED_BY(mu_) = false;
  PromotionServiceStats stats_ ABSL_GUARDED_BY(mu_);
  // One worker command at a time; taken before mu_.
  Mutex dispatch_mu_ ABSL_ACQUIRED_BEFORE(mu_);
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_NUMA_PROMOTION_SERVICE_H_
