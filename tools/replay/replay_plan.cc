#include "tools/replay/replay_plan.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "core/master/master_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "sim/engine.h"
#include "sim/network_topology.h"
#include "sim/runner.h"
#include "sim/sim_env.h"
#include "sim/workloads.h"

namespace heatsink::replay {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr uint64_t kClientIdBase = 1'000'000;  // the simulator's store clients start here
constexpr absl::string_view kModeKnob = "dynamic_replication_mode";

absl::Status Refuse(const sim::Scenario& scenario, absl::string_view field,
                    absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      scenario.source, ": ", field, ": heatsink-replay cannot honour this: ", why));
}

// Driver knobs whose meaning the replay keeps (store pacing, the readers'
// selection seed) or that only shape the simulated clients (ignored, listed).
absl::Status ApplyDriverKnob(const sim::KnobSetting& knob, ReplayPlan* plan) {
  sim::DriverKnobs driver;
  HS_RETURN_IF_ERROR(sim::DriverKnobs::Registry().Set(driver, knob.name, knob.value));
  if (knob.name == "worker_heartbeat_interval_ms") {
    plan->heartbeat_interval_ms = driver.worker_heartbeat_interval_ms;
  } else if (knob.name == "worker_fetch_interval_ms") {
    plan->fetch_interval_ms = driver.worker_fetch_interval_ms;
  } else if (knob.name == "read_retry_ms") {
    plan->read_retry_ms = driver.read_retry_ms;
  } else if (knob.name == "read_retries_max") {
    plan->read_retries_max = driver.read_retries_max;
  } else if (knob.name == "replica_selection_seed") {
    plan->replica_selection_seed = static_cast<uint64_t>(driver.replica_selection_seed);
  } else {
    plan->ignored_knobs.push_back(knob.name);
  }
  return absl::OkStatus();
}

// With a time scale X != 1 the master runs in wall time while the scenario's
// knobs are in simulated time: the heat window and every replication period
// are stretched by X and the QPS threshold divided by X, so the window spans
// the same simulated time and holds the same hit count. Appended after the
// scenario's own --set lines, so they win.
absl::Status ScaleTimeKnobs(const sim::Scenario& scenario, const ReplicationKnobs& replication,
                            const MasterKnobs& master, double x, ReplayPlan* plan) {
  if (x == 1.0) return absl::OkStatus();
  const double window = static_cast<double>(replication.dynamic_replication_heat_window_seconds) * x;
  if (std::fabs(window - std::round(window)) > 1e-9 || window < 1) {
    return Refuse(scenario, "$.knobs.dynamic_replication_heat_window_seconds",
                  absl::StrCat("the heat window (", replication.dynamic_replication_heat_window_seconds,
                               " s) x time scale ", x, " is not a whole number of seconds"));
  }
  const double qps = replication.dynamic_replication_admission_qps_threshold / x;
  if (AdmissionHitCountFor(qps, static_cast<int64_t>(std::round(window))) !=
      replication.AdmissionHitCount()) {
    return Refuse(scenario, "$.knobs.dynamic_replication_admission_qps_threshold",
                  absl::StrCat("the hit count changes under time scale ", x));
  }
  const auto set = [&](const std::string& name, const std::string& value) {
    plan->master_sets.push_back(absl::StrCat(name, "=", value));
    plan->time_scaled_knobs.push_back(plan->master_sets.back());
  };
  set("dynamic_replication_heat_window_seconds", absl::StrCat(std::llround(window)));
  set("dynamic_replication_admission_qps_threshold", absl::StrFormat("%.17g", qps));
  for (const char* name :
       {"dynamic_replication_heat_drain_interval_ms", "dynamic_replication_admission_cooldown_ms",
        "dynamic_replication_recreate_cooldown_ms", "dynamic_replication_admission_retry_ms",
        "dynamic_replication_release_after_ms", "dynamic_replication_release_span_ms",
        "dynamic_replication_lease_ttl_ms", "dynamic_replication_warmup_domain_poll_ms"}) {
    const auto* entry = ReplicationKnobs::Registry().Find(name);
    HS_CHECK_MSG(entry != nullptr, name);
    int64_t ms = 0;
    HS_CHECK(absl::SimpleAtoi(entry->get(replication), &ms));
    set(name, absl::StrCat(std::llround(static_cast<double>(ms) * x)));
  }
  // A rate in wall time: divided, so warmup moves the same bytes per
  // simulated second.
  set("dynamic_replication_warmup_bytes_per_second_max",
      absl::StrCat(std::max<int64_t>(
          1, std::llround(
                 static_cast<double>(replication.dynamic_replication_warmup_bytes_per_second_max) /
                 x))));
  // The master's own periods and TTLs (a dead store is declared dead at the
  // same simulated time); whole seconds stay whole, at least 1.
  for (const char* name :
       {"sweep_interval_ms", "default_kv_lease_ttl_ms", "restart_grace_ms", "client_live_ttl_sec",
        "put_start_discard_timeout_sec", "put_start_release_timeout_sec",
        "pending_task_timeout_sec", "processing_task_timeout_sec"}) {
    const auto* entry = MasterKnobs::Registry().Find(name);
    HS_CHECK_MSG(entry != nullptr, name);
    int64_t value = 0;
    HS_CHECK(absl::SimpleAtoi(entry->get(master), &value));
    if (value == 0) continue;  // 0 is "off" where it is allowed
    set(name, absl::StrCat(std::max<int64_t>(1, std::llround(static_cast<double>(value) * x))));
  }
  const auto scaled = [x](int64_t ms) {
    return std::max<int64_t>(1, std::llround(static_cast<double>(ms) * x));
  };
  plan->fetch_interval_ms = scaled(plan->fetch_interval_ms);
  plan->heartbeat_interval_ms = scaled(plan->heartbeat_interval_ms);
  return absl::OkStatus();
}

absl::Status PlanKnobs(const sim::Scenario& scenario, double time_scale, ReplayPlan* plan) {
  ReplicationKnobs replication;
  MasterKnobs master;
  for (const sim::KnobSetting& knob : scenario.knobs) {
    const std::string field = absl::StrCat("$.knobs.", knob.name);
    if (MasterKnobs::Registry().Find(knob.name) != nullptr ||
        ReplicationKnobs::Registry().Find(knob.name) != nullptr) {
      // The mode goes in the master's config file (ReplayPlan::master_sets).
      if (knob.name != kModeKnob) {
        plan->master_sets.push_back(absl::StrCat(knob.name, "=", knob.value));
      }
      if (ReplicationKnobs::Registry().Find(knob.name) != nullptr) {
        HS_RETURN_IF_ERROR(ReplicationKnobs::Registry().Set(replication, knob.name, knob.value));
      } else {
        HS_RETURN_IF_ERROR(MasterKnobs::Registry().Set(master, knob.name, knob.value));
      }
    } else if (sim::DriverKnobs::Registry().Find(knob.name) != nullptr) {
      HS_RETURN_IF_ERROR(ApplyDriverKnob(knob, plan));
    } else if (TieringKnobs::Registry().Find(knob.name) != nullptr) {
      return Refuse(scenario, field, "a NUMA tiering knob (the replay runs no head pool yet)");
    } else if (sim::NetworkKnobs::Registry().Find(knob.name) != nullptr ||
               sim::EngineKnobs::Registry().Find(knob.name) != nullptr) {
      return Refuse(scenario, field,
                    "a knob of the simulator's network or engine model, which a real cluster "
                    "replaces by the machine itself");
    } else {
      return Refuse(scenario, field, "an unknown knob");
    }
  }
  plan->replica_selection_policy = replication.replica_selection_policy;
  plan->batch_keys_max = std::max<int64_t>(1, static_cast<int64_t>(master.batch_keys_max));
  plan->dynamic_replication_mode = replication.dynamic_replication_mode;
  return ScaleTimeKnobs(scenario, replication, master, time_scale, plan);
}

// Store crashes and restarts ($.faults.worker_crashes) are replayed
// (cluster_ops.h); every other fault is refused.
absl::Status CheckFaults(const sim::Scenario& scenario) {
  const sim::ScenarioFaults& f = scenario.faults;
  if (!f.master_crashes.empty()) {
    return Refuse(scenario, "$.faults.master_crashes", "master crashes are not replayed yet");
  }
  if (!f.segment_unmounts.empty()) {
    return Refuse(scenario, "$.faults.segment_unmounts", "segment unmounts are not replayed yet");
  }
  if (f.copy_failure_probability > 0) {
    return Refuse(scenario, "$.faults.copy_failure_probability",
                  "injected copy failures have no runtime counterpart yet");
  }
  if (f.control_messages.drop_probability > 0 || f.control_messages.delay_probability > 0) {
    return Refuse(scenario, "$.faults.control_messages",
                  "control-message faults have no runtime counterpart yet");
  }
  if (!f.trunk_faults.empty()) {
    return Refuse(scenario, "$.faults.trunk_faults",
                  "loopback has no trunks to partition or degrade");
  }
  return absl::OkStatus();
}

bool ScriptOpReplayable(sim::ScriptOpKind kind) {
  switch (kind) {
    case sim::ScriptOpKind::kPut:
    case sim::ScriptOpKind::kBatchPut:
    case sim::ScriptOpKind::kGet:
    case sim::ScriptOpKind::kBatchGet:
    case sim::ScriptOpKind::kRemove:
    case sim::ScriptOpKind::kAdvanceTime:
    case sim::ScriptOpKind::kKillWorker:
    case sim::ScriptOpKind::kRestartWorker:
    case sim::ScriptOpKind::kSetKnob:  // of dynamic_replication_mode only (CheckSetKnob)
      return true;
    default:
      return false;
  }
}

// A set_knob the simulator would carry out (Simulation::SetKnob): of
// dynamic_replication_mode, to a value the scenario's replication knobs
// accept. The simulator refuses the rest when the op runs; the replay
// refuses them before anything starts, at the op's JSON position.
absl::Status CheckSetKnob(const sim::Scenario& scenario, const sim::ScriptOp& op) {
  if (op.knob_name != kModeKnob) {
    return absl::FailedPreconditionError(absl::StrCat(
        op.where, ": heatsink-replay cannot honour this: set_knob ", op.knob_name,
        ": only dynamic_replication_mode can change during a run (the master reloads it on "
        "SIGHUP); the other knobs are fixed when the master starts"));
  }
  ReplicationKnobs knobs;
  for (const sim::KnobSetting& knob : scenario.knobs) {
    if (ReplicationKnobs::Registry().Find(knob.name) == nullptr) continue;
    HS_RETURN_IF_ERROR(ReplicationKnobs::Registry().Set(knobs, knob.name, knob.value));
  }
  absl::Status st = ReplicationKnobs::Registry().Set(knobs, op.knob_name, op.knob_value);
  if (st.ok()) st = knobs.Validate();
  if (!st.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(op.where, ": set_knob ", op.knob_name, ": ", st.message()));
  }
  return absl::OkStatus();
}

absl::Status CheckWorkloads(const sim::Scenario& scenario) {
  for (size_t i = 0; i < scenario.workloads.size(); ++i) {
    const sim::Workload& w = scenario.workloads[i];
    if (w.type != sim::WorkloadType::kScripted) continue;
    for (size_t j = 0; j < w.scripted.ops.size(); ++j) {
      const sim::ScriptOp& op = w.scripted.ops[j];
      if (op.kind == sim::ScriptOpKind::kSetKnob) HS_RETURN_IF_ERROR(CheckSetKnob(scenario, op));
      if (ScriptOpReplayable(op.kind)) continue;
      return absl::FailedPreconditionError(
          absl::StrCat(op.where, ": heatsink-replay cannot honour this: scripted op \"",
                       sim::ScriptOpKindName(op.kind),
                       "\" has no runtime meaning in a replay yet (put, get, batch_put, "
                       "batch_get, remove, advance_time, kill_worker, restart_worker and "
                       "set_knob of dynamic_replication_mode are replayed)"));
    }
  }
  return absl::OkStatus();
}

absl::Status PlanHost(const sim::Scenario& scenario, const sim::ScenarioDomain& domain,
                      const sim::ScenarioHost& host, const std::string& field,
                      ReplayPlan* plan) {
  const int64_t index = static_cast<int64_t>(plan->hosts.size());
  plan->hosts.push_back(host.name);
  plan->host_domains.push_back(domain.name);
  if (!host.numa_nodes.empty() &&
      (host.numa_nodes.size() > 1 || host.numa_nodes.front().id != 0)) {
    return Refuse(scenario, absl::StrCat(field, ".numa_nodes"),
                  "NUMA models need a head pool per store, not replayed yet");
  }
  for (const sim::ScenarioClient& c : host.clients) {
    ReplayClient client;
    client.full_name = c.full_name;
    client.host = host.name;
    client.domain = domain.name;
    client.host_index = index;
    client.client_id = ClientId(kClientIdBase + plan->clients.size());
    plan->clients.emplace(c.full_name, std::move(client));
  }
  if (host.segments.empty()) return absl::OkStatus();
  ReplayStore store;
  store.host = host.name;
  store.domain = domain.name;
  store.host_index = index;
  store.client_id = StoreClientIdForHost(index);
  store.join_at_ns = domain.join_at_ns;
  const int64_t bytes = host.segments.front().capacity_bytes;
  for (const sim::ScenarioSegment& s : host.segments) {
    if (s.capacity_bytes != bytes || bytes % kMiB != 0) {
      return Refuse(scenario, absl::StrCat(field, ".segments"),
                    "a store mounts equal segments of whole MiB (--segment-mib); this host's "
                    "segments differ in size or are not whole MiB");
    }
    store.segment_names.push_back(s.full_name);
    plan->segment_bytes_total += bytes;
  }
  store.segments = static_cast<int64_t>(host.segments.size());
  store.segment_mib = bytes / kMiB;
  // The simulator numbers every segment 1, 2, ... in scenario order; the
  // stores take the same ids, so placement breaks ties between equally free
  // segments alike in both worlds.
  store.first_segment_id = 1;
  for (const ReplayStore& before : plan->stores) {
    store.first_segment_id += static_cast<uint64_t>(before.segments);
  }
  plan->stores.push_back(std::move(store));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PutFootprint> ScenarioPutFootprint(const sim::Scenario& scenario, uint64_t seed) {
  HS_ASSIGN_OR_RETURN(std::unique_ptr<sim::OpStream> stream,
                      sim::MakeScenarioOpStream(scenario, Rng(seed).Fork(sim::kWorkloadSubsystem)));
  absl::flat_hash_map<std::pair<std::string, std::string>, int64_t> largest;
  sim::SimOp op;
  while (true) {
    HS_ASSIGN_OR_RETURN(bool more, stream->Next(&op));
    if (!more) break;
    if (op.kind != sim::SimOpKind::kPut && op.kind != sim::SimOpKind::kBatchPut) continue;
    for (const std::string& key : op.keys) {
      int64_t& size = largest[{op.tenant, key}];
      size = std::max(size, op.size_bytes);
    }
  }
  PutFootprint footprint;
  for (const auto& [name, size] : largest) {  // a sum and a maximum: order does not matter
    footprint.distinct_bytes += size;
    footprint.object_bytes_max = std::max(footprint.object_bytes_max, size);
  }
  return footprint;
}

int64_t HostIndexOfSegment(const ReplayPlan& plan, SegmentId segment) {
  for (const ReplayStore& s : plan.stores) {
    if (segment.value >= s.first_segment_id &&
        segment.value < s.first_segment_id + static_cast<uint64_t>(s.segments)) {
      return s.host_index;
    }
  }
  return -1;
}

ClientId StoreClientIdForHost(int64_t host_index) {
  return ClientId(1 + static_cast<uint64_t>(host_index));
}

absl::StatusOr<ReplayPlan> MakeReplayPlan(const sim::Scenario& scenario,
                                          const ReplayLimits& limits) {
  ReplayPlan plan;
  if (!(limits.time_scale > 0) || !std::isfinite(limits.time_scale)) {
    return absl::InvalidArgumentError("--time-scale must be a positive number");
  }
  HS_RETURN_IF_ERROR(PlanKnobs(scenario, limits.time_scale, &plan));
  HS_RETURN_IF_ERROR(CheckFaults(scenario));
  HS_RETURN_IF_ERROR(CheckWorkloads(scenario));
  const sim::ScenarioNetwork& n = scenario.topology.network;
  if (n.control_same_host_latency_ns || n.control_same_domain_latency_ns ||
      n.control_cross_domain_latency_ns || n.control_jitter_percent || n.transfer_overhead_ns) {
    return Refuse(scenario, "$.topology.network",
                  "network-model overrides describe a modelled machine; loopback is this one");
  }
  for (size_t d = 0; d < scenario.topology.domains.size(); ++d) {
    const sim::ScenarioDomain& domain = scenario.topology.domains[d];
    for (size_t h = 0; h < domain.hosts.size(); ++h) {
      HS_RETURN_IF_ERROR(PlanHost(scenario, domain, domain.hosts[h],
                                  absl::StrCat("$.topology.domains[", d, "].hosts"), &plan));
    }
  }
  if (static_cast<int64_t>(plan.hosts.size()) > limits.hosts_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        scenario.source, ": $.topology.domains: ", plan.hosts.size(),
        " hosts (after count) are more than heatsink-replay starts (--hosts-max ",
        limits.hosts_max, ")"));
  }
  HS_ASSIGN_OR_RETURN(const PutFootprint footprint, ScenarioPutFootprint(scenario, limits.seed));
  plan.put_bytes_distinct = footprint.distinct_bytes;
  plan.object_bytes_max = footprint.object_bytes_max;
  if (plan.put_bytes_distinct > limits.memory_available_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        scenario.source, ": $.workloads: the objects put come to ", plan.put_bytes_distinct / kMiB,
        " MiB (each key once, one replica), more than this machine has available (",
        limits.memory_available_bytes / kMiB, " MiB, MemAvailable in /proc/meminfo)"));
  }
  const double wall_ns = static_cast<double>(scenario.duration_ns) * limits.time_scale;
  if (wall_ns > static_cast<double>(limits.run_time_max_ns)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        scenario.source, ": $.duration_s: ", scenario.duration_ns / kNsPerSec,
        " s x time scale ", limits.time_scale, " is longer than the run-time bound (",
        limits.run_time_max_ns / kNsPerSec, " s, --run-time-max-s)"));
  }
  if (plan.stores.empty()) {
    return Refuse(scenario, "$.topology.domains", "no host has a segment to store anything");
  }
  return plan;
}

absl::StatusOr<int64_t> ReadMemAvailableBytes(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "MemAvailable:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    if (!absl::ConsumeSuffix(&rest, "kB")) break;
    int64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) break;
    return kib * 1024;
  }
  return absl::UnavailableError(
      absl::StrCat(meminfo_path, ": no readable MemAvailable line"));
}

}  // namespace heatsink::replay
