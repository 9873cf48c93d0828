// What a simulation run measures (sim/internal/run_measurements.h): the
// result's identity and intervals, the requests, reads, copies and samples
// as the simulation reports them, and the result at the end.
#include "sim/internal/run_measurements.h"

#include <algorithm>
#include <utility>

namespace heatsink::sim::runner_internal {

RunMeasurements::RunMeasurements(const Scenario& scenario, const RunOptions& options)
    : scenario_(scenario), options_(options) {
  if (options_.keep_limit_reads) limit_lines_->KeepAvoidableReads();
}

void RunMeasurements::StartResult(uint64_t seed, const std::vector<SeedEntry>& seeds,
                                  std::vector<std::pair<std::string, std::string>> knobs) {
  result_.scenario_name = scenario_.name;
  result_.scenario_path = scenario_.source;
  result_.label = options_.label;
  result_.seed = seed;
  for (const SeedEntry& s : seeds) {
    if (s.name != "root") result_.sub_seeds.emplace_back(s.name, s.seed);
  }
  result_.knobs = std::move(knobs);
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
  result_.host_bytes_served.assign(result_.hosts.size(), 0);
  const int64_t intervals =
      (scenario_.duration_ns + scenario_.time_step_ns - 1) / scenario_.time_step_ns;
  result_.intervals.resize(static_cast<size_t>(intervals));
  for (int64_t i = 0; i < intervals; ++i) {
    IntervalSample& s = result_.intervals[static_cast<size_t>(i)];
    s.t_start_ns = i * scenario_.time_step_ns;
    s.host_bytes_served.assign(result_.hosts.size(), 0);
  }
}

TimeNs RunMeasurements::IntervalEndNs(size_t interval) const {
  return result_.intervals[interval].t_start_ns + scenario_.time_step_ns;
}

size_t RunMeasurements::IntervalIndex(TimeNs t) const {
  const size_t i = static_cast<size_t>(t / scenario_.time_step_ns);
  return std::min(i, result_.intervals.size() - 1);
}

// ----------------------------------------------------------------- requests

std::optional<size_t> RunMeasurements::RequestRowFor(const SimOp& op) {
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
    if (op.phase == SimOpPhase::kPrefillPut) {
      sample.blocks_missed += static_cast<int64_t>(op.keys.size());
    }
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

void RunMeasurements::FinishRequest(std::optional<size_t> row, TimeNs now_ns) {
  if (!row.has_value()) return;
  RequestSample& sample = result_.requests[*row];
  sample.done_ns = std::max(sample.done_ns, now_ns);
}

// ------------------------------------------------------- reads and copies

void RunMeasurements::CountKeyRead(TimeNs now_ns, TimeNs issued_ns, uint64_t bytes,
                                   Distance distance, std::optional<size_t> request_row) {
  read_latencies_.push_back(now_ns - issued_ns);
  IntervalSample& s = IntervalAt(now_ns);
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
  if (request_row.has_value()) {
    RequestSample& r = result_.requests[*request_row];
    r.bytes_read += bytes;
    if (distance == Distance::kCrossDomain) r.cross_domain_bytes += bytes;
  }
}

void RunMeasurements::CountNumaRead(TimeNs now_ns, const NumaReadCost& cost) {
  IntervalSample& s = IntervalAt(now_ns);
  s.numa_reads += cost.head_reads;
  s.numa_local_reads += cost.local_reads;
  result_.numa_reads += cost.head_reads;
  result_.numa_local_reads += cost.local_reads;
}

void RunMeasurements::CountBytesServed(TimeNs now_ns, int host, uint64_t bytes) {
  IntervalSample& s = IntervalAt(now_ns);
  s.host_bytes_served[static_cast<size_t>(host)] += bytes;
  result_.host_bytes_served[static_cast<size_t>(host)] += bytes;
}

void RunMeasurements::CountCopyCompleted(TimeNs now_ns, uint64_t bytes, bool cross_domain) {
  IntervalSample& s = IntervalAt(now_ns);
  ++result_.copies_completed;
  result_.copy_bytes += bytes;
  ++s.copies_completed;
  s.copy_bytes += bytes;
  if (cross_domain) result_.copy_bytes_cross_domain += bytes;
}

// ------------------------------------------------------------------ samples

void RunMeasurements::SampleBackground(size_t interval, uint64_t background_bytes) {
  IntervalSample& s = result_.intervals[interval];
  // The last interval is sampled again at the end of the run.
  if (interval >= sampled_intervals_) background_bytes_base_ = background_bytes_sampled_;
  background_bytes_sampled_ = background_bytes;
  s.background_bytes = background_bytes_sampled_ - background_bytes_base_;
}

void RunMeasurements::SampleMaster(size_t interval, const MasterSample& master) {
  IntervalSample& s = result_.intervals[interval];
  s.stored_bytes = master.stored_bytes;
  s.replica_count = master.replica_count;
  s.dynamic_replica_count = master.dynamic_replica_count;
  extra_memory_now_ = master.extra_memory_bytes;
  s.extra_memory_bytes = extra_memory_now_;
  extra_memory_peak_ = std::max(extra_memory_peak_, extra_memory_now_);
  sampled_intervals_ = interval + 1;
}

void RunMeasurements::CarryMasterSample(size_t interval) {
  IntervalSample& s = result_.intervals[interval];
  if (interval > 0) {
    const IntervalSample& last = result_.intervals[interval - 1];
    s.stored_bytes = last.stored_bytes;
    s.replica_count = last.replica_count;
    s.dynamic_replica_count = last.dynamic_replica_count;
    s.extra_memory_bytes = last.extra_memory_bytes;
  }
  sampled_intervals_ = interval + 1;
}

void RunMeasurements::AddNumaInterval(size_t interval, int host, const NumaIntervalStats& stats) {
  IntervalSample& s = result_.intervals[interval];
  s.numa_oracle_local_reads += stats.oracle_local_reads;
  result_.numa_oracle_local_reads += stats.oracle_local_reads;
  result_.numa_samples.push_back(NumaHostSample{
      .t_start_ns = s.t_start_ns, .host = static_cast<int32_t>(host), .stats = stats});
}

bool RunMeasurements::AuditDue(size_t interval, uint64_t events, uint64_t audit_entries) {
  if (interval + 1 != result_.intervals.size() && events - audited_at_events_ < audit_entries) {
    return false;
  }
  audited_at_events_ = events;
  ++result_.audits;
  return true;
}

// -------------------------------------------------------------- the result

void RunMeasurements::CloseResult(const LimitLineOptions& limit_options) {
  result_.read_latencies_ns = std::move(read_latencies_);
  result_.extra_memory_peak_bytes = extra_memory_peak_;
  result_.extra_memory_final_bytes = extra_memory_now_;
  result_.limits = limit_lines_->Compute(limit_options);
  if (options_.keep_limit_reads) result_.limit_recorder = limit_lines_;
}

RunResult RunMeasurements::TakeResult(std::map<std::string, int64_t> master_metrics) {
  result_.metrics = std::move(master_metrics);
  for (const auto& [name, value] : counters_) result_.metrics[name] = value;
  return std::move(result_);
}

}  // namespace heatsink::sim::runner_internal
