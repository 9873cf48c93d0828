// Simulation, setup: the master, the hosts with their store workers, NUMA
// models and master clients, scripted faults and the sampling schedule.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "sim/internal/simulation.h"
#include "sim/report_format.h"

namespace heatsink::sim::runner_internal {
namespace {

constexpr uint64_t kPpm = 1'000'000;
// restart_grace_ms of a master restarted after a master_crash when the
// scenario leaves it 0 (docs/master-crash.md).
constexpr int64_t kMasterCrashRestartGraceDefaultMs = 2'000;

uint64_t ProbabilityPpm(double p) {
  return static_cast<uint64_t>(std::llround(std::clamp(p, 0.0, 1.0) * 1e6));
}

}  // namespace

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
      &env_.engine(), network_.get(),
      [this](SegmentId id) -> std::optional<HostId> { return cluster_.ServingHost(id); });
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

  // The identity of the run and its sampling intervals.
  measurements_.StartResult(seed_, env_.Seeds(), knobs_.Dump());
  return absl::OkStatus();
}

absl::Status Simulation::BuildMaster() {
  decisions_ = std::make_unique<DecisionRecorder>(&decisions_file_, options_.observer);
  master_crashes_ = !scenario_.faults.master_crashes.empty();
  mode_ = knobs_.replication.dynamic_replication_mode;
  return StartMaster(/*restarted=*/false);
}

absl::Status Simulation::StartMaster(bool restarted) {
  MasterKnobs master_knobs = knobs_.master;
  Env* env = env_.env();
  if (master_crashes_) {
    // A master of its own executor, so that a crash can silence its timers.
    master_executor_ = std::make_unique<IncarnationExecutor>(env_.env()->executor);
    master_env_ = *env_.env();
    master_env_.executor = master_executor_.get();
    env = &master_env_;
    if (restarted) {
      if (master_knobs.restart_grace_ms == 0) {
        master_knobs.restart_grace_ms = kMasterCrashRestartGraceDefaultMs;
      }
      if (master_knobs.restart_expected_stores == 0) {
        // The stores that are up: their reports end the recovery early.
        for (const HostRt& h : cluster_.hosts()) {
          if (h.worker_up && !h.segments.empty()) ++master_knobs.restart_expected_stores;
        }
      }
    } else {
      // The cluster's first master starts empty and knows it: no recovery.
      master_knobs.restart_grace_ms = 0;
    }
  }
  HS_ASSIGN_OR_RETURN(replicated_, ReplicatedMaster::Create(env, master_knobs, knobs_.replication,
                                                            decisions_.get()));
  // A restarted master's task and lease ids start above the earlier
  // incarnations' (MasterService::SetIdEpoch): a copy that outlived the
  // crash cannot end a task of the new master.
  if (restarted) replicated_->SetIdEpoch(static_cast<uint32_t>(recovery_.master_restarts() + 1));
  if (replicated_->dynamic_replication_mode() != mode_) {
    replicated_->SetDynamicReplicationMode(mode_);
  }
  call_observer_ =
      std::make_unique<SimCallObserver>(this, &env_.engine(), replicated_.get(), options_.observer);
  replicated_->SetCallObserver(call_observer_.get());
  // A master that never crashes keeps no store manifests (they would only
  // cost time: the journal is about a tenth of a trace replay's work).
  if (!master_crashes_) replicated_->DisableManifestJournal();
  endpoint_.Up(replicated_.get());
  return absl::OkStatus();
}

absl::Status Simulation::BuildHosts() {
  cluster_.AddScenario(scenario_);
  if (!knobs_.driver.master_host.empty()) {
    const std::optional<int> master_host = cluster_.FindHost(knobs_.driver.master_host);
    if (!master_host.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(scenario_.source,
                                                     ": knob master_host: unknown host \"",
                                                     knobs_.driver.master_host, "\""));
    }
    master_host_ = *master_host;
  }
  for (HostRt& host : cluster_.hosts()) {
    host.master_client = std::make_unique<SimMasterClient>(
        &env_.engine(), network_.get(), &endpoint_, host.index, master_host_, control_faults_,
        &env_.faults_rng(), &control_stats_);
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
  // Only a scenario whose master crashes has the workers report their
  // manifests when they register: a report is extra control messages, which
  // would move every other scenario's timing.
  options.report_manifest = master_crashes_;
  // The host is up when it joins: register and mount directly, so the
  // scenario's first operations at the join time find its segments. The
  // worker then registers and mounts again through the control plane (both
  // idempotent) and keeps heartbeating. A worker that starts while the
  // master is down or recovering goes through the control plane only.
  if (master_up() && !master().Recovering()) {
    RegisterClientRequest registration;
    registration.client_id = host.worker_id;
    registration.host = host.name;
    registration.domain = host.domain;
    if (absl::Status st = replicated_->RegisterClient(registration); !st.ok()) Fail(st);
    for (const MountSegmentRequest& s : host.segments) {
      if (absl::Status st = replicated_->MountSegment(host.worker_id, s); !st.ok()) Fail(st);
    }
  }
  ++host.worker_starts;
  host.worker = std::make_unique<StoreWorker>(env_.env(), host.master_client.get(), &mover_,
                                              std::move(options));
  host.worker_up = true;
  for (const MountSegmentRequest& s : host.segments) cluster_.segment(s.segment_id).mounted = true;
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
        measurements_.CountMetric("sim_trunk_partitions_total");
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
        measurements_.CountMetric("sim_trunk_degradations_total");
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
  for (size_t i = 0; i + 1 < measurements_.interval_count(); ++i) {
    env_.engine().ScheduleAt(measurements_.IntervalEndNs(i), [this, i] { Sample(i); });
  }
}

}  // namespace heatsink::sim::runner_internal
