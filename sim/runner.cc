// The scenario driver (sim/runner.h): one Simulation object per run
// (sim/internal/simulation.h) owns the simulated world, feeds it the
// scenario's operations and measures it. This file holds the run loop, the
// sampling steps and the assembly of the RunResult.
#include "sim/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "sim/internal/simulation.h"
#include "sim/report_format.h"

namespace heatsink::sim {
namespace runner_internal {
namespace {

constexpr uint64_t kProgressEventMask = (uint64_t{1} << 16) - 1;

// Every counter and gauge of `families` as "name{label=value,...}" -> value
// (histograms left out).
void FlattenMetrics(const std::vector<MetricFamily>& families,
                    std::map<std::string, int64_t>& metrics) {
  for (const MetricFamily& family : families) {
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
      metrics[key] = sample.value;
    }
  }
}

// The master's eviction, release and pacing counters and the control
// plane's message counters, under their sim_ names.
void AddMasterAndControlCounters(const MasterStats& master_stats, const ControlStats& control,
                                 bool master_crashes, std::map<std::string, int64_t>& metrics) {
  metrics["sim_master_evicted_objects_total"] = master_stats.evicted_objects_total;
  // Only when copy pacing held a task back, so runs with unpaced budgets
  // keep their outputs.
  if (master_stats.copy_fetches_deferred_total > 0) {
    metrics["sim_master_copy_fetches_deferred_total"] = master_stats.copy_fetches_deferred_total;
  }
  metrics["sim_master_evicted_dynamic_replicas_total"] =
      master_stats.evicted_dynamic_replicas_total;
  metrics["sim_master_released_dynamic_replicas_total"] =
      master_stats.released_dynamic_replicas_total;
  metrics["sim_control_messages_total"] = static_cast<int64_t>(control.messages);
  metrics["sim_control_messages_dropped_total"] = static_cast<int64_t>(control.dropped);
  metrics["sim_control_messages_delayed_total"] = static_cast<int64_t>(control.delayed);
  metrics["sim_control_messages_unreachable_total"] = static_cast<int64_t>(control.unreachable);
  metrics["sim_control_calls_timed_out_total"] = static_cast<int64_t>(control.calls_timed_out);
  if (master_crashes) {
    metrics["sim_control_calls_master_down_total"] = static_cast<int64_t>(control.master_down);
    // Present even at 0, so that a crash scenario's checks can name them.
    for (const char* name :
         {"sim_read_misses_total", "sim_read_misses_of_stored_objects_total",
          "sim_reads_failed_total", "sim_read_retries_master_unavailable_total",
          "sim_reads_gave_up_master_unavailable_total", "sim_master_restarts_total"}) {
      metrics.try_emplace(name, 0);
    }
  }
}

}  // namespace

// ------------------------------------------------------------- measurement

void Simulation::CloseNumaInterval(size_t interval) {
  for (const HostRt& h : cluster_.hosts()) {
    if (h.numa == nullptr) continue;
    measurements_.AddNumaInterval(interval, h.index, h.numa->CloseInterval(interval));
  }
}

MasterSample Simulation::SampleMasterFigures() const {
  int64_t replicas = 0;
  uint64_t reserved = 0;
  uint64_t used = 0;
  for (const SegmentView& v : master().ListSegments()) {
    replicas += v.replica_count;
    reserved += v.reserved_bytes;
    used += v.used_bytes;
  }
  uint64_t dynamic_bytes = 0;
  int64_t dynamic = 0;
  for (const DynamicReplicaView& d : replicated_->replication().DynamicReplicas()) {
    ++dynamic;
    dynamic_bytes += d.size_bytes;
  }
  MasterSample sample;
  sample.stored_bytes = used > dynamic_bytes ? used - dynamic_bytes : 0;
  sample.replica_count = replicas;
  sample.dynamic_replica_count = dynamic;
  sample.extra_memory_bytes = dynamic_bytes + reserved;
  return sample;
}

void Simulation::Sample(size_t interval) {
  measurements_.SampleBackground(interval, network_->Counters().background_bytes);
  if (!master_up()) {
    // The master is down (master_crashes): the figures it holds stay those
    // of the last sample, and no audit runs.
    measurements_.CarryMasterSample(interval);
    CloseNumaInterval(interval);
    return;
  }
  measurements_.SampleMaster(interval, SampleMasterFigures());
  CloseNumaInterval(interval);
  // The core's audit (CheckInvariants) visits every object and heat-window
  // entry: RunMeasurements::AuditDue says when it runs at a sample.
  // invariant_check_events adds audits every N events.
  const uint64_t events = env_.engine().events_run();
  const uint64_t audit_entries =
      static_cast<uint64_t>(master().Stats().objects) +
      static_cast<uint64_t>(replicated_->replication().heat_window().Memory().tracked_keys);
  if (measurements_.AuditDue(interval, events, audit_entries)) {
    if (absl::Status st = CheckInvariants(); !st.ok()) Fail(st);
  }
}

absl::Status Simulation::CheckInvariants() {
  return master_up() ? replicated_->CheckInvariants() : absl::OkStatus();
}

absl::StatusOr<RunResult> Simulation::Run() {
  for (HostRt& host : cluster_.hosts()) {
    if (host.join_at_ns == 0) {
      StartWorker(host);
    } else if (host.join_at_ns < scenario_.duration_ns) {
      const int index = host.index;
      env_.engine().ScheduleAt(host.join_at_ns,
                               [this, index] { StartWorker(cluster_.host(index)); });
    }
  }
  ScheduleTrunkFaults();
  if (master_crashes_) ScheduleMasterCrashes();
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
    if (master_crashes_ && master_up()) HS_RETURN_IF_ERROR(recovery_.Check(master()));
    if (options_.observer != nullptr) return options_.observer->AfterEvent(World());
    return absl::OkStatus();
  });
  engine.SetStopPredicate([this] { return !status_.ok(); });
  absl::StatusOr<StopReason> stopped = engine.RunUntil(scenario_.duration_ns);
  engine.SetAfterEventHook(nullptr);
  HS_RETURN_IF_ERROR(status_);
  HS_RETURN_IF_ERROR(stopped.status());
  if (measurements_.interval_count() > 0) Sample(measurements_.interval_count() - 1);
  HS_RETURN_IF_ERROR(status_);
  if (options_.observer != nullptr) HS_RETURN_IF_ERROR(options_.observer->AtEnd(World()));
  if (options_.progress)
    options_.progress(engine.NowNs(), scenario_.duration_ns, engine.events_run());

  HS_RETURN_IF_ERROR(decisions_file_.Close());
  HS_RETURN_IF_ERROR(reads_file_.Close());

  return CollectResult();
}

RunResult Simulation::CollectResult() {
  LimitLineOptions limit_options;
  limit_options.duration_ns = std::max<DurationNs>(scenario_.duration_ns, 1);
  limit_options.max_memory_replicas = knobs_.replication.dynamic_replication_max_memory_replicas;
  limit_options.domain_aware = knobs_.replication.dynamic_replication_domain_aware;
  if (scenario_.outputs.clairvoyant_budget_bytes.has_value()) {
    limit_options.clairvoyant_budget_bytes =
        static_cast<uint64_t>(*scenario_.outputs.clairvoyant_budget_bytes);
  }
  measurements_.CloseResult(limit_options);
  std::map<std::string, int64_t> decisions_by_outcome = decisions_->counts();
  std::map<std::string, int64_t> master_metrics;
  FlattenMetrics(replicated_->SyncMetrics().Snapshot(), master_metrics);
  RunResult result = measurements_.TakeResult(std::move(master_metrics));
  result.decisions_by_outcome = std::move(decisions_by_outcome);
  AddMasterAndControlCounters(master().Stats(), control_stats_, master_crashes_, result.metrics);
  int64_t tiering_exchanges = 0;
  int64_t tiering_decays = 0;
  int64_t tiering_store_failures = 0;
  int64_t tiering_head_trades = 0;
  for (const HostRt& h : cluster_.hosts()) {
    if (h.numa == nullptr) continue;
    const TieringStats t = h.numa->stats();
    tiering_exchanges += t.exchanges;
    tiering_head_trades += t.head_trades;
    tiering_decays += t.decay_passes;
    tiering_store_failures += h.numa->stores_failed();
  }
  result.metrics["sim_tiering_exchanges_total"] = tiering_exchanges;
  result.metrics["sim_tiering_decay_passes_total"] = tiering_decays;
  result.metrics["sim_tiering_stores_failed_total"] = tiering_store_failures;
  result.metrics["sim_tiering_head_trades_total"] = tiering_head_trades;
  result.metrics["sim_network_rate_updates_total"] = static_cast<int64_t>(network_->rate_updates());
  result.metrics["sim_network_flows_recomputed_total"] =
      static_cast<int64_t>(network_->flows_recomputed_total());
  const NetworkCounters net = network_->Counters();
  result.metrics["sim_network_flows_started_total"] = static_cast<int64_t>(net.flows_started);
  result.events_simulated = static_cast<int64_t>(env_.engine().events_run());
  return result;
}

}  // namespace runner_internal

absl::StatusOr<RunResult> RunScenario(const Scenario& scenario, const RunOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  HS_ASSIGN_OR_RETURN(runner_internal::KnobSet knobs,
                      runner_internal::ResolveKnobs(scenario, options));
  auto sim = std::make_unique<runner_internal::Simulation>(scenario, options, std::move(knobs));
  HS_RETURN_IF_ERROR(sim->Build());
  HS_ASSIGN_OR_RETURN(RunResult result, sim->Run());
  sim.reset();
  // Wall time goes to timing.json and stdout only (never a deterministic file).
  result.wall_time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - wall_start)
                            .count();
  if (const char* tunables = std::getenv("GLIBC_TUNABLES"); tunables != nullptr) {
    result.malloc_tunables = tunables;
  }
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

int64_t LargestObjectBytes(const Scenario& scenario) {
  int64_t largest = 0;
  for (const Workload& w : scenario.workloads) {
    switch (w.type) {
      case WorkloadType::kTrace:
        largest = std::max(largest, w.trace.tokens_per_block * w.trace.kv_bytes_per_token);
        break;
      case WorkloadType::kZipf:
        largest = std::max(largest, w.zipf.object_size_bytes);
        break;
      case WorkloadType::kCrossDomainReuse:
        largest = std::max(largest, w.cross_domain_reuse.object_size_bytes);
        break;
      case WorkloadType::kColdStart:
        largest = std::max(largest, w.cold_start.object_size_bytes);
        break;
      case WorkloadType::kScripted:
        for (const ScriptOp& op : w.scripted.ops) largest = std::max(largest, op.size_bytes);
        break;
    }
  }
  return largest;
}

absl::StatusOr<std::vector<std::string>> ScenarioNotes(const Scenario& scenario,
                                                       const RunOptions& options) {
  HS_ASSIGN_OR_RETURN(const runner_internal::KnobSet knobs,
                      runner_internal::ResolveKnobs(scenario, options));
  const int64_t largest = LargestObjectBytes(scenario);
  std::vector<std::string> notes;
  const std::pair<const char*, int64_t> budgets[] = {
      {"copy_budget_per_source_bytes", knobs.master.copy_budget_per_source_bytes},
      {"copy_budget_per_trunk_bytes", knobs.master.copy_budget_per_trunk_bytes},
  };
  for (const auto& [name, budget] : budgets) {
    if (budget >= largest) continue;
    notes.push_back(absl::StrCat(
        name, " (", budget, " bytes) is smaller than the largest object (", largest,
        " bytes): copies of larger objects go through one at a time on their ",
        absl::string_view(name) == "copy_budget_per_source_bytes" ? "source" : "trunk"));
  }
  return notes;
}

}  // namespace heatsink::sim
