// The scenario driver (sim/runner.h): one Simulation object per run owns the
// simulated world, feeds it the scenario's operations and measures it.
#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/master/master_knobs.h"
#include "core/master/master_service.h"
#include "core/replication/decision.h"
#include "core/replication/replica_selection.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "core/worker/store_worker.h"
#include "sim/network.h"
#include "sim/network_topology.h"
#include "sim/numa_model.h"
#include "sim/report_format.h"
#include "sim/sim_data_mover.h"
#include "sim/sim_env.h"
#include "sim/sim_master_client.h"
#include "sim/workloads.h"

namespace heatsink::sim {
namespace {

constexpr uint64_t kPpm = 1'000'000;
constexpr uint64_t kStoreClientIdBase = 1'000'000;
constexpr uint64_t kProgressEventMask = (uint64_t{1} << 16) - 1;

uint64_t ProbabilityPpm(double p) {
  return static_cast<uint64_t>(std::llround(std::clamp(p, 0.0, 1.0) * 1e6));
}

std::string DecisionCountKey(const DecisionRecord& r) {
  if (r.outcome != DecisionOutcome::kRejected) {
    return std::string(DecisionOutcomeName(r.outcome));
  }
  return absl::StrCat("rejected/", r.reason.has_value() ? RejectReasonName(*r.reason) : "unknown");
}

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

// The dynamic copy calls of the store workers, forwarded to the master; each
// CopyEnd is reported to the RunObserver with the lease state it met.
class ObservedCopyCalls final : public DynamicCopyCalls {
 public:
  ObservedCopyCalls(Engine* engine, ReplicatedMaster* master, RunObserver* observer)
      : engine_(engine), master_(master), observer_(observer) {}
  absl::StatusOr<CopyStartResponse> DynamicReplicaCopyStart(ClientId client,
                                                            const CopyStartRequest& req) override {
    return master_->DynamicReplicaCopyStart(client, req);
  }
  absl::Status DynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) override {
    CopyEndObservation seen;
    seen.t_ns = engine_->NowNs();
    seen.client = client;
    seen.fence = req;
    for (const PendingActionView& p : master_->replication().PendingActions()) {
      if (p.lease.lease_id != req.lease_id) continue;
      seen.lease_pending = true;
      seen.lease_expiration_ns = p.lease.expiration_ns;
      seen.lease_version = p.lease.version;
      seen.name = p.lease.name;
    }
    if (!seen.lease_pending) {
      if (std::optional<Task> task = master_->master().GetTask(req.task_id); task.has_value()) {
        seen.name = task->copy.name;
      }
    }
    if (!seen.name.key.empty()) {
      if (absl::StatusOr<ObjectView> object = master_->master().GetObjectView(seen.name);
          object.ok()) {
        seen.object_exists = true;
        seen.object_version = object->version;
      }
    }
    seen.status = master_->DynamicReplicaCopyEnd(client, req);
    observer_->OnCopyEnd(seen);
    return seen.status;
  }
  absl::Status DynamicReplicaCopyRevoke(ClientId client, const CopyRevokeRequest& req) override {
    return master_->DynamicReplicaCopyRevoke(client, req);
  }

 private:
  Engine* const engine_;
  ReplicatedMaster* const master_;
  RunObserver* const observer_;
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

absl::StatusOr<KnobSet> ResolveKnobs(const Scenario& scenario, const RunOptions& options) {
  KnobSet knobs;
  const ScenarioNetwork& n = scenario.topology.network;
  if (n.control_same_host_latency_ns) {
    knobs.network.control_same_host_latency_ns = *n.control_same_host_latency_ns;
  }
  if (n.control_same_domain_latency_ns) {
    knobs.network.control_same_domain_latency_ns = *n.control_same_domain_latency_ns;
  }
  if (n.control_cross_domain_latency_ns) {
    knobs.network.control_cross_domain_latency_ns = *n.control_cross_domain_latency_ns;
  }
  if (n.control_jitter_percent) knobs.network.control_jitter_percent = *n.control_jitter_percent;
  if (n.transfer_overhead_ns) knobs.network.transfer_overhead_ns = *n.transfer_overhead_ns;
  for (const KnobSetting& s : scenario.knobs) {
    if (absl::Status st = knobs.Set(s.name, s.value); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(s.where, ": ", st.message()));
    }
  }
  for (const KnobOverride& o : options.overrides) {
    if (absl::Status st = knobs.Set(o.name, o.value); !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set ", o.name, "=", o.value, ": ", st.message()));
    }
  }
  if (absl::Status st = knobs.Validate(); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(scenario.source, ": knobs: ", st.message()));
  }
  return knobs;
}

NetworkTopology BuildNetworkTopology(const Scenario& scenario) {
  NetworkTopology topology;
  for (const ScenarioDomain& d : scenario.topology.domains) {
    DomainSpec domain;
    domain.name = d.name;
    for (const ScenarioHost& h : d.hosts) {
      HostSpec host;
      host.name = h.name;
      host.local_copy_bytes_per_sec = h.local_copy_bytes_per_s;
      for (int64_t i = 0; i < h.nic_count; ++i) {
        host.nics.push_back(NicSpec{h.nic_send_bytes_per_s, h.nic_receive_bytes_per_s});
      }
      domain.hosts.push_back(std::move(host));
    }
    topology.domains.push_back(std::move(domain));
  }
  for (const ScenarioTrunk& t : scenario.topology.trunks) {
    topology.trunks.push_back(TrunkSpec{t.domain_a, t.domain_b, t.bandwidth_bytes_per_s,
                                        t.latency_ns, t.oversubscription_percent});
  }
  return topology;
}

// ---------------------------------------------------------------------------
// The simulated world of one run.
// ---------------------------------------------------------------------------
class Simulation;

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

// Sits between the master and dynamic replication: forwards every read and
// removal, and lets the simulation log reads and follow removals.
class ObserverTee final : public ReadObserver, public ReplicaRemovalObserver {
 public:
  ObserverTee(Simulation* sim, ReadObserver* read_next, ReplicaRemovalObserver* removal_next)
      : sim_(sim), read_next_(read_next), removal_next_(removal_next) {}
  // The locked calls go to dynamic replication only, so its heat window is
  // reached through the handle it keeps in the object's metadata.
  void BeforeKeyRead(uint64_t object_word) const override {
    read_next_->BeforeKeyRead(object_word);
  }
  void OnKeyReadLocked(ReadObservation& read, uint64_t& object_word) override {
    read_next_->OnKeyReadLocked(read, object_word);
  }
  void OnKeyRead(const ReadObservation& read) override;
  void OnReplicaRemoved(const ReplicaRemoval& removal) override;

 private:
  Simulation* const sim_;
  ReadObserver* const read_next_;
  ReplicaRemovalObserver* const removal_next_;
};

class Simulation {
 public:
  Simulation(const Scenario& scenario, const RunOptions& options, KnobSet knobs)
      : scenario_(scenario),
        options_(options),
        knobs_(std::move(knobs)),
        seed_(options.seed.value_or(scenario.seed)),
        env_(seed_, knobs_.engine),
        mover_(this) {}
  ~Simulation() {
    // Workers and tiering first (their timers live in the engine), then the
    // master.
    for (HostRt& h : hosts_) {
      h.worker.reset();
      h.numa.reset();
    }
    if (replicated_ != nullptr) {
      replicated_->master().SetReadObserver(&replicated_->replication());
      replicated_->master().SetReplicaRemovalObserver(&replicated_->replication());
    }
  }

  absl::Status Build();
  absl::StatusOr<RunResult> Run();

  // Hooks for ScriptedDataMover and ObserverTee.
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done);
  void OnKeyRead(const ReadObservation& read);
  void OnReplicaRemoved(const ReplicaRemoval& removal);

 private:
  struct HostRt {
    const ScenarioHost* spec = nullptr;
    int index = 0;  // network host index (scenario order)
    std::string name;
    Domain domain;
    TimeNs join_at_ns = 0;
    ClientId worker_id;
    std::vector<MountSegmentRequest> segments;
    std::unique_ptr<StoreWorker> worker;
    bool worker_up = false;
    DurationNs copy_delay_ns = 0;
    std::unique_ptr<NumaHostModel> numa;
    std::unique_ptr<SimMasterClient> master_client;
  };
  struct ClientRt {
    std::string full_name;
    ClientId id;
    int host = 0;
    Domain domain;
  };
  struct SegmentRt {
    int host = 0;
    std::string full_name;
    bool mounted = false;
  };
  // One read (Get or BatchGet op) in flight.
  struct ReadRt {
    TimeNs issued_ns = 0;
    int client = 0;
    std::optional<size_t> request_row;
    int64_t keys_outstanding = 0;
  };
  using ReadHandle = std::shared_ptr<ReadRt>;

  // Setup.
  absl::Status BuildHosts();
  absl::Status BuildMaster();
  void StartWorker(HostRt& host);
  void ScheduleTrunkFaults();
  void ScheduleSamples();

  // Operations.
  void PumpNext();
  absl::Status Execute(SimOp& op);
  void IssuePut(const SimOp& op, std::optional<size_t> request_row);
  void IssueRead(const SimOp& op, std::optional<size_t> request_row);
  void ReadKeys(ReadHandle read, std::vector<ObjectName> names, int64_t attempt);
  void ReadReplica(ReadHandle read, const ObjectName& name, const GetReplicaListResponse& response);
  void FinishKey(const ReadHandle& read, bool ok, uint64_t bytes, Distance distance);
  void FinishRequestOp(std::optional<size_t> row);
  // The put of `name` ended (landed or failed): wakes the reads waiting for it.
  void EndPut(const ObjectName& name);
  std::optional<size_t> RequestRowFor(const SimOp& op);
  absl::Status KillWorker(const HostId& host);
  absl::Status RestartWorker(const HostId& host);
  absl::Status MountOrUnmount(const std::string& segment, bool mount);
  absl::Status ScriptedCopyStart(const SimOp& op);
  absl::Status ScriptedPropose(const SimOp& op);

  // Measurement.
  IntervalSample& IntervalAt(TimeNs t);
  void Sample(size_t interval);
  void CountMetric(const std::string& name, int64_t delta = 1) { counters_[name] += delta; }
  absl::Status CheckInvariants();
  void Note(absl::string_view what) {
    if (options_.observer != nullptr) options_.observer->OnNote(env_.NowNs(), what);
  }
  RunWorld World() {
    RunWorld world;
    world.now_ns = env_.NowNs();
    world.events = env_.engine().events_run();
    world.master = replicated_.get();
    world.numa_hosts = &numa_hosts_;
    return world;
  }
  void Fail(absl::Status status) {
    if (status_.ok()) status_ = std::move(status);
  }
  std::optional<int> HostOfSegment(SegmentId id) const {
    const auto it = segments_.find(id);
    if (it == segments_.end()) return std::nullopt;
    return it->second.host;
  }
  MasterService& master() { return replicated_->master(); }

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
  std::unique_ptr<ReplicatedMaster> replicated_;
  std::unique_ptr<ObserverTee> tee_;
  std::unique_ptr<ObservedCopyCalls> observed_copy_calls_;
  std::vector<std::pair<HostId, const NumaHostModel*>> numa_hosts_;
  ControlFaults control_faults_;
  ControlStats control_stats_;
  int master_host_ = 0;
  bool log_reads_ = false;

  std::vector<HostRt> hosts_;
  absl::flat_hash_map<std::string, int> host_index_;  // lookup only
  std::vector<ClientRt> clients_;
  absl::flat_hash_map<std::string, int> client_index_;  // lookup only
  absl::flat_hash_map<uint64_t, int> client_by_id_;     // lookup only
  std::map<SegmentId, SegmentRt> segments_;
  absl::flat_hash_map<std::string, SegmentId> segment_by_name_;  // lookup only
  // Where each object's bytes start in a segment, to name the object a copy
  // moves (fail_copy by key) and where copied bytes land (NUMA model).
  // Puts in flight by object, with the reads waiting for them (a decode
  // instance reads a block once its prefill's put has landed). Lookup only;
  // waiters run in registration order.
  absl::flat_hash_map<ObjectName, std::vector<absl::AnyInvocable<void() &&>>> puts_in_flight_;

  // Scripted copy faults.
  int64_t fail_any_copies_ = 0;
  std::map<ObjectName, int64_t> fail_copies_by_key_;

  std::unique_ptr<OpStream> ops_;
  SimOp next_op_;
  absl::Status status_;

  // Results being collected.
  RunResult result_;
  std::vector<TimeNs> read_latencies_;
  // (workload, trace request) -> its row in result_.requests.
  std::map<std::pair<int32_t, int64_t>, size_t> trace_requests_;
  int64_t synthetic_requests_ = 0;
  std::map<std::string, int64_t> counters_;
  uint64_t extra_memory_peak_ = 0;
  uint64_t extra_memory_now_ = 0;
  size_t sampled_intervals_ = 0;
  uint64_t audited_at_events_ = 0;  // events run at the last sample-time audit
};

void ScriptedDataMover::StartCopy(const CopyRange& range,
                                  absl::AnyInvocable<void(absl::Status) &&> done) {
  sim_->StartCopy(range, std::move(done));
}

void ObserverTee::OnKeyRead(const ReadObservation& read) {
  sim_->OnKeyRead(read);
  read_next_->OnKeyRead(read);
}

void ObserverTee::OnReplicaRemoved(const ReplicaRemoval& removal) {
  sim_->OnReplicaRemoved(removal);
  removal_next_->OnReplicaRemoved(removal);
}

// ------------------------------------------------------------------- setup

absl::Status Simulation::Build() {
  if (!options_.out_dir.empty()) {
    HS_RETURN_IF_ERROR(EnsureDirectory(options_.out_dir));
    HS_RETURN_IF_ERROR(decisions_file_.Open(JoinPath(options_.out_dir, "decisions.jsonl")));
  }
  log_reads_ = options_.log_reads.value_or(scenario_.outputs.log_reads);
  if (log_reads_ && !options_.out_dir.empty()) {
    HS_RETURN_IF_ERROR(reads_file_.Open(JoinPath(options_.out_dir, "reads.jsonl")));
  }

  HS_ASSIGN_OR_RETURN(network_, Network::Create(&env_.engine(), &env_.network_rng(),
                                                BuildNetworkTopology(scenario_), knobs_.network));
  sim_mover_ = std::make_unique<SimDataMover>(
      &env_.engine(), network_.get(), [this](SegmentId id) -> std::optional<HostId> {
        const auto it = segments_.find(id);
        if (it == segments_.end() || !it->second.mounted) return std::nullopt;
        const HostRt& host = hosts_[static_cast<size_t>(it->second.host)];
        if (!host.worker_up) return std::nullopt;
        return host.name;
      });
  const ScenarioFaults& faults = scenario_.faults;
  if (faults.copy_failure_probability > 0) {
    sim_mover_->SetFailureInjection(ProbabilityPpm(faults.copy_failure_probability), kPpm,
                                    &env_.faults_rng());
  }
  control_faults_.drop_ppm = ProbabilityPpm(faults.control_messages.drop_probability);
  control_faults_.delay_ppm = ProbabilityPpm(faults.control_messages.delay_probability);
  control_faults_.delay_ns = faults.control_messages.delay_ns;
  if (faults.control_messages.to_ns.has_value()) {
    control_faults_.until_ns = *faults.control_messages.to_ns;
  }
  control_faults_.rpc_timeout_ns = MsToNs(knobs_.driver.control_rpc_timeout_ms);

  HS_RETURN_IF_ERROR(BuildMaster());
  HS_RETURN_IF_ERROR(BuildHosts());

  HS_ASSIGN_OR_RETURN(ops_, MakeScenarioOpStream(scenario_, env_.workload_rng()));

  // Identity of the run.
  result_.scenario_name = scenario_.name;
  result_.scenario_path = scenario_.source;
  result_.label = options_.label;
  result_.seed = seed_;
  for (const SeedEntry& s : env_.Seeds()) {
    if (s.name != "root") result_.sub_seeds.emplace_back(s.name, s.seed);
  }
  result_.knobs = knobs_.Dump();
  result_.replay_command = options_.replay_command;
  result_.duration_ns = scenario_.duration_ns;
  result_.time_step_ns = scenario_.time_step_ns;
  for (const ScenarioDomain& d : scenario_.topology.domains) {
    result_.domains.push_back(d.name);
    for (const ScenarioHost& h : d.hosts) {
      result_.hosts.push_back(h.name);
      result_.host_domains.push_back(d.name);
    }
  }
  result_.host_bytes_served.assign(hosts_.size(), 0);
  const int64_t intervals =
      (scenario_.duration_ns + scenario_.time_step_ns - 1) / scenario_.time_step_ns;
  result_.intervals.resize(static_cast<size_t>(intervals));
  for (int64_t i = 0; i < intervals; ++i) {
    IntervalSample& s = result_.intervals[static_cast<size_t>(i)];
    s.t_start_ns = i * scenario_.time_step_ns;
    s.host_bytes_served.assign(hosts_.size(), 0);
  }
  return absl::OkStatus();
}

absl::Status Simulation::BuildMaster() {
  decisions_ = std::make_unique<DecisionRecorder>(&decisions_file_, options_.observer);
  HS_ASSIGN_OR_RETURN(replicated_, ReplicatedMaster::Create(env_.env(), knobs_.master,
                                                            knobs_.replication, decisions_.get()));
  tee_ =
      std::make_unique<ObserverTee>(this, &replicated_->replication(), &replicated_->replication());
  master().SetReadObserver(tee_.get());
  master().SetReplicaRemovalObserver(tee_.get());
  if (options_.observer != nullptr) {
    observed_copy_calls_ = std::make_unique<ObservedCopyCalls>(&env_.engine(), replicated_.get(),
                                                               options_.observer);
  }
  return absl::OkStatus();
}

absl::Status Simulation::BuildHosts() {
  uint64_t next_segment = 1;
  for (const ScenarioDomain& d : scenario_.topology.domains) {
    for (const ScenarioHost& h : d.hosts) {
      HostRt host;
      host.spec = &h;
      host.index = static_cast<int>(hosts_.size());
      host.name = h.name;
      host.domain = d.name;
      host.join_at_ns = d.join_at_ns;
      host.worker_id = ClientId(1 + static_cast<uint64_t>(host.index));
      for (const ScenarioSegment& s : h.segments) {
        MountSegmentRequest req;
        req.segment_id = SegmentId(next_segment++);
        req.name = s.full_name;
        req.host = h.name;
        req.domain = d.name;
        req.capacity_bytes = static_cast<uint64_t>(s.capacity_bytes);
        req.transport_endpoint = s.full_name;
        segments_[req.segment_id] = SegmentRt{host.index, s.full_name, false};
        segment_by_name_[s.full_name] = req.segment_id;
        host.segments.push_back(std::move(req));
      }
      for (const ScenarioClient& c : h.clients) {
        ClientRt client;
        client.full_name = c.full_name;
        client.id = ClientId(kStoreClientIdBase + clients_.size());
        client.host = host.index;
        client.domain = d.name;
        client_index_[c.full_name] = static_cast<int>(clients_.size());
        client_by_id_[client.id.value] = static_cast<int>(clients_.size());
        clients_.push_back(std::move(client));
      }
      host_index_[h.name] = host.index;
      hosts_.push_back(std::move(host));
    }
  }
  if (!knobs_.driver.master_host.empty()) {
    const auto it = host_index_.find(knobs_.driver.master_host);
    if (it == host_index_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(scenario_.source,
                                                     ": knob master_host: unknown host \"",
                                                     knobs_.driver.master_host, "\""));
    }
    master_host_ = it->second;
  }
  for (HostRt& host : hosts_) {
    DynamicCopyCalls* copy_calls = observed_copy_calls_ != nullptr
                                       ? static_cast<DynamicCopyCalls*>(observed_copy_calls_.get())
                                       : replicated_.get();
    host.master_client = std::make_unique<SimMasterClient>(
        &env_.engine(), network_.get(), &master(), copy_calls, host.index, master_host_,
        control_faults_, &env_.faults_rng(), &control_stats_);
    if (knobs_.driver.numa_model && !host.segments.empty()) {
      NumaCosts costs;
      costs.scan_ns_per_head = knobs_.driver.tiering_scan_ns_per_head;
      costs.decay_ns_per_key = knobs_.driver.tiering_decay_ns_per_key;
      HS_ASSIGN_OR_RETURN(host.numa,
                          NumaHostModel::Create(env_.env(), knobs_.tiering, *host.spec, costs));
      numa_hosts_.emplace_back(host.name, host.numa.get());
    }
  }
  return absl::OkStatus();
}

void Simulation::StartWorker(HostRt& host) {
  if (host.segments.empty()) return;
  StoreWorkerOptions options;
  options.client_id = host.worker_id;
  options.host = host.name;
  options.domain = host.domain;
  options.segments = host.segments;
  options.heartbeat_interval_ms = knobs_.driver.worker_heartbeat_interval_ms;
  options.fetch_interval_ms = knobs_.driver.worker_fetch_interval_ms;
  options.fetch_batch_max =
      std::min<int64_t>(options.fetch_batch_max, knobs_.master.fetch_tasks_batch_max);
  options.copies_in_flight_max = knobs_.driver.worker_copies_in_flight_max;
  // The host is up when it joins: register and mount directly, so the
  // scenario's first operations at the join time find its segments. The
  // worker then registers and mounts again through the control plane (both
  // idempotent) and keeps heartbeating.
  RegisterClientRequest registration;
  registration.client_id = host.worker_id;
  registration.host = host.name;
  registration.domain = host.domain;
  if (absl::Status st = master().RegisterClient(registration); !st.ok()) Fail(st);
  for (const MountSegmentRequest& s : host.segments) {
    if (absl::Status st = master().MountSegment(host.worker_id, s); !st.ok()) Fail(st);
  }
  host.worker = std::make_unique<StoreWorker>(env_.env(), host.master_client.get(), &mover_,
                                              std::move(options));
  host.worker_up = true;
  for (const MountSegmentRequest& s : host.segments) segments_[s.segment_id].mounted = true;
  host.worker->Start();
  if (host.numa != nullptr) host.numa->Start();
  Note(absl::StrCat("store worker on ", host.name, " started"));
}

void Simulation::ScheduleTrunkFaults() {
  for (const TrunkFault& f : scenario_.faults.trunk_faults) {
    const std::string a = f.domain_a;
    const std::string b = f.domain_b;
    if (f.kind == TrunkFaultKind::kPartition) {
      env_.engine().ScheduleAt(f.from_ns, [this, a, b] {
        Note(absl::StrCat("trunk ", a, "<->", b, " partitioned"));
        CountMetric("sim_trunk_partitions_total");
        if (absl::Status st = network_->PartitionTrunk(a, b); !st.ok()) Fail(st);
      });
      if (f.to_ns < scenario_.duration_ns) {
        env_.engine().ScheduleAt(f.to_ns, [this, a, b] {
          Note(absl::StrCat("trunk ", a, "<->", b, " healed"));
          if (absl::Status st = network_->HealTrunk(a, b); !st.ok()) Fail(st);
        });
      }
    } else {
      const int64_t percent =
          std::clamp<int64_t>(static_cast<int64_t>(std::llround(f.bandwidth_factor * 100)), 1, 100);
      const DurationNs extra = f.extra_latency_ns;
      env_.engine().ScheduleAt(f.from_ns, [this, a, b, percent, extra] {
        Note(absl::StrCat("trunk ", a, "<->", b, " degraded to ", percent, "%"));
        CountMetric("sim_trunk_degradations_total");
        if (absl::Status st = network_->DegradeTrunk(a, b, percent, extra); !st.ok()) Fail(st);
      });
      if (f.to_ns < scenario_.duration_ns) {
        env_.engine().ScheduleAt(f.to_ns, [this, a, b] {
          Note(absl::StrCat("trunk ", a, "<->", b, " restored"));
          if (absl::Status st = network_->DegradeTrunk(a, b, 100, 0); !st.ok()) Fail(st);
        });
      }
    }
  }
}

void Simulation::ScheduleSamples() {
  // Interval i is sampled at its end; the last one after the run loop.
  for (size_t i = 0; i + 1 < result_.intervals.size(); ++i) {
    const TimeNs end = result_.intervals[i].t_start_ns + scenario_.time_step_ns;
    env_.engine().ScheduleAt(end, [this, i] { Sample(i); });
  }
}

// --------------------------------------------------------------- operations

void Simulation::PumpNext() {
  absl::StatusOr<bool> more = ops_->Next(&next_op_);
  if (!more.ok()) {
    Fail(more.status());
    return;
  }
  if (!*more) return;
  env_.engine().ScheduleAt(std::max(next_op_.t_ns, env_.NowNs()), [this] {
    SimOp op = std::move(next_op_);
    if (options_.observer != nullptr) options_.observer->OnOp(env_.NowNs(), op);
    if (absl::Status st = Execute(op); !st.ok()) {
      Fail(st);
      return;
    }
    PumpNext();
  });
}

std::optional<size_t> Simulation::RequestRowFor(const SimOp& op) {
  if (!scenario_.outputs.per_request_csv) return std::nullopt;
  if (op.request >= 0) {
    auto [it, inserted] =
        trace_requests_.try_emplace({op.workload, op.request}, result_.requests.size());
    if (inserted) {
      RequestSample sample;
      sample.id = op.request;
      sample.arrival_ns = op.t_ns - op.compute_ns;
      result_.requests.push_back(std::move(sample));
    }
    RequestSample& sample = result_.requests[it->second];
    sample.arrival_ns = std::min(sample.arrival_ns, op.t_ns - op.compute_ns);
    if (op.phase == SimOpPhase::kPrefillRead || op.phase == SimOpPhase::kPrefillPut) {
      sample.prefill_instance = op.instance;
    }
    if (op.phase == SimOpPhase::kDecodeRead) sample.decode_instance = op.instance;
    if (op.phase == SimOpPhase::kPrefillRead) {
      sample.blocks_hit += static_cast<int64_t>(op.keys.size());
    }
    if (op.phase == SimOpPhase::kPrefillPut) sample.blocks_missed += 1;
    return it->second;
  }
  if (op.kind == SimOpKind::kGet || op.kind == SimOpKind::kBatchGet) {
    if (op.reader < 0) return std::nullopt;  // scripted reads are not requests
    RequestSample sample;
    sample.id = synthetic_requests_++;
    sample.arrival_ns = op.t_ns;
    sample.decode_instance = op.client;
    result_.requests.push_back(std::move(sample));
    return result_.requests.size() - 1;
  }
  return std::nullopt;
}

void Simulation::FinishRequestOp(std::optional<size_t> row) {
  if (!row.has_value()) return;
  RequestSample& sample = result_.requests[*row];
  sample.done_ns = std::max(sample.done_ns, env_.NowNs());
}

absl::Status Simulation::Execute(SimOp& op) {
  switch (op.kind) {
    case SimOpKind::kPut:
      IssuePut(op, RequestRowFor(op));
      return absl::OkStatus();
    case SimOpKind::kGet:
    case SimOpKind::kBatchGet:
      IssueRead(op, RequestRowFor(op));
      return absl::OkStatus();
    case SimOpKind::kRemove: {
      const ClientRt& client = clients_[static_cast<size_t>(client_index_.at(op.client))];
      RemoveRequest req;
      req.name = ObjectName{op.tenant, op.keys.front()};
      hosts_[static_cast<size_t>(client.host)].master_client->Remove(req, [this](absl::Status st) {
        CountMetric(st.ok() ? "sim_removes_total" : "sim_removes_failed_total");
      });
      return absl::OkStatus();
    }
    case SimOpKind::kMount:
      return MountOrUnmount(op.segment, true);
    case SimOpKind::kUnmount:
      return MountOrUnmount(op.segment, false);
    case SimOpKind::kKillWorker:
      return KillWorker(op.host);
    case SimOpKind::kRestartWorker:
      return RestartWorker(op.host);
    case SimOpKind::kFailCopy:
      if (op.keys.empty()) {
        fail_any_copies_ += op.count;
      } else {
        fail_copies_by_key_[ObjectName{op.tenant, op.keys.front()}] += op.count;
      }
      return absl::OkStatus();
    case SimOpKind::kDelayCopies:
      hosts_[static_cast<size_t>(host_index_.at(op.host))].copy_delay_ns = op.delay_ns;
      return absl::OkStatus();
    case SimOpKind::kCopyStart:
      return ScriptedCopyStart(op);
    case SimOpKind::kPropose:
      return ScriptedPropose(op);
    case SimOpKind::kWarmup: {
      // An operator's warmup request for a domain (internal control plane,
      // like propose). Refusals (warmup disabled, mode off) are counted.
      absl::StatusOr<WarmupRequestResult> r = replicated_->RequestWarmup(op.requester_domain);
      CountMetric(r.ok() ? "sim_warmups_requested_total" : "sim_warmups_refused_total");
      if (options_.observer != nullptr) {
        options_.observer->OnNote(env_.NowNs(),
                                  r.ok() ? absl::StrCat("warmup of ", op.requester_domain, ": ",
                                                        r->candidates, " candidates")
                                         : absl::StrCat("warmup of ", op.requester_domain,
                                                        " refused: ", r.status().message()));
      }
      return absl::OkStatus();
    }
    case SimOpKind::kDrain:
    case SimOpKind::kUndrain: {
      // An operator command to the master (not a worker RPC): replicas on a
      // drained segment stay readable, nothing new is placed there and it
      // sources no dynamic copy.
      const absl::Status st = replicated_->master().SetSegmentAllocatable(
          ClientId(), segment_by_name_.at(op.segment), op.kind == SimOpKind::kUndrain);
      CountMetric(st.ok() ? "sim_drains_total" : "sim_drains_failed_total");
      return absl::OkStatus();
    }
    case SimOpKind::kSetKnob:
      return absl::FailedPreconditionError(absl::StrCat(
          op.where, ": set_knob ", op.knob_name,
          ": the core's knobs are fixed when the master starts; this knob cannot change "
          "during a run"));
  }
  return absl::OkStatus();
}

void Simulation::IssuePut(const SimOp& op, std::optional<size_t> request_row) {
  const ClientRt& client = clients_[static_cast<size_t>(client_index_.at(op.client))];
  HostRt& host = hosts_[static_cast<size_t>(client.host)];
  PutStartRequest req;
  req.name = ObjectName{op.tenant, op.keys.front()};
  req.size_bytes = static_cast<uint64_t>(op.size_bytes);
  req.replica_num = 1;
  // Mooncake's client prefers the segment of its own host.
  for (const MountSegmentRequest& s : host.segments) req.preferred_segments.push_back(s.segment_id);
  const ClientId writer = client.id;
  const int writer_host = client.host;
  const ObjectName name = req.name;
  const uint64_t size = req.size_bytes;
  puts_in_flight_.try_emplace(name);
  host.master_client->PutStart(
      writer, req,
      [this, writer, writer_host, name, size,
       request_row](absl::StatusOr<PutStartResponse> started) {
        if (!started.ok() || started->replicas.empty()) {
          CountMetric("sim_puts_failed_total");
          EndPut(name);
          FinishRequestOp(request_row);
          return;
        }
        const ReplicaDescriptor replica = started->replicas.front();
        const Version version = started->version;
        const std::optional<int> target = HostOfSegment(replica.segment_id);
        HS_CHECK(target.has_value());
        FlowSpec flow;
        flow.src_host = writer_host;
        flow.dst_host = *target;
        flow.bytes = static_cast<int64_t>(size);
        auto finish = [this, writer, writer_host, name, size, version, target,
                       request_row](absl::Status moved) {
          SimMasterClient* mc = hosts_[static_cast<size_t>(writer_host)].master_client.get();
          if (!moved.ok()) {
            CountMetric("sim_puts_failed_total");
            mc->PutRevoke(writer, PutRevokeRequest{name, version}, [](absl::Status) {});
            EndPut(name);
            FinishRequestOp(request_row);
            return;
          }
          mc->PutEnd(writer, PutEndRequest{name, version},
                     [this, name, size, target, request_row](absl::Status ended) {
                       if (ended.ok()) {
                         CountMetric("sim_puts_total");
                         HostRt& h = hosts_[static_cast<size_t>(*target)];
                         if (h.numa != nullptr) h.numa->Store(name, size);
                       } else {
                         CountMetric("sim_puts_failed_total");
                       }
                       EndPut(name);
                       FinishRequestOp(request_row);
                     });
        };
        absl::StatusOr<FlowId> id = network_->StartFlow(flow, std::move(finish));
        if (!id.ok()) {
          CountMetric("sim_puts_failed_total");
          hosts_[static_cast<size_t>(writer_host)].master_client->PutRevoke(
              writer, PutRevokeRequest{name, version}, [](absl::Status) {});
          EndPut(name);
          FinishRequestOp(request_row);
        }
      });
}

void Simulation::IssueRead(const SimOp& op, std::optional<size_t> request_row) {
  auto read = std::make_shared<ReadRt>();
  read->issued_ns = env_.NowNs();
  read->client = client_index_.at(op.client);
  read->request_row = request_row;
  std::vector<ObjectName> names;
  names.reserve(op.keys.size());
  for (const std::string& k : op.keys) names.push_back(ObjectName{op.tenant, k});
  read->keys_outstanding = static_cast<int64_t>(names.size());
  // Keys whose put is still in flight are read once it has landed.
  int64_t in_flight = 0;
  for (const ObjectName& name : names) {
    if (puts_in_flight_.contains(name)) ++in_flight;
  }
  if (in_flight == 0) {
    ReadKeys(std::move(read), std::move(names), 0);
    return;
  }
  CountMetric("sim_reads_waited_for_put_total");
  auto waiting = std::make_shared<int64_t>(in_flight);
  auto shared_names = std::make_shared<std::vector<ObjectName>>(std::move(names));
  for (const ObjectName& name : *shared_names) {
    const auto it = puts_in_flight_.find(name);
    if (it == puts_in_flight_.end()) continue;
    it->second.push_back([this, read, waiting, shared_names] {
      if (--*waiting == 0) ReadKeys(read, std::move(*shared_names), 0);
    });
  }
}

void Simulation::EndPut(const ObjectName& name) {
  const auto it = puts_in_flight_.find(name);
  if (it == puts_in_flight_.end()) return;
  std::vector<absl::AnyInvocable<void()&&>> waiters = std::move(it->second);
  puts_in_flight_.erase(it);
  for (auto& waiter : waiters) std::move(waiter)();
}

void Simulation::ReadKeys(ReadHandle read, std::vector<ObjectName> names, int64_t attempt) {
  const ClientRt& client = clients_[static_cast<size_t>(read->client)];
  SimMasterClient* mc = hosts_[static_cast<size_t>(client.host)].master_client.get();
  // Keys still being written are read again after read_retry_ms.
  auto retry_or_fail = [this, read, attempt](std::vector<ObjectName> again) {
    if (again.empty()) return;
    if (attempt >= knobs_.driver.read_retries_max) {
      for (size_t i = 0; i < again.size(); ++i) {
        CountMetric("sim_reads_failed_total");
        FinishKey(read, false, 0, Distance::kSameHost);
      }
      return;
    }
    CountMetric("sim_read_retries_total", static_cast<int64_t>(again.size()));
    env_.engine().ScheduleAfter(MsToNs(knobs_.driver.read_retry_ms),
                                [this, read, again = std::move(again), attempt]() mutable {
                                  ReadKeys(read, std::move(again), attempt + 1);
                                });
  };
  auto on_result = [this, read](const ObjectName& name,
                                const absl::StatusOr<GetReplicaListResponse>& r,
                                std::vector<ObjectName>* again) {
    if (r.ok()) {
      ReadReplica(read, name, *r);
    } else if (r.status().code() == absl::StatusCode::kUnavailable) {
      again->push_back(name);
    } else {
      CountMetric(r.status().code() == absl::StatusCode::kNotFound ? "sim_read_misses_total"
                                                                   : "sim_reads_failed_total");
      FinishKey(read, false, 0, Distance::kSameHost);
    }
  };
  if (names.size() == 1) {
    GetReplicaListRequest req;
    req.name = names.front();
    req.requester = client.id;
    req.requester_domain = client.domain;
    mc->GetReplicaList(req, [name = names.front(), on_result,
                             retry_or_fail](absl::StatusOr<GetReplicaListResponse> r) mutable {
      std::vector<ObjectName> again;
      on_result(name, r, &again);
      retry_or_fail(std::move(again));
    });
    return;
  }
  BatchGetReplicaListRequest req;
  req.names = names;
  req.requester = client.id;
  req.requester_domain = client.domain;
  mc->BatchGetReplicaList(req, [this, read, names = std::move(names), on_result, retry_or_fail](
                                   absl::StatusOr<BatchGetReplicaListResponse> r) mutable {
    if (!r.ok()) {
      for (size_t i = 0; i < names.size(); ++i) {
        CountMetric("sim_reads_failed_total");
        FinishKey(read, false, 0, Distance::kSameHost);
      }
      return;
    }
    std::vector<ObjectName> again;
    for (size_t i = 0; i < names.size(); ++i) on_result(names[i], r->results[i], &again);
    retry_or_fail(std::move(again));
  });
}

void Simulation::ReadReplica(ReadHandle read, const ObjectName& name,
                             const GetReplicaListResponse& response) {
  const ClientRt& client = clients_[static_cast<size_t>(read->client)];
  const HostRt& reader_host = hosts_[static_cast<size_t>(client.host)];
  std::vector<ReadableReplica> readable;
  readable.reserve(response.replicas.size());
  for (const ReplicaDescriptor& r : response.replicas) {
    readable.push_back(ReadableReplica{r.segment_id, r.location->host, r.location->domain,
                                       r.kind == ReplicaKind::kMemory});
  }
  const std::optional<size_t> choice =
      SelectReplicaForRead(knobs_.replication.replica_selection_policy,
                           ReaderIdentity{client.id, reader_host.name, client.domain}, name,
                           readable, static_cast<uint64_t>(knobs_.driver.replica_selection_seed));
  const std::optional<int> source =
      choice.has_value() ? HostOfSegment(response.replicas[*choice].segment_id) : std::nullopt;
  if (!source.has_value() || !hosts_[static_cast<size_t>(*source)].worker_up) {
    // The chosen replica's worker is down: its memory is gone.
    CountMetric("sim_reads_failed_total");
    FinishKey(read, false, 0, Distance::kSameHost);
    return;
  }
  HostRt& serving = hosts_[static_cast<size_t>(*source)];
  const uint64_t size = response.size_bytes;
  DurationNs memory_ns = 0;
  if (serving.numa != nullptr) {
    const NumaReadCost cost = serving.numa->Read(name, size);
    memory_ns = cost.memory_ns;
    IntervalSample& s = IntervalAt(env_.NowNs());
    s.numa_reads += cost.head_reads;
    s.numa_local_reads += cost.local_reads;
    result_.numa_reads += cost.head_reads;
    result_.numa_local_reads += cost.local_reads;
  }
  const Distance distance = network_->DistanceBetween(*source, client.host);
  const int src = *source;
  FlowSpec flow;
  flow.src_host = src;
  flow.dst_host = client.host;
  flow.bytes = static_cast<int64_t>(size);
  auto landed = [this, read, size, distance, src, memory_ns](absl::Status moved) {
    if (!moved.ok()) {
      CountMetric("sim_reads_failed_total");
      FinishKey(read, false, 0, distance);
      return;
    }
    auto complete = [this, read, size, distance, src] {
      IntervalSample& s = IntervalAt(env_.NowNs());
      s.host_bytes_served[static_cast<size_t>(src)] += size;
      result_.host_bytes_served[static_cast<size_t>(src)] += size;
      FinishKey(read, true, size, distance);
    };
    if (memory_ns > 0) {
      env_.engine().ScheduleAfter(memory_ns, std::move(complete));
    } else {
      complete();
    }
  };
  absl::StatusOr<FlowId> id = network_->StartFlow(flow, std::move(landed));
  if (!id.ok()) {
    CountMetric("sim_reads_failed_total");
    FinishKey(read, false, 0, distance);
  }
}

void Simulation::FinishKey(const ReadHandle& read, bool ok, uint64_t bytes, Distance distance) {
  const TimeNs now = env_.NowNs();
  if (ok) {
    const TimeNs latency = now - read->issued_ns;
    read_latencies_.push_back(latency);
    IntervalSample& s = IntervalAt(now);
    ++s.reads;
    ++result_.reads;
    uint64_t* total = nullptr;
    uint64_t* interval = nullptr;
    switch (distance) {
      case Distance::kSameHost:
        total = &result_.bytes_read.same_host;
        interval = &s.bytes.same_host;
        break;
      case Distance::kSameDomain:
        total = &result_.bytes_read.same_domain;
        interval = &s.bytes.same_domain;
        break;
      case Distance::kCrossDomain:
        total = &result_.bytes_read.cross_domain;
        interval = &s.bytes.cross_domain;
        break;
    }
    *total += bytes;
    *interval += bytes;
    if (read->request_row.has_value()) {
      RequestSample& r = result_.requests[*read->request_row];
      r.bytes_read += bytes;
      if (distance == Distance::kCrossDomain) r.cross_domain_bytes += bytes;
    }
  }
  if (--read->keys_outstanding == 0) FinishRequestOp(read->request_row);
}

absl::Status Simulation::KillWorker(const HostId& name) {
  HostRt& host = hosts_[static_cast<size_t>(host_index_.at(name))];
  if (!host.worker_up) return absl::OkStatus();
  CountMetric("sim_worker_crashes_total");
  host.worker.reset();
  host.worker_up = false;
  for (const MountSegmentRequest& s : host.segments) sim_mover_->FailCopiesOfSegment(s.segment_id);
  network_->FailFlowsOfHost(
      host.index, absl::UnavailableError(absl::StrCat("store worker on ", name, " crashed")));
  return absl::OkStatus();
}

absl::Status Simulation::RestartWorker(const HostId& name) {
  HostRt& host = hosts_[static_cast<size_t>(host_index_.at(name))];
  if (host.worker_up) return absl::OkStatus();
  CountMetric("sim_worker_restarts_total");
  StartWorker(host);
  return absl::OkStatus();
}

absl::Status Simulation::MountOrUnmount(const std::string& segment, bool mount) {
  const SegmentId id = segment_by_name_.at(segment);
  SegmentRt& seg = segments_[id];
  HostRt& host = hosts_[static_cast<size_t>(seg.host)];
  if (mount) {
    const MountSegmentRequest* req = nullptr;
    for (const MountSegmentRequest& s : host.segments) {
      if (s.segment_id == id) req = &s;
    }
    HS_CHECK(req != nullptr);
    seg.mounted = true;
    host.master_client->MountSegment(host.worker_id, *req, [this](absl::Status st) {
      CountMetric(st.ok() ? "sim_mounts_total" : "sim_mounts_failed_total");
    });
  } else {
    seg.mounted = false;
    sim_mover_->FailCopiesOfSegment(id);
    host.master_client->UnmountSegment(host.worker_id, id, [this](absl::Status st) {
      CountMetric(st.ok() ? "sim_unmounts_total" : "sim_unmounts_failed_total");
    });
  }
  return absl::OkStatus();
}

absl::Status Simulation::ScriptedCopyStart(const SimOp& op) {
  HostRt& host = hosts_[static_cast<size_t>(host_index_.at(op.host))];
  const ObjectName name{op.tenant, op.keys.front()};
  const std::vector<PendingActionView> pending = replicated_->replication().PendingActions();
  const PendingActionView* found = nullptr;
  for (const PendingActionView& p : pending) {
    if (p.lease.name == name) {
      found = &p;
      break;
    }
  }
  if (found == nullptr) {
    CountMetric("sim_scripted_copy_starts_without_lease_total");
    return absl::OkStatus();
  }
  CopyStartRequest fence;
  fence.task_id = found->lease.task_id;
  fence.version = found->lease.version;
  fence.lease_id = found->lease.lease_id;
  host.master_client->DynamicReplicaCopyStart(
      host.worker_id, fence, [this](absl::StatusOr<CopyStartResponse> r) {
        CountMetric(r.ok() ? "sim_scripted_copy_starts_accepted_total"
                           : "sim_scripted_copy_starts_rejected_total");
      });
  return absl::OkStatus();
}

// A burst of proposals through the master's internal control plane (a direct
// call, like drain: proposals are not a worker RPC). Every call carries the
// same content; the version and size the proposer "saw" default to the
// object's current ones, read without touching its heat or lease.
absl::Status Simulation::ScriptedPropose(const SimOp& op) {
  HS_CHECK(op.proposal != nullptr);
  const ScriptedProposal& spec = *op.proposal;
  ReplicaActionProposal proposal;
  proposal.name = ObjectName{op.tenant, op.keys.front()};
  proposal.requester_domain = spec.requester_domain;
  proposal.target_domain = spec.target_domain;
  proposal.observed_version = static_cast<Version>(spec.observed_version);
  proposal.expected_size_bytes = static_cast<uint64_t>(spec.expected_size_bytes);
  if (proposal.observed_version == 0 || proposal.expected_size_bytes == 0) {
    absl::StatusOr<ObjectView> view = replicated_->master().GetObjectView(proposal.name);
    if (view.ok()) {
      if (proposal.observed_version == 0) proposal.observed_version = view->version;
      if (proposal.expected_size_bytes == 0) proposal.expected_size_bytes = view->size_bytes;
    }
  }
  const TimeNs now = env_.NowNs();
  proposal.expiration_ns = now + spec.expires_in_ns;
  for (int64_t i = 0; i < spec.count; ++i) {
    proposal.proposal_id = ProposalId(
        static_cast<uint64_t>(spec.same_id ? spec.first_proposal_id : spec.first_proposal_id + i));
    absl::StatusOr<ReplicaActionLease> result = replicated_->SubmitReplicaActionProposal(proposal);
    CountMetric(result.ok() ? "sim_proposals_accepted_total" : "sim_proposals_rejected_total");
    if (options_.observer != nullptr) {
      ProposalObservation seen;
      seen.t_ns = now;
      seen.burst_index = i;
      seen.burst_size = spec.count;
      seen.proposal = proposal;
      seen.result = std::move(result);
      options_.observer->OnProposal(seen);
    }
  }
  return absl::OkStatus();
}

// ------------------------------------------------------- copies and observers

void Simulation::StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) {
  bool doomed = false;
  if (fail_any_copies_ > 0) {
    --fail_any_copies_;
    doomed = true;
  } else if (auto it = fail_copies_by_key_.find(range.object); it != fail_copies_by_key_.end()) {
    doomed = true;
    if (--it->second == 0) fail_copies_by_key_.erase(it);
  }
  const std::optional<int> src = HostOfSegment(range.source_segment);
  const std::optional<int> dst = HostOfSegment(range.target_segment);
  const DurationNs delay = src.has_value() ? hosts_[static_cast<size_t>(*src)].copy_delay_ns : 0;
  sim_mover_->StartCopy(range, [this, range, doomed, src, dst, delay,
                                done = std::move(done)](absl::Status status) mutable {
    if (status.ok() && doomed) {
      status = absl::UnavailableError("copy failed by the scenario (fail_copy)");
    }
    IntervalSample& s = IntervalAt(env_.NowNs());
    if (status.ok()) {
      ++result_.copies_completed;
      result_.copy_bytes += range.size_bytes;
      ++s.copies_completed;
      s.copy_bytes += range.size_bytes;
      if (src.has_value() && dst.has_value() &&
          network_->DistanceBetween(*src, *dst) == Distance::kCrossDomain) {
        result_.copy_bytes_cross_domain += range.size_bytes;
      }
      if (dst.has_value()) {
        HostRt& h = hosts_[static_cast<size_t>(*dst)];
        if (h.numa != nullptr) h.numa->Store(range.object, range.size_bytes);
      }
    } else {
      ++result_.copies_failed;
    }
    if (delay > 0) {
      env_.engine().ScheduleAfter(
          delay, [done = std::move(done), status]() mutable { std::move(done)(status); });
    } else {
      std::move(done)(status);
    }
  });
}

void Simulation::OnKeyRead(const ReadObservation& read) {
  if (!reads_file_.open()) return;
  std::string line = absl::StrCat("{\"t_ns\":", read.t_ns, ",\"tenant\":");
  AppendJsonString(&line, read.tenant);
  line += ",\"key\":";
  AppendJsonString(&line, read.key);
  line += ",\"requester_domain\":";
  AppendJsonString(&line, read.requester_domain);
  line += ",\"client\":";
  const auto it = client_by_id_.find(read.requester.value);
  if (it != client_by_id_.end()) {
    AppendJsonString(&line, clients_[static_cast<size_t>(it->second)].full_name);
  } else {
    line += "null";
  }
  line += "}";
  reads_file_.Append(line);
}

void Simulation::OnReplicaRemoved(const ReplicaRemoval& removal) {
  const SegmentId segment = removal.replica.segment_id;
  if (removal.replica.status != ReplicaStatus::kComplete) return;
  const std::optional<int> host = HostOfSegment(segment);
  if (host.has_value()) {
    HostRt& h = hosts_[static_cast<size_t>(*host)];
    if (h.numa != nullptr) h.numa->Remove(removal.name, removal.replica.size_bytes);
  }
}

// ------------------------------------------------------------- measurement

IntervalSample& Simulation::IntervalAt(TimeNs t) {
  size_t i = static_cast<size_t>(t / scenario_.time_step_ns);
  if (i >= result_.intervals.size()) i = result_.intervals.size() - 1;
  return result_.intervals[i];
}

void Simulation::Sample(size_t interval) {
  IntervalSample& s = result_.intervals[interval];
  int64_t replicas = 0;
  uint64_t reserved = 0;
  for (const SegmentView& v : master().ListSegments()) {
    replicas += v.replica_count;
    reserved += v.reserved_bytes;
  }
  uint64_t dynamic_bytes = 0;
  int64_t dynamic = 0;
  for (const DynamicReplicaView& d : replicated_->replication().DynamicReplicas()) {
    ++dynamic;
    dynamic_bytes += d.size_bytes;
  }
  s.replica_count = replicas;
  s.dynamic_replica_count = dynamic;
  extra_memory_now_ = dynamic_bytes + reserved;
  s.extra_memory_bytes = extra_memory_now_;
  extra_memory_peak_ = std::max(extra_memory_peak_, extra_memory_now_);
  sampled_intervals_ = interval + 1;
  // The core's audit (CheckInvariants) visits every object and heat-window
  // entry. It runs at a sample once at least that many events ran since the
  // last audit, so auditing costs about one entry visit per event however
  // large the state grows (a small run is audited at every sample), and it
  // always runs at the last sample. invariant_check_events adds audits every
  // N events.
  const uint64_t events = env_.engine().events_run();
  const uint64_t audit_entries =
      static_cast<uint64_t>(master().Stats().objects) +
      static_cast<uint64_t>(replicated_->replication().heat_window().Memory().tracked_keys);
  if (interval + 1 == result_.intervals.size() || events - audited_at_events_ >= audit_entries) {
    audited_at_events_ = events;
    ++result_.audits;
    if (absl::Status st = CheckInvariants(); !st.ok()) Fail(st);
  }
}

absl::Status Simulation::CheckInvariants() { return replicated_->CheckInvariants(); }

absl::StatusOr<RunResult> Simulation::Run() {
  for (HostRt& host : hosts_) {
    if (host.join_at_ns == 0) {
      StartWorker(host);
    } else if (host.join_at_ns < scenario_.duration_ns) {
      const int index = host.index;
      env_.engine().ScheduleAt(host.join_at_ns,
                               [this, index] { StartWorker(hosts_[static_cast<size_t>(index)]); });
    }
  }
  ScheduleTrunkFaults();
  ScheduleSamples();
  PumpNext();

  Engine& engine = env_.engine();
  const int64_t check_every = knobs_.driver.invariant_check_events;
  engine.SetAfterEventHook([this, &engine, check_every]() -> absl::Status {
    const uint64_t events = engine.events_run();
    if (options_.progress && (events & kProgressEventMask) == 0) {
      options_.progress(engine.NowNs(), scenario_.duration_ns, events);
    }
    if (check_every > 0 && events % static_cast<uint64_t>(check_every) == 0) {
      HS_RETURN_IF_ERROR(CheckInvariants());
    }
    if (options_.observer != nullptr) return options_.observer->AfterEvent(World());
    return absl::OkStatus();
  });
  engine.SetStopPredicate([this] { return !status_.ok(); });
  absl::StatusOr<StopReason> stopped = engine.RunUntil(scenario_.duration_ns);
  engine.SetAfterEventHook(nullptr);
  HS_RETURN_IF_ERROR(status_);
  HS_RETURN_IF_ERROR(stopped.status());
  if (!result_.intervals.empty()) Sample(result_.intervals.size() - 1);
  HS_RETURN_IF_ERROR(status_);
  if (options_.observer != nullptr) HS_RETURN_IF_ERROR(options_.observer->AtEnd(World()));
  if (options_.progress)
    options_.progress(engine.NowNs(), scenario_.duration_ns, engine.events_run());

  HS_RETURN_IF_ERROR(decisions_file_.Close());
  HS_RETURN_IF_ERROR(reads_file_.Close());

  result_.read_latencies_ns = std::move(read_latencies_);
  result_.extra_memory_peak_bytes = extra_memory_peak_;
  result_.extra_memory_final_bytes = extra_memory_now_;
  result_.decisions_by_outcome = decisions_->counts();
  for (const MetricFamily& family : replicated_->metrics().Snapshot()) {
    if (family.type == MetricType::kHistogram) continue;
    for (const MetricSample& sample : family.samples) {
      std::string key = family.name;
      if (!sample.labels.empty()) {
        key += "{";
        for (size_t i = 0; i < sample.labels.size(); ++i) {
          if (i > 0) key += ",";
          absl::StrAppend(&key, sample.labels[i].first, "=", sample.labels[i].second);
        }
        key += "}";
      }
      result_.metrics[key] = sample.value;
    }
  }
  for (const auto& [name, value] : counters_) result_.metrics[name] = value;
  result_.metrics["sim_control_messages_total"] = static_cast<int64_t>(control_stats_.messages);
  result_.metrics["sim_control_messages_dropped_total"] =
      static_cast<int64_t>(control_stats_.dropped);
  result_.metrics["sim_control_messages_delayed_total"] =
      static_cast<int64_t>(control_stats_.delayed);
  result_.metrics["sim_control_messages_unreachable_total"] =
      static_cast<int64_t>(control_stats_.unreachable);
  result_.metrics["sim_control_calls_timed_out_total"] =
      static_cast<int64_t>(control_stats_.calls_timed_out);
  int64_t tiering_exchanges = 0;
  int64_t tiering_decays = 0;
  int64_t tiering_store_failures = 0;
  for (const HostRt& h : hosts_) {
    if (h.numa == nullptr) continue;
    const TieringStats t = h.numa->stats();
    tiering_exchanges += t.exchanges;
    tiering_decays += t.decay_passes;
    tiering_store_failures += h.numa->stores_failed();
  }
  result_.metrics["sim_tiering_exchanges_total"] = tiering_exchanges;
  result_.metrics["sim_tiering_decay_passes_total"] = tiering_decays;
  result_.metrics["sim_tiering_stores_failed_total"] = tiering_store_failures;
  result_.metrics["sim_network_rate_updates_total"] =
      static_cast<int64_t>(network_->rate_updates());
  result_.metrics["sim_network_flows_recomputed_total"] =
      static_cast<int64_t>(network_->flows_recomputed_total());
  const NetworkCounters net = network_->Counters();
  result_.metrics["sim_network_flows_started_total"] = static_cast<int64_t>(net.flows_started);
  result_.events_simulated = static_cast<int64_t>(engine.events_run());
  return std::move(result_);
}

}  // namespace

absl::StatusOr<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  HS_ASSIGN_OR_RETURN(KnobSet knobs, ResolveKnobs(scenario, options));
  auto sim = std::make_unique<Simulation>(scenario, options, std::move(knobs));
  HS_RETURN_IF_ERROR(sim->Build());
  HS_ASSIGN_OR_RETURN(RunResult result, sim->Run());
  sim.reset();
  // Wall time goes to timing.json and stdout only (never a deterministic file).
  result.wall_time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - wall_start)
                            .count();
  if (options.keep_scenario_echo) {
    std::ifstream in(scenario.source, std::ios::binary);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      std::string canonical;
      if (CanonicalJson(text.str(), &canonical).ok()) result.scenario_json = std::move(canonical);
    }
  }
  return result;
}

}  // namespace heatsink::sim
