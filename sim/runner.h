// File: sim/runner.h
//
// The scenario driver: turns a Scenario into one deterministic run of the
// real core and measures it.
//
//   topology     -> Network (flow-level model, trunks, control latency)
//   knobs        -> MasterKnobs, ReplicationKnobs, TieringKnobs, NetworkKnobs,
//                   EngineKnobs and DriverKnobs (scenario "knobs", then --set)
//   master       -> ReplicatedMaster (MasterService + dynamic replication) on
//                   the SimEnv, placed on the master host (DriverKnobs)
//   hosts        -> one StoreWorker per host with segments (registers, mounts,
//                   heartbeats, runs REPLICA_COPY tasks through SimDataMover),
//                   talking to the master through SimMasterClient (modelled
//                   control messages); a domain's workers start at its join
//   clients      -> the readers and writers of the workloads: a get is a
//                   GetReplicaList round trip, a replica choice by the core's
//                   ReplicaSelectionPolicy, then a network flow from the
//                   replica's host to the reader's host; a put is PutStart, a
//                   flow to the allocated segment's host, PutEnd; a batch_put
//                   is one BatchPutStart, a flow per key, one BatchPutEnd
//                   (and one BatchPutRevoke for keys whose flow failed)
//   NUMA         -> inside each worker host a TierManager holds the object's
//                   --ram-head chunks on the host's NUMA nodes (see
//                   sim/numa_model.h); a read served by the host pays the
//                   local or remote latency and bandwidth of the node holding
//                   each chunk before its flow moves (FlowSpec's source
//                   delay), and the TieringDriver decays and promotes
//   workloads    -> MakeScenarioOpStream (workloads, scripted ops, timed
//                   faults) fed to the engine one operation at a time
//   outputs      -> decisions.jsonl (every admission/warmup decision, as it
//                   is made), reads.jsonl (with log_reads), RunResult for
//                   the report writers (sim/report.h)
//
// Determinism: one seed; every subsystem draws from its own sub-seed
// (SimEnv), every container that reaches an output is ordered, and the
// engine orders events by (time, sequence). Same scenario, seed and options
// give byte-identical outputs in any process.
#ifndef HEATSINK_SIM_RUNNER_H_
#define HEATSINK_SIM_RUNNER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/knobs.h"
#include "core/env/time.h"
#include "core/master/master_types.h"
#include "core/replication/replica_action.h"
#include "sim/run_result.h"
#include "sim/scenario.h"
#include "sim/workloads.h"

namespace heatsink {
class ReplicatedMaster;
struct DecisionRecord;
}  // namespace heatsink

namespace heatsink::sim {

class NumaHostModel;

// Knobs of the driver itself (how the simulated clients and workers behave),
// set like any other knob.
struct DriverKnobs {
  // The host the master runs on (its control messages start and end there).
  // Empty: the first host of the first domain.
  std::string master_host;
  // A master call whose request or answer was lost fails after this long.
  int64_t control_rpc_timeout_ms = 1'000;
  // A read of an object still being written is retried after this long, at
  // most read_retries_max times.
  int64_t read_retry_ms = 1;
  int64_t read_retries_max = 1'000;
  // Store-worker pacing (core/worker/store_worker.h).
  int64_t worker_heartbeat_interval_ms = 1'000;
  int64_t worker_fetch_interval_ms = 100;
  int64_t worker_copies_in_flight_max = 16;
  // NUMA model: run the tiering core inside every worker host.
  bool numa_model = true;
  // Modelled tiering costs: a scan reads every head's score, an exchange
  // moves both blocks at the node's local bandwidth, a decay pass touches
  // every key.
  int64_t tiering_scan_ns_per_head = 2;
  int64_t tiering_decay_ns_per_key = 5;
  // Seed of the readers' replica selection (spread policy).
  int64_t replica_selection_seed = 0;
  // The core's CheckInvariants() runs at every sampling step and at the end;
  // N > 0 also runs it after every N-th event (slow; for tests).
  int64_t invariant_check_events = 0;

  [[nodiscard]] absl::Status Validate() const;
  static const KnobRegistry<DriverKnobs>& Registry();
};

// Every knob name a scenario or --set may use, in the order RunResult::knobs
// lists them: master, replication, tiering, network, engine, driver.
std::vector<KnobSpec> SimulatorKnobSpecs();

// Load options with SimulatorKnobSpecs.
ScenarioLoadOptions SimulatorLoadOptions();

// Reads a scenario file for a run (LoadScenarioFile with SimulatorKnobSpecs).
[[nodiscard]] absl::StatusOr<Scenario> LoadScenarioForRun(const std::string& path);

// What a RunObserver sees of the simulated world; valid during the call.
struct RunWorld {
  TimeNs now_ns = 0;
  uint64_t events = 0;  // events run so far
  const ReplicatedMaster* master = nullptr;  // null while the master is down
  // The NUMA model of every host that has one, in topology order.
  const std::vector<std::pair<HostId, const NumaHostModel*>>* numa_hosts = nullptr;
};

// One DynamicReplicaCopyEnd as the master saw it: the lease state just
// before the call and the answer.
struct CopyEndObservation {
  TimeNs t_ns = 0;
  ClientId client;
  CopyTaskFence fence;
  // The pending action holding the fence's lease just before the call.
  bool lease_pending = false;
  TimeNs lease_expiration_ns = 0;
  Version lease_version = 0;
  ObjectName name;              // of the lease, or of the task when no lease is pending
  bool object_exists = false;  // just before the call
  Version object_version = 0;
  absl::Status status;
};

// One SubmitReplicaActionProposal call of a scripted `propose` burst and the
// master's answer.
struct ProposalObservation {
  TimeNs t_ns = 0;
  int64_t burst_index = 0;  // 0 .. count - 1 within its op
  int64_t burst_size = 1;
  ReplicaActionProposal proposal;
  absl::StatusOr<ReplicaActionLease> result;
};

// Watches one run from inside (sim/swarm_checker.h is the main user): the
// operations executed, the admission decisions, every dynamic CopyEnd, every
// scripted proposal and its answer, and
// the world after each event and at the end. A non-OK status from
// AfterEvent or AtEnd stops the run with that status. Calls arrive in
// simulation order, on the run's thread.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void OnOp(TimeNs /*now_ns*/, const SimOp& /*op*/) {}
  virtual void OnDecision(const DecisionRecord& /*record*/) {}
  virtual void OnCopyEnd(const CopyEndObservation& /*copy_end*/) {}
  virtual void OnProposal(const ProposalObservation& /*proposal*/) {}
  // Trunk faults, worker starts and other world changes not carried by an op.
  virtual void OnNote(TimeNs /*now_ns*/, absl::string_view /*what*/) {}
  // A master_crash fault: the master is gone (RunWorld::master is null until
  // the restart), then a fresh one starts and recovers.
  virtual void OnMasterCrash(TimeNs /*now_ns*/) {}
  virtual void OnMasterRestart(TimeNs /*now_ns*/) {}
  [[nodiscard]] virtual absl::Status AfterEvent(const RunWorld& /*world*/) {
    return absl::OkStatus();
  }
  [[nodiscard]] virtual absl::Status AtEnd(const RunWorld& /*world*/) { return absl::OkStatus(); }
};

// A --set name=value, checked by name and parsed by the knob's registry.
struct KnobOverride {
  std::string name;
  std::string value;
};

// Parses "name=value"; INVALID_ARGUMENT without '=' or with an empty name.
[[nodiscard]] absl::StatusOr<KnobOverride> ParseKnobOverride(const std::string& text);

// Progress of a long run: simulated time reached, the run's end, events so
// far. Called from the run loop about every 2^16 events.
using ProgressFn = std::function<void(TimeNs now_ns, TimeNs end_ns, uint64_t events)>;

struct RunOptions {
  std::optional<uint64_t> seed;         // overrides the scenario's seed
  std::vector<KnobOverride> overrides;  // applied after the scenario's knobs, in order
  std::string label;                    // e.g. "enforce" in a compare
  std::string replay_command;           // printed and stored in summary.json
  // Directory for decisions.jsonl and reads.jsonl (created when missing);
  // empty writes neither (tests and benchmarks that only need the result).
  std::string out_dir;
  std::optional<bool> log_reads;   // overrides outputs.log_reads
  bool keep_scenario_echo = true;  // fill RunResult::scenario_json
  // Fill RunResult::limit_recorder, keeping every avoidable read's time
  // (observe-mode estimates of what replicas would have removed).
  bool keep_limit_reads = false;
  ProgressFn progress;
  // Not owned; null: no observer. Must outlive the run.
  RunObserver* observer = nullptr;
};

// Runs the scenario to its duration. Errors: INVALID_ARGUMENT for knob values
// that do not parse or validate (naming the knob and where it was set),
// FAILED_PRECONDITION when the scenario asks for something the run cannot do
// (for example copy_start without dynamic replication), and the engine's
// sticky status (RESOURCE_EXHAUSTED at its event limit, INTERNAL when a core
// invariant check fails).
[[nodiscard]] absl::StatusOr<RunResult> RunScenario(const Scenario& scenario,
                                                    const RunOptions& options);

// The largest object the scenario's workloads put, as far as it is known
// before a run: synthetic workloads' object_size_bytes, scripted put and
// batch_put sizes, a trace's block (tokens_per_block x kv_bytes_per_token).
// 0 when no workload names a size.
int64_t LargestObjectBytes(const Scenario& scenario);

// Notes on a run's knobs for the user, printed before the run (heatsink-sim
// run and compare, on stderr): a copy budget (copy_budget_per_source_bytes,
// copy_budget_per_trunk_bytes) smaller than LargestObjectBytes, whose larger
// copies then go through one at a time on their source or trunk. Errors: as
// RunScenario's for knobs that do not parse or validate.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ScenarioNotes(const Scenario& scenario,
                                                                     const RunOptions& options);

// The outcome of one scenario check (Scenario::checks) against a run.
struct CheckOutcome {
  std::string name;
  std::string metric;
  std::string op;
  double expected = 0;
  std::optional<double> actual;  // nullopt: the metric is not in summary.json
  bool applies = true;           // false: the check is for another mode
  bool passed = false;
};

// Evaluates the checks: `metric` is a dotted path into summary.json (for
// example "bytes_read.cross_domain" or "reads.latency_ns.p99") that must
// name a number. `mode` is the run's dynamic_replication_mode.
std::vector<CheckOutcome> EvaluateChecks(const Scenario& scenario, const RunResult& run);

// "check <name>: <metric> = <actual> <op> <expected>: ok|FAILED" lines.
std::string FormatCheckOutcomes(const std::vector<CheckOutcome>& outcomes);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_RUNNER_H_
