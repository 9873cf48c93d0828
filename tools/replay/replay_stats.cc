#include "tools/replay/replay_stats.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "core/replication/decision.h"
#include "nlohmann/json.hpp"
#include "sim/decision_log.h"
#include "sim/report_format.h"
#include "tools/replay/replay_run.h"

namespace heatsink::replay {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kLateNs = 10'000'000;  // an op more than 10 ms late counts as late

const char* DistanceName(int64_t reader, int64_t served, const ReplayPlan& plan) {
  if (reader == served) return "same_host";
  if (plan.host_domains[static_cast<size_t>(reader)] ==
      plan.host_domains[static_cast<size_t>(served)]) {
    return "same_domain";
  }
  return "cross_domain";
}

Json Percentiles(std::vector<int64_t> v) {
  Json j;
  j["samples"] = v.size();
  j["min"] = v.empty() ? 0 : *std::min_element(v.begin(), v.end());
  j["p50"] = NearestRankPercentile(v, 50);
  j["p90"] = NearestRankPercentile(v, 90);
  j["p99"] = NearestRankPercentile(v, 99);
  j["p999"] = NearestRankPercentile(v, 99.9);
  j["max"] = v.empty() ? 0 : v.back();
  __int128 sum = 0;
  for (int64_t x : v) sum += x;
  j["mean"] = v.empty() ? 0 : static_cast<int64_t>(sum / static_cast<__int128>(v.size()));
  return j;
}

}  // namespace

int64_t NearestRankPercentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size())));
  return v[index - 1];
}

absl::StatusOr<std::unique_ptr<ReplayRecorder>> ReplayRecorder::Open(
    const sim::Scenario& scenario, const ReplayPlan& plan, const ReplayOptions& options,
    uint64_t seed) {
  std::unique_ptr<ReplayRecorder> r(
      new ReplayRecorder(scenario, plan, options.out_dir, options.time_scale, seed));
  const std::string path = (std::filesystem::path(options.out_dir) / "reads.jsonl").string();
  absl::MutexLock lock(&r->mu_);
  r->reads_log_.open(path, std::ios::out | std::ios::trunc);
  if (!r->reads_log_) return absl::InternalError(absl::StrCat("cannot write ", path));
  return r;
}

void ReplayRecorder::SetStart(int64_t t0_steady_ns) {
  absl::MutexLock lock(&mu_);
  t0_ns_ = t0_steady_ns;
}

void ReplayRecorder::CountIssued() {
  absl::MutexLock lock(&mu_);
  ++issued_;
}

void ReplayRecorder::RecordLag(int64_t lag_ns) {
  absl::MutexLock lock(&mu_);
  if (lags_ns_.size() < kSamplesMax) lags_ns_.push_back(lag_ns);
  if (lag_ns > kLateNs) ++late_ops_;
}

void ReplayRecorder::RecordRead(const ReadSample& s) {
  std::string line = sim::ReadLineHead(s.t_ns, s.tenant, s.key, s.requester_domain);
  AppendJsonString(&line, s.client);
  line += ",\"host\":";
  AppendJsonString(&line, plan_.hosts[static_cast<size_t>(s.host_index)]);
  const bool served = s.status.ok() && s.served_host_index >= 0 &&
                      s.served_host_index < static_cast<int64_t>(plan_.hosts.size());
  const char* distance = served ? DistanceName(s.host_index, s.served_host_index, plan_) : nullptr;
  if (served) {
    line += ",\"served_host\":";
    AppendJsonString(&line, plan_.hosts[static_cast<size_t>(s.served_host_index)]);
    absl::StrAppend(&line, ",\"segment\":", s.segment.value, ",\"distance\":\"", distance, "\"");
  } else {
    line += ",\"served_host\":null,\"segment\":null,\"distance\":null";
  }
  absl::StrAppend(&line, ",\"bytes\":", s.bytes, ",\"latency_ns\":", s.latency_ns,
                  ",\"status\":\"", absl::StatusCodeToString(s.status.code()), "\"}\n");
  absl::MutexLock lock(&mu_);
  reads_log_ << line;
  if (!served) {
    if (s.status.code() == absl::StatusCode::kNotFound) {
      ++read_misses_;
    } else {
      ++reads_failed_;
      ++failures_by_code_[absl::StrCat("read ", absl::StatusCodeToString(s.status.code()))];
      if (first_failure_.empty()) first_failure_ = absl::StrCat("read ", s.key, ": ", s.status.ToString());
    }
    return;
  }
  ++reads_;
  if (latencies_ns_.size() < kSamplesMax) latencies_ns_.push_back(s.latency_ns);
  const absl::string_view d = distance;
  if (d == "same_host") {
    bytes_same_host_ += s.bytes;
  } else if (d == "same_domain") {
    bytes_same_domain_ += s.bytes;
  } else {
    bytes_cross_domain_ += s.bytes;
  }
  host_bytes_[static_cast<size_t>(s.served_host_index)] += s.bytes;
}

void ReplayRecorder::CountPutCall() {
  absl::MutexLock lock(&mu_);
  ++put_calls_;
}

void ReplayRecorder::RecordPut(const std::string& tenant, const std::string& key,
                               int64_t size_bytes, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (!status.ok()) {
    ++puts_failed_;
    ++failures_by_code_[absl::StrCat("put ", absl::StatusCodeToString(status.code()))];
    if (first_failure_.empty()) first_failure_ = absl::StrCat("put ", key, ": ", status.ToString());
    return;
  }
  ++puts_;
  int64_t& stored = stored_[{tenant, key}];
  stored_bytes_ += size_bytes - stored;
  stored = size_bytes;
}

void ReplayRecorder::RecordRemove(const std::string& tenant, const std::string& key,
                                  const absl::Status& status) {
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    ++ops_failed_;
    ++failures_by_code_[absl::StrCat("remove ", absl::StatusCodeToString(status.code()))];
    return;
  }
  absl::MutexLock lock(&mu_);
  const auto it = stored_.find({tenant, key});
  if (it == stored_.end()) return;
  stored_bytes_ -= it->second;
  stored_.erase(it);
}

void ReplayRecorder::RecordOpFailure(const sim::SimOp& op, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  ++ops_failed_;
  ++failures_by_code_[absl::StrCat(sim::SimOpKindName(op.kind), " ",
                                   absl::StatusCodeToString(status.code()))];
  if (first_failure_.empty()) {
    first_failure_ = absl::StrCat(sim::SimOpKindName(op.kind), " by ", op.client, ": ",
                                  status.ToString());
  }
}

int64_t ReplayRecorder::RecordClusterOp(const ClusterOpSample& sample) {
  absl::MutexLock lock(&mu_);
  switch (sample.kind) {
    case sim::SimOpKind::kKillWorker:
      store_kills_ += sample.changed ? 1 : 0;
      break;
    case sim::SimOpKind::kRestartWorker:
      store_restarts_ += sample.changed ? 1 : 0;
      sim_worker_restarts_ += sample.changed || sample.no_store ? 1 : 0;
      break;
    default:
      mode_changes_ += sample.changed ? 1 : 0;
      break;
  }
  if (cluster_ops_.size() >= kClusterOpsMax) {
    ++cluster_ops_unlisted_;
    return -1;
  }
  cluster_ops_.push_back(ClusterOpRecord{sample, -1, ""});
  return static_cast<int64_t>(cluster_ops_.size()) - 1;
}

void ReplayRecorder::SettleClusterOp(int64_t index, int64_t settle_ns, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (index < 0 || index >= static_cast<int64_t>(cluster_ops_.size())) return;
  ClusterOpRecord& r = cluster_ops_[static_cast<size_t>(index)];
  if (status.ok()) {
    r.settle_ns = settle_ns;
  } else {
    r.settle_error = status.ToString();
  }
}

void ReplayRecorder::RecordMasterSample(const std::map<std::string, double>& m) {
  const auto get = [&](const char* name) {
    const auto it = m.find(name);
    return it == m.end() ? 0.0 : it->second;
  };
  const int64_t used = static_cast<int64_t>(get("heatsink_master_used_bytes"));
  const int64_t reserved = static_cast<int64_t>(get("heatsink_master_reserved_bytes"));
  const int64_t objects = static_cast<int64_t>(get("heatsink_master_objects"));
  absl::MutexLock lock(&mu_);
  const int64_t extra = std::max<int64_t>(0, used + reserved - stored_bytes_);
  ++extra_samples_;
  if (objects != static_cast<int64_t>(stored_.size())) ++extra_inexact_samples_;
  extra_peak_bytes_ = std::max(extra_peak_bytes_, extra);
  extra_final_bytes_ = extra;
  last_master_ = m;
}

std::string ReplayRecorder::ProgressLine() {
  absl::MutexLock lock(&mu_);
  std::string line = absl::StrFormat(
      "%d ops issued, %d reads ok, %d misses, %d failed, %d puts, %d late ops", issued_, reads_,
      read_misses_, reads_failed_ + puts_failed_ + ops_failed_, puts_, late_ops_);
  if (!cluster_ops_.empty() || cluster_ops_unlisted_ > 0) {
    absl::StrAppendFormat(&line, ", %d stores killed, %d restarted, %d mode changes", store_kills_,
                          store_restarts_, mode_changes_);
  }
  return line;
}

absl::Status ReplayRecorder::Finish(const std::string& decisions_path) {
  absl::MutexLock lock(&mu_);
  reads_log_.close();
  if (reads_log_.fail()) return absl::InternalError(absl::StrCat("writing reads.jsonl in ", out_dir_));
  Json j;
  j["format_version"] = 1;
  j["scenario"] = {{"name", scenario_.name}, {"path", scenario_.source}, {"label", "runtime"}};
  j["seed"] = seed_;
  j["time_scale"] = time_scale_;
  j["duration_ns"] = scenario_.duration_ns;
  j["t0_steady_ns"] = t0_ns_;
  Json hosts = Json::array();
  for (size_t i = 0; i < plan_.hosts.size(); ++i) {
    hosts.push_back({{"name", plan_.hosts[i]}, {"domain", plan_.host_domains[i]}});
  }
  j["topology"] = {{"hosts", hosts}};
  j["reads"] = {{"count", reads_},
                {"misses", read_misses_},
                {"failed", reads_failed_},
                {"latency_ns", Percentiles(latencies_ns_)}};
  j["bytes_read"] = {{"same_host", bytes_same_host_},
                     {"same_domain", bytes_same_domain_},
                     {"cross_domain", bytes_cross_domain_},
                     {"total", bytes_same_host_ + bytes_same_domain_ + bytes_cross_domain_}};
  int64_t total = 0;
  Json per_host = Json::array();
  for (size_t i = 0; i < plan_.hosts.size(); ++i) {
    total += host_bytes_[i];
    per_host.push_back({{"host", plan_.hosts[i]},
                        {"domain", plan_.host_domains[i]},
                        {"bytes_served", host_bytes_[i]}});
  }
  j["host_load"] = {{"total_bytes", total}, {"hosts", per_host}};
  const auto master = [&](const char* name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> Json {
    const auto it = last_master_.find(name);
    if (it == last_master_.end()) return nullptr;
    return static_cast<int64_t>(it->second);
  };
  j["copies"] = {{"completed", master("heatsink_dynamic_replication_copy_tasks_completed_total")}};
  j["extra_memory_bytes"] = {{"peak", extra_peak_bytes_},
                             {"final", extra_final_bytes_},
                             {"samples", extra_samples_},
                             {"inexact_samples", extra_inexact_samples_}};
  absl::StatusOr<std::vector<sim::LoggedDecision>> decisions =
      sim::ReadDecisionLogFile(decisions_path);
  if (!decisions.ok()) return decisions.status();
  std::map<std::string, int64_t> outcomes;
  std::map<std::string, int64_t> reasons;
  for (const sim::LoggedDecision& d : *decisions) {
    ++outcomes[std::string(DecisionOutcomeName(d.record.outcome))];
    if (d.record.reason) ++reasons[std::string(RejectReasonName(*d.record.reason))];
  }
  j["admissions"] = {{"accepted", outcomes["accepted"]},
                     {"would_propose", outcomes["would_propose"]},
                     {"rejected", outcomes["rejected"]},
                     {"rejected_by_reason", reasons}};
  j["ops"] = {{"issued", issued_},
              {"late", late_ops_},
              {"puts", puts_},
              {"puts_failed", puts_failed_},
              {"put_calls", put_calls_},
              {"failed", ops_failed_},
              {"failures", failures_by_code_},
              {"first_failure", first_failure_}};
  j["op_lag_ns"] = Percentiles(lags_ns_);
  Json cluster_log = Json::array();
  for (const ClusterOpRecord& r : cluster_ops_) {
    Json line = {
        {"t_ns", r.sample.t_ns},     {"op", std::string(sim::SimOpKindName(r.sample.kind))},
        {"target", r.sample.target}, {"outcome", r.sample.outcome},
        {"lag_ns", r.sample.lag_ns}, {"settled_after_ns", nullptr}};
    if (r.settle_ns >= 0) line["settled_after_ns"] = r.settle_ns;
    if (!r.settle_error.empty()) line["settle_error"] = r.settle_error;
    cluster_log.push_back(std::move(line));
  }
  j["cluster_ops"] = {{"store_kills", store_kills_},
                      {"store_restarts", store_restarts_},
                      {"mode_changes", mode_changes_},
                      {"unlisted", cluster_ops_unlisted_},
                      {"log", std::move(cluster_log)}};
  // The simulator's counters of the same events (docs/outputs.md), counted
  // by its rules.
  j["metrics"] = {{"sim_mode_changes_total", mode_changes_},
                  {"sim_worker_crashes_total", store_kills_},
                  {"sim_worker_restarts_total", sim_worker_restarts_}};
  j["ignored_knobs"] = plan_.ignored_knobs;
  j["time_scaled_knobs"] = plan_.time_scaled_knobs;
  const std::string path = (std::filesystem::path(out_dir_) / "summary.json").string();
  std::ofstream out(path, std::ios::out | std::ios::trunc);
  out << j.dump(2) << "\n";
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace heatsink::replay
