// File: sim/internal/simulation.h
//
// The simulated world of one run (private to the runner, sim/runner.h):
// Simulation owns the engine, network, master, store workers and NUMA models
// of one scenario run, feeds them the scenario's operations and measures
// them. It coordinates three collaborators, each owning its own state:
//   sim/internal/cluster_directory.h  the hosts, clients and segments, and
//                                     the lookups between them
//   sim/internal/recovery_audit.h     master crashes: the recovery
//                                     bookkeeping and invariants
//   sim/internal/run_measurements.h   what the run measures: the RunResult
//                                     being collected
// Its own methods are split by concern:
//   sim/internal/simulation_setup.cc  building the world (hosts, master, faults)
//   sim/internal/simulation_ops.cc    operations: puts, scripted ops, copies
//   sim/internal/simulation_reads.cc  reads and the puts they wait for
//   sim/internal/simulation_crash.cc  master crashes and restarts
//   sim/runner.cc                     the run loop, sampling and the result
//   sim/internal/run_support.cc       knob resolution, topology, the helpers below
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_INTERNAL_SIMULATION_H_
#define HEATSINK_SIM_INTERNAL_SIMULATION_H_

#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/master/master_knobs.h"
#include "core/replication/decision.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "core/worker/store_worker.h"
#include "sim/chunked_slab.h"
#include "sim/internal/cluster_directory.h"
#include "sim/internal/recovery_audit.h"
#include "sim/internal/run_measurements.h"
#include "sim/network.h"
#include "sim/network_topology.h"
#include "sim/numa_model.h"
#include "sim/runner.h"
#include "sim/sim_data_mover.h"
#include "sim/sim_env.h"
#include "sim/sim_master_client.h"
#include "sim/workloads.h"

namespace heatsink::sim::runner_internal {

// "accepted", "would_propose", ... or "rejected/<reason>": the key a
// decision is counted under in RunResult::decisions_by_outcome.
std::string DecisionCountKey(const DecisionRecord& r);

// Appends lines to a file through a buffer; the first write error sticks.
class LineFile {
 public:
  absl::Status Open(const std::string& path) {
    path_ = path;
    out_.open(path, std::ios::out | std::ios::trunc | std::ios::binary);
    if (!out_) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
    open_ = true;
    return absl::OkStatus();
  }
  bool open() const { return open_; }
  void Append(absl::string_view line) {
    buffer_.append(line.data(), line.size());
    buffer_.push_back('\n');
    if (buffer_.size() >= (size_t{1} << 20)) Flush();
  }
  void Flush() {
    if (!open_ || buffer_.empty()) return;
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }
  absl::Status Close() {
    if (!open_) return absl::OkStatus();
    Flush();
    out_.close();
    open_ = false;
    if (!out_) return absl::DataLossError(absl::StrCat("error writing ", path_));
    return absl::OkStatus();
  }

 private:
  std::string path_;
  std::ofstream out_;
  std::string buffer_;
  bool open_ = false;
};

// Every admission/warmup decision: one decisions.jsonl line and a count.
class DecisionRecorder final : public DecisionSink {
 public:
  DecisionRecorder(LineFile* file, RunObserver* observer) : file_(file), observer_(observer) {}
  void Record(const DecisionRecord& record) override {
    if (file_->open()) file_->Append(FormatDecisionJson(record));
    ++counts_[DecisionCountKey(record)];
    if (observer_ != nullptr) observer_->OnDecision(record);
  }
  const std::map<std::string, int64_t>& counts() const { return counts_; }

 private:
  LineFile* const file_;
  RunObserver* const observer_;
  std::map<std::string, int64_t> counts_;
};

struct KnobSet {
  MasterKnobs master;
  ReplicationKnobs replication;
  TieringKnobs tiering;
  NetworkKnobs network;
  EngineKnobs engine;
  DriverKnobs driver;

  // Sets one knob by name in whichever registry has it.
  absl::Status Set(const std::string& name, const std::string& value) {
    if (MasterKnobs::Registry().Find(name)) return MasterKnobs::Registry().Set(master, name, value);
    if (ReplicationKnobs::Registry().Find(name)) {
      return ReplicationKnobs::Registry().Set(replication, name, value);
    }
    if (TieringKnobs::Registry().Find(name)) {
      return TieringKnobs::Registry().Set(tiering, name, value);
    }
    if (NetworkKnobs::Registry().Find(name)) {
      return NetworkKnobs::Registry().Set(network, name, value);
    }
    if (EngineKnobs::Registry().Find(name)) return EngineKnobs::Registry().Set(engine, name, value);
    if (DriverKnobs::Registry().Find(name)) return DriverKnobs::Registry().Set(driver, name, value);
    return absl::NotFoundError(absl::StrCat("unknown knob '", name, "'"));
  }

  absl::Status Validate() const {
    HS_RETURN_IF_ERROR(master.Validate());
    HS_RETURN_IF_ERROR(replication.Validate());
    HS_RETURN_IF_ERROR(tiering.Validate());
    HS_RETURN_IF_ERROR(network.Validate());
    HS_RETURN_IF_ERROR(engine.Validate());
    return driver.Validate();
  }

  std::vector<std::pair<std::string, std::string>> Dump() const {
    std::vector<std::pair<std::string, std::string>> out = MasterKnobs::Registry().Dump(master);
    auto append = [&out](std::vector<std::pair<std::string, std::string>> more) {
      out.insert(out.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
    };
    append(ReplicationKnobs::Registry().Dump(replication));
    append(TieringKnobs::Registry().Dump(tiering));
    append(NetworkKnobs::Registry().Dump(network));
    append(EngineKnobs::Registry().Dump(engine));
    append(DriverKnobs::Registry().Dump(driver));
    return out;
  }
};

// The knobs of a run: the scenario's network latencies and `knobs`, then the
// --set overrides, validated together. INVALID_ARGUMENT names the setting.
absl::StatusOr<KnobSet> ResolveKnobs(const Scenario& scenario, const RunOptions& options);

// The network model's topology: the scenario's domains, their hosts with NICs,
// and the trunks.
NetworkTopology BuildNetworkTopology(const Scenario& scenario);

class Simulation;

// The executor of one master incarnation: forwards to the engine's, and once
// Kill()ed (the master crashed) the work it had posted does nothing when it
// comes due, so a crashed master's timers never reach freed memory.
class IncarnationExecutor final : public Executor {
 public:
  explicit IncarnationExecutor(Executor* inner) : inner_(inner) {}
  void Post(absl::AnyInvocable<void() &&> fn) override {
    inner_->Post([alive = alive_, fn = std::move(fn)]() mutable {
      if (*alive) std::move(fn)();
    });
  }
  TimerId PostAfter(DurationNs delay_ns, absl::AnyInvocable<void() &&> fn) override {
    return inner_->PostAfter(delay_ns, [alive = alive_, fn = std::move(fn)]() mutable {
      if (*alive) std::move(fn)();
    });
  }
  bool Cancel(TimerId id) override { return inner_->Cancel(id); }
  void Kill() { *alive_ = false; }

 private:
  Executor* const inner_;
  const std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Copies of the store workers go through the network model (SimDataMover);
// this layer adds the scripted fault hooks (fail_copy, delay_copies) and tells
// the simulation where copied bytes landed.
class ScriptedDataMover final : public DataMover {
 public:
  explicit ScriptedDataMover(Simulation* sim) : sim_(sim) {}
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override;

 private:
  Simulation* const sim_;
};

// What the simulation watches of the master (ReplicatedMaster's supported
// hook): every read (the read log) and removal (restart checks), every
// manifest report applied (restart checks), and, with a RunObserver, each
// dynamic CopyEnd with the lease state it met (swarm checks).
class SimCallObserver final : public MasterCallObserver {
 public:
  // `observer` may be null. Every pointer must outlive this object.
  SimCallObserver(Simulation* sim, Engine* engine, const ReplicatedMaster* master,
                  RunObserver* observer)
      : sim_(sim), engine_(engine), master_(master), observer_(observer) {}
  void OnKeyRead(const ReadObservation& read) override;
  void OnReplicaRemoved(const ReplicaRemoval& removal) override;
  void BeforeDynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) override;
  void AfterDynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                  const absl::Status& result) override;
  void AfterReportManifest(ClientId client, const ReportManifestRequest& req,
                           const absl::StatusOr<ReportManifestResponse>& result) override;

 private:
  Simulation* const sim_;
  Engine* const engine_;
  const ReplicatedMaster* const master_;
  RunObserver* const observer_;
  // The CopyEnd under way (Before..After).
  CopyEndObservation copy_end_;
};

class Simulation {
 public:
  Simulation(const Scenario& scenario, const RunOptions& options, KnobSet knobs)
      : scenario_(scenario),
        options_(options),
        knobs_(std::move(knobs)),
        seed_(options.seed.value_or(scenario.seed)),
        env_(seed_, knobs_.engine),
        mover_(this),
        recovery_(&cluster_),
        measurements_(scenario, options) {}
  ~Simulation() {
    // Workers and tiering first (their timers live in the engine), then the
    // master.
    for (HostRt& h : cluster_.hosts()) {
      h.worker.reset();
      h.numa.reset();
    }
    if (replicated_ != nullptr) replicated_->SetCallObserver(nullptr);
  }

  absl::Status Build();
  absl::StatusOr<RunResult> Run();

  // Hooks for ScriptedDataMover and SimCallObserver.
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done);
  void OnKeyRead(const ReadObservation& read);
  void OnReplicaRemoved(const ReplicaRemoval& removal);
  void OnReportApplied(ClientId client, const ReportManifestRequest& req,
                       const absl::StatusOr<ReportManifestResponse>& result);

 private:
  // One read (Get or BatchGet op) in flight.
  struct ReadRt {
    TimeNs issued_ns = 0;
    int client = 0;
    std::optional<size_t> request_row;
    int64_t keys_outstanding = 0;
    int64_t master_retries = 0;  // retries because the master was unavailable
  };
  using ReadHandle = std::shared_ptr<ReadRt>;
  // A read waiting for puts in flight: it reads `names` once `waiting` puts
  // have ended (see EndPut).
  struct ReadWaitRt {
    ReadHandle read;
    int64_t waiting = 0;
    std::vector<ObjectName> names;
  };
  // A single put in progress (see IssuePut). Its callbacks name it by its
  // index in puts_, so each fits in an event's inline storage.
  struct PutRt {
    ObjectName name;
    ClientId writer;
    int writer_host = 0;
    int target = -1;  // host of the replica, once PutStart answered
    uint64_t size = 0;
    Version version = 0;
    std::optional<size_t> request_row;
  };
  // A batch put in progress (see IssueBatchPut).
  struct PutBatchRt {
    ClientId writer;
    int writer_host = 0;
    std::optional<size_t> request_row;
    uint64_t size = 0;  // of every key
    std::vector<ObjectName> names;
    std::vector<Version> versions;  // PutStart's, by key
    // Host of the key's replica, by key; -1 when its PutStart failed (no put
    // to end or revoke).
    std::vector<int> targets;
    std::vector<bool> landed;  // the key's flow delivered every byte
    int64_t flows_outstanding = 0;
  };
  using PutBatchHandle = std::shared_ptr<PutBatchRt>;

  // Setup.
  absl::Status BuildHosts();
  absl::Status BuildMaster();
  // Builds a master incarnation and connects the control plane to it.
  // `restarted`: after a master_crash (the recovery knobs apply).
  absl::Status StartMaster(bool restarted);
  // master_crashes (sim/internal/simulation_crash.cc).
  void ScheduleMasterCrashes();
  void CrashMaster();
  void RestartMaster();
  void StartWorker(HostRt& host);
  void ScheduleTrunkFaults();
  void ScheduleSamples();

  // Operations.
  void PumpNext();
  absl::Status Execute(SimOp& op);
  void IssuePut(const SimOp& op, std::optional<size_t> request_row);
  // IssuePut's steps after PutStart, after the flow and after PutEnd.
  void PutStarted(uint32_t put, absl::StatusOr<PutStartResponse> started);
  void PutMoved(uint32_t put, absl::Status moved);
  void PutEnded(uint32_t put, absl::Status ended);
  // A put whose data did not move: counted failed, revoked and finished.
  void RevokePut(uint32_t put);
  // Ends the put (EndPut), finishes its request and frees its record.
  void FinishPut(uint32_t put);
  // A put of several keys: one BatchPutStart, one flow group per target host
  // of the started keys, then, once every group has ended, one BatchPutEnd
  // for the keys that landed and one BatchPutRevoke for the rest. A key is
  // readable once its end is answered.
  // More keys than the master's batch_keys_max go in several batches.
  void IssueBatchPut(const SimOp& op, std::optional<size_t> request_row);
  void StartBatchPut(const HostRt& host, PutBatchHandle batch);
  void BatchPutStarted(const PutBatchHandle& batch, const absl::StatusOr<BatchPutStartResponse>& r);
  void EndBatchPut(const PutBatchHandle& batch);
  void IssueRead(const SimOp& op, std::optional<size_t> request_row);
  void ReadKeys(ReadHandle read, std::vector<ObjectName> names, int64_t attempt);
  void ReadReplica(ReadHandle read, const ObjectName& name, const GetReplicaListResponse& response);
  void FinishKey(const ReadHandle& read, bool ok, uint64_t bytes, Distance distance);
  // The put of `name` ended (landed or failed): wakes the reads waiting for it.
  void EndPut(const ObjectName& name);
  absl::Status KillWorker(const HostId& host);
  absl::Status RestartWorker(const HostId& host);
  absl::Status MountOrUnmount(const std::string& segment, bool mount);
  absl::Status ScriptedCopyStart(const SimOp& op);
  // set_knob: dynamic_replication_mode changes the live mode (the RFC's
  // rollout); any other knob stops the run with FAILED_PRECONDITION.
  absl::Status SetKnob(const SimOp& op);
  absl::Status ScriptedPropose(const SimOp& op);

  // Measurement (what is measured: measurements_).
  void Sample(size_t interval);
  // The NUMA models' part of a sample.
  void CloseNumaInterval(size_t interval);
  // The master's figures at a sample. REQUIRES: master_up().
  MasterSample SampleMasterFigures() const;
  // The RunResult once the run ended.
  RunResult CollectResult();
  absl::Status CheckInvariants();
  void Note(absl::string_view what) {
    if (options_.observer != nullptr) options_.observer->OnNote(env_.NowNs(), what);
  }
  RunWorld World() {
    RunWorld world;
    world.now_ns = env_.NowNs();
    world.events = env_.engine().events_run();
    world.master = replicated_.get();  // null while the master is down
    world.numa_hosts = &numa_hosts_;
    return world;
  }
  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
  }
  // The live master's views. REQUIRES: master_up().
  const MasterService& master() const { return replicated_->master(); }
  bool master_up() const { return replicated_ != nullptr; }

  const Scenario& scenario_;
  const RunOptions& options_;
  const KnobSet knobs_;
  const uint64_t seed_;
  SimEnv env_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<SimDataMover> sim_mover_;
  ScriptedDataMover mover_;
  LineFile decisions_file_;
  LineFile reads_file_;
  std::unique_ptr<DecisionRecorder> decisions_;
  // The master and what reaches it. With master_crashes the master runs on
  // its own incarnation executor and Env (same clock and Rng); without, on
  // env_.env() as always.
  SimMasterEndpoint endpoint_;
  std::unique_ptr<IncarnationExecutor> master_executor_;
  Env master_env_;
  bool master_crashes_ = false;  // the scenario has master_crashes
  // The live dynamic_replication_mode (set_knob), which a restarted master
  // starts in.
  DynamicReplicationMode mode_ = DynamicReplicationMode::kOff;
  std::unique_ptr<ReplicatedMaster> replicated_;
  std::unique_ptr<SimCallObserver> call_observer_;
  std::vector<std::pair<HostId, const NumaHostModel*>> numa_hosts_;
  ControlFaults control_faults_;
  ControlStats control_stats_;
  int master_host_ = 0;
  bool log_reads_ = false;

  // The hosts (their workers, NUMA models and master clients), clients and
  // segments. Destroyed before the master and the network they reach.
  ClusterDirectory cluster_;

  // The names of the objects whose put is in flight, each pointing at the
  // name held by the record of one such put (a PutRt in puts_, whose chunks
  // never move, or a PutBatchRt's names): 8 bytes an entry during a bulk put
  // of a million objects, where a copy of every name cost about 100. An
  // entry goes when a put of its name ends (EndPut), no later than the end
  // of the put it points into. Lookup only.
  struct NamePtrHash {
    using is_transparent = void;
    size_t operator()(const ObjectName* n) const { return absl::HashOf(*n); }
    size_t operator()(const ObjectName& n) const { return absl::HashOf(n); }
  };
  struct NamePtrEq {
    using is_transparent = void;
    static const ObjectName& Deref(const ObjectName* n) { return *n; }
    static const ObjectName& Deref(const ObjectName& n) { return n; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Deref(a) == Deref(b);
    }
  };
  absl::flat_hash_set<const ObjectName*, NamePtrHash, NamePtrEq> puts_in_flight_;
  // The reads waiting for puts in flight, by object (a decode instance reads
  // a block once its prefill's put has landed): only names in
  // puts_in_flight_. Lookup only; waiters run in registration order.
  absl::flat_hash_map<ObjectName, absl::InlinedVector<std::shared_ptr<ReadWaitRt>, 1>>
      reads_waiting_for_put_;
  // Records of single puts in progress, reused through a free list (the
  // pool is given back once a large burst of puts has ended).
  ChunkedSlab<PutRt, 12> puts_;
  std::vector<uint32_t> free_puts_;

  // master_crashes bookkeeping and recovery invariants.
  RecoveryAudit recovery_;

  // Scripted copy faults.
  int64_t fail_any_copies_ = 0;
  std::map<ObjectName, int64_t> fail_copies_by_key_;

  std::unique_ptr<OpStream> ops_;
  SimOp next_op_;
  absl::Status status_;

  // Results being collected.
  RunMeasurements measurements_;
};

}  // namespace heatsink::sim::runner_internal

#endif  // HEATSINK_SIM_INTERNAL_SIMULATION_H_
