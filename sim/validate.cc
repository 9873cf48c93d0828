#include "sim/validate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "sim/decision_log.h"
#include "sim/runner.h"

namespace heatsink::sim {
namespace {

using Json = nlohmann::json;

// A field of summary.json by path, or INVALID_ARGUMENT naming it.
absl::StatusOr<const Json*> Field(const Json& root, const std::vector<std::string>& path,
                                  const std::string& source) {
  const Json* at = &root;
  std::string where = "$";
  for (const std::string& part : path) {
    absl::StrAppend(&where, ".", part);
    if (!at->is_object() || !at->contains(part)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", where, ": missing"));
    }
    at = &(*at)[part];
  }
  return at;
}

absl::StatusOr<int64_t> IntField(const Json& root, const std::vector<std::string>& path,
                                 const std::string& source) {
  HS_ASSIGN_OR_RETURN(const Json* j, Field(root, path, source));
  if (!j->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": $.", absl::StrJoin(path, "."), ": expected an integer"));
  }
  return j->get<int64_t>();
}

// 1-based line of byte offset `byte` (1-based, as nlohmann reports it).
int64_t LineOf(const std::string& text, size_t byte) {
  const size_t end = std::min(byte, text.size());
  return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
}

int64_t NearestRank(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  return v[static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(v.size()))) - 1];
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be opened"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> ShareError(double sim_bytes, double sim_total, double rt_bytes,
                                 double rt_total) {
  const double sim_share = sim_total > 0 ? sim_bytes / sim_total : 0;
  const double rt_share = rt_total > 0 ? rt_bytes / rt_total : 0;
  return RelativeError(sim_share, rt_share);
}

// Collects the simulation's decisions as they are made.
class DecisionCollector : public RunObserver {
 public:
  void OnDecision(const DecisionRecord& record) override { records.push_back(record); }
  std::vector<DecisionRecord> records;
};

}  // namespace

absl::StatusOr<RuntimeSummary> ParseRuntimeSummary(const std::string& text,
                                                   const std::string& source) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", LineOf(text, e.byte), ": not JSON: ", e.what()));
  }
  RuntimeSummary s;
  HS_ASSIGN_OR_RETURN(const Json* name, Field(root, {"scenario", "name"}, source));
  if (!name->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": $.scenario.name: expected a string"));
  }
  s.scenario_name = name->get<std::string>();
  HS_ASSIGN_OR_RETURN(const int64_t seed, IntField(root, {"seed"}, source));
  s.seed = static_cast<uint64_t>(seed);
  HS_ASSIGN_OR_RETURN(const Json* scale, Field(root, {"time_scale"}, source));
  if (!scale->is_number() || !(scale->get<double>() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": $.time_scale: expected a positive number"));
  }
  s.time_scale = scale->get<double>();
  HS_ASSIGN_OR_RETURN(s.t0_steady_ns, IntField(root, {"t0_steady_ns"}, source));
  HS_ASSIGN_OR_RETURN(s.reads, IntField(root, {"reads", "count"}, source));
  HS_ASSIGN_OR_RETURN(const int64_t same_host, IntField(root, {"bytes_read", "same_host"}, source));
  HS_ASSIGN_OR_RETURN(const int64_t same_domain,
                      IntField(root, {"bytes_read", "same_domain"}, source));
  HS_ASSIGN_OR_RETURN(const int64_t cross, IntField(root, {"bytes_read", "cross_domain"}, source));
  s.bytes_read = DistanceBytes{static_cast<uint64_t>(same_host),
                               static_cast<uint64_t>(same_domain), static_cast<uint64_t>(cross)};
  HS_ASSIGN_OR_RETURN(const Json* hosts, Field(root, {"host_load", "hosts"}, source));
  if (!hosts->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": $.host_load.hosts: expected an array"));
  }
  for (size_t i = 0; i < hosts->size(); ++i) {
    const Json& h = (*hosts)[i];
    if (!h.is_object() || !h.contains("host") || !h["host"].is_string() ||
        !h.contains("bytes_served") || !h["bytes_served"].is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": $.host_load.hosts[", i, "]: expected {host: string, bytes_served: integer}"));
    }
    s.host_bytes_served.emplace_back(h["host"].get<std::string>(), h["bytes_served"].get<int64_t>());
  }
  HS_ASSIGN_OR_RETURN(const Json* copies, Field(root, {"copies", "completed"}, source));
  if (copies->is_number_integer()) {
    s.copies_completed = copies->get<int64_t>();
  } else if (!copies->is_null()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": $.copies.completed: expected an integer or null"));
  }
  HS_ASSIGN_OR_RETURN(s.extra_memory_peak_bytes,
                      IntField(root, {"extra_memory_bytes", "peak"}, source));
  HS_ASSIGN_OR_RETURN(s.extra_memory_final_bytes,
                      IntField(root, {"extra_memory_bytes", "final"}, source));
  HS_ASSIGN_OR_RETURN(s.latency_p50_ns, IntField(root, {"reads", "latency_ns", "p50"}, source));
  HS_ASSIGN_OR_RETURN(s.latency_p99_ns, IntField(root, {"reads", "latency_ns", "p99"}, source));
  HS_ASSIGN_OR_RETURN(s.latency_p999_ns, IntField(root, {"reads", "latency_ns", "p999"}, source));
  return s;
}

std::vector<AcceptedDecision> AcceptedDecisions(const std::vector<DecisionRecord>& records,
                                                int64_t t0_ns, double time_scale) {
  std::vector<AcceptedDecision> out;
  for (const DecisionRecord& r : records) {
    if (r.outcome != DecisionOutcome::kAccepted) continue;
    AcceptedDecision d;
    d.t_ns = static_cast<TimeNs>(std::llround(static_cast<double>(r.t_ns - t0_ns) / time_scale));
    d.identity = absl::StrCat(r.tenant, "\x1f", r.key, "\x1f", r.requester_domain.value_or(""),
                              "\x1f", r.target_domain.value_or(""));
    out.push_back(std::move(d));
  }
  return out;
}

double DecisionJaccard(const std::vector<AcceptedDecision>& sim,
                       const std::vector<AcceptedDecision>& runtime) {
  std::set<std::string> a;
  std::set<std::string> b;
  for (const AcceptedDecision& d : sim) a.insert(d.identity);
  for (const AcceptedDecision& d : runtime) b.insert(d.identity);
  if (a.empty() && b.empty()) return 1.0;
  size_t common = 0;
  for (const std::string& x : a) common += b.count(x);
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
}

LagStats AdmissionLag(const std::vector<AcceptedDecision>& sim,
                      const std::vector<AcceptedDecision>& runtime) {
  std::map<std::string, std::vector<TimeNs>> sim_times;
  std::map<std::string, std::vector<TimeNs>> rt_times;
  for (const AcceptedDecision& d : sim) sim_times[d.identity].push_back(d.t_ns);
  for (const AcceptedDecision& d : runtime) rt_times[d.identity].push_back(d.t_ns);
  std::vector<int64_t> lags;
  for (auto& [identity, s] : sim_times) {
    const auto it = rt_times.find(identity);
    if (it == rt_times.end()) continue;
    std::vector<TimeNs>& r = it->second;
    std::sort(s.begin(), s.end());
    std::sort(r.begin(), r.end());
    for (size_t i = 0; i < std::min(s.size(), r.size()); ++i) lags.push_back(r[i] - s[i]);
  }
  LagStats out;
  out.matched = static_cast<int64_t>(lags.size());
  out.median_ns = NearestRank(lags, 50);
  out.p90_ns = NearestRank(lags, 90);
  return out;
}

std::optional<double> RelativeError(double sim, double runtime) {
  if (sim == 0) return runtime == 0 ? std::optional<double>(0.0) : std::nullopt;
  return std::fabs(runtime - sim) / std::fabs(sim);
}

absl::StatusOr<ValidationReport> CompareRuns(const Scenario& scenario, const RunResult& sim,
                                             const std::vector<DecisionRecord>& sim_decisions,
                                             const RuntimeSummary& runtime,
                                             const std::vector<DecisionRecord>& runtime_decisions,
                                             const std::string& runtime_summary_path,
                                             bool calibrated) {
  if (runtime.host_bytes_served.size() != sim.hosts.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        runtime_summary_path, ": $.host_load.hosts: ", runtime.host_bytes_served.size(),
        " hosts, but scenario ", scenario.source, " has ", sim.hosts.size()));
  }
  ValidationReport report;
  report.scenario = scenario.name;
  report.seed = sim.seed;
  const std::vector<AcceptedDecision> a = AcceptedDecisions(sim_decisions, 0, 1.0);
  const std::vector<AcceptedDecision> b =
      AcceptedDecisions(runtime_decisions, runtime.t0_steady_ns, runtime.time_scale);
  report.sim_accepted = static_cast<int64_t>(a.size());
  report.runtime_accepted = static_cast<int64_t>(b.size());
  report.jaccard = DecisionJaccard(a, b);
  {
    std::set<std::string> sa;
    std::set<std::string> sb;
    for (const AcceptedDecision& d : a) sa.insert(d.identity);
    for (const AcceptedDecision& d : b) sb.insert(d.identity);
    for (const std::string& x : sa) report.common_accepted += static_cast<int64_t>(sb.count(x));
  }
  report.lag = AdmissionLag(a, b);
  for (const AcceptedDecision& d : a) report.sim_accepted_ns.push_back(d.t_ns);
  for (const AcceptedDecision& d : b) report.runtime_accepted_ns.push_back(d.t_ns);
  std::sort(report.sim_accepted_ns.begin(), report.sim_accepted_ns.end());
  std::sort(report.runtime_accepted_ns.begin(), report.runtime_accepted_ns.end());
  const auto row = [&](std::string metric, double s, double r) {
    report.rows.push_back(ValidationRow{std::move(metric), s, r, RelativeError(s, r)});
  };
  const DistanceBytes& sb = sim.bytes_read;
  const DistanceBytes& rb = runtime.bytes_read;
  const double sim_total = static_cast<double>(sb.same_host + sb.same_domain + sb.cross_domain);
  const double rt_total = static_cast<double>(rb.same_host + rb.same_domain + rb.cross_domain);
  row("reads.count", static_cast<double>(sim.reads), static_cast<double>(runtime.reads));
  row("bytes_read.same_host", static_cast<double>(sb.same_host), static_cast<double>(rb.same_host));
  row("bytes_read.same_domain", static_cast<double>(sb.same_domain),
      static_cast<double>(rb.same_domain));
  row("bytes_read.cross_domain", static_cast<double>(sb.cross_domain),
      static_cast<double>(rb.cross_domain));
  row("bytes_read.total", sim_total, rt_total);
  double sim_served = 0;
  double rt_served = 0;
  for (size_t i = 0; i < sim.hosts.size(); ++i) {
    sim_served += static_cast<double>(sim.host_bytes_served[i]);
    rt_served += static_cast<double>(runtime.host_bytes_served[i].second);
  }
  for (size_t i = 0; i < sim.hosts.size(); ++i) {
    if (runtime.host_bytes_served[i].first != sim.hosts[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          runtime_summary_path, ": $.host_load.hosts[", i, "].host: \"",
          runtime.host_bytes_served[i].first, "\", but host ", i, " of scenario ",
          scenario.source, " is \"", sim.hosts[i], "\""));
    }
    const double s = static_cast<double>(sim.host_bytes_served[i]);
    const double r = static_cast<double>(runtime.host_bytes_served[i].second);
    ValidationRow share{absl::StrCat("host_load.share.", sim.hosts[i]),
                        sim_served > 0 ? s / sim_served : 0, rt_served > 0 ? r / rt_served : 0,
                        ShareError(s, sim_served, r, rt_served)};
    if (share.relative_error.has_value()) {
      report.host_share_error_max =
          std::max(report.host_share_error_max.value_or(0.0), *share.relative_error);
    }
    report.rows.push_back(std::move(share));
  }
  const auto metric = [&](const char* name) {
    const auto it = sim.metrics.find(name);
    return it == sim.metrics.end() ? 0.0 : static_cast<double>(it->second);
  };
  if (runtime.copies_completed.has_value()) {
    row("copies.completed", metric("dynamic_replication_copy_tasks_completed_total"),
        static_cast<double>(*runtime.copies_completed));
  }
  row("extra_memory_bytes.peak", static_cast<double>(sim.extra_memory_peak_bytes),
      static_cast<double>(runtime.extra_memory_peak_bytes));
  row("extra_memory_bytes.final", static_cast<double>(sim.extra_memory_final_bytes),
      static_cast<double>(runtime.extra_memory_final_bytes));
  std::vector<int64_t> latencies(sim.read_latencies_ns.begin(), sim.read_latencies_ns.end());
  report.calibrated = calibrated;
  const char* const tag = calibrated ? " (calibrated)" : " (uncalibrated)";
  row(absl::StrCat("reads.latency_ns.p50", tag), static_cast<double>(NearestRank(latencies, 50)),
      static_cast<double>(runtime.latency_p50_ns));
  row(absl::StrCat("reads.latency_ns.p99", tag), static_cast<double>(NearestRank(latencies, 99)),
      static_cast<double>(runtime.latency_p99_ns));
  row(absl::StrCat("reads.latency_ns.p999", tag), static_cast<double>(NearestRank(latencies, 99.9)),
      static_cast<double>(runtime.latency_p999_ns));
  return report;
}

std::string FormatValidationTable(const ValidationReport& r) {
  std::string out = absl::StrFormat("scenario    %s  seed %d\n", r.scenario, r.seed);
  absl::StrAppendFormat(&out,
                        "admissions  accepted: sim %d, runtime %d, both %d; Jaccard %.4f\n",
                        r.sim_accepted, r.runtime_accepted, r.common_accepted, r.jaccard);
  absl::StrAppendFormat(&out,
                        "admission lag (runtime - sim, %d matched): median %.1f ms, p90 %.1f ms\n",
                        r.lag.matched, static_cast<double>(r.lag.median_ns) / 1e6,
                        static_cast<double>(r.lag.p90_ns) / 1e6);
  absl::StrAppendFormat(&out, "%-40s %18s %18s %10s\n", "metric", "sim", "runtime", "rel. err");
  for (const ValidationRow& row : r.rows) {
    absl::StrAppendFormat(&out, "%-40s %18.6g %18.6g %10s\n", row.metric, row.sim, row.runtime,
                          row.relative_error.has_value()
                              ? absl::StrFormat("%.4f", *row.relative_error)
                              : std::string("n/a"));
  }
  if (r.host_share_error_max.has_value()) {
    absl::StrAppendFormat(&out, "largest host-share error %.4f\n", *r.host_share_error_max);
  }
  return out;
}

std::string ValidationJson(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["format_version"] = 1;
  j["scenario"] = r.scenario;
  j["seed"] = r.seed;
  j["calibrated"] = r.calibrated;
  j["admissions"] = {{"sim_accepted", r.sim_accepted},
                     {"runtime_accepted", r.runtime_accepted},
                     {"common", r.common_accepted},
                     {"jaccard", r.jaccard}};
  j["admission_lag_ns"] = {
      {"matched", r.lag.matched}, {"median", r.lag.median_ns}, {"p90", r.lag.p90_ns}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const ValidationRow& row : r.rows) {
    nlohmann::ordered_json x;
    x["metric"] = row.metric;
    x["sim"] = row.sim;
    x["runtime"] = row.runtime;
    x["relative_error"] =
        row.relative_error.has_value() ? nlohmann::ordered_json(*row.relative_error) : nullptr;
    rows.push_back(std::move(x));
  }
  j["metrics"] = std::move(rows);
  j["host_share_error_max"] = r.host_share_error_max.has_value()
                                  ? nlohmann::ordered_json(*r.host_share_error_max)
                                  : nullptr;
  return j.dump(2) + "\n";
}

absl::StatusOr<RuntimeSummary> ReadRuntimeSummaryFile(const std::string& path) {
  HS_ASSIGN_OR_RETURN(const std::string text, ReadWhole(path));
  return ParseRuntimeSummary(text, path);
}

absl::StatusOr<ValidationReport> ValidateAgainstRuntime(const Scenario& scenario,
                                                        const std::string& runtime_dir,
                                                        const Calibration* calibration) {
  const std::string summary_path = (std::filesystem::path(runtime_dir) / "summary.json").string();
  const std::string decisions_path =
      (std::filesystem::path(runtime_dir) / "decisions.jsonl").string();
  HS_ASSIGN_OR_RETURN(const RuntimeSummary runtime, ReadRuntimeSummaryFile(summary_path));
  if (runtime.scenario_name != scenario.name) {
    return absl::InvalidArgumentError(absl::StrCat(
        summary_path, ": $.scenario.name: the replay ran \"", runtime.scenario_name,
        "\", not the scenario \"", scenario.name, "\" of ", scenario.source));
  }
  HS_ASSIGN_OR_RETURN(const std::vector<LoggedDecision> logged,
                      ReadDecisionLogFile(decisions_path));
  std::vector<DecisionRecord> runtime_decisions;
  for (const LoggedDecision& d : logged) runtime_decisions.push_back(d.record);
  DecisionCollector collector;
  RunOptions options;
  options.seed = runtime.seed;
  options.keep_scenario_echo = false;
  options.observer = &collector;
  Scenario simulated = scenario;
  if (calibration != nullptr) ApplyCalibration(*calibration, &simulated);
  HS_ASSIGN_OR_RETURN(const RunResult sim, RunScenario(simulated, options));
  return CompareRuns(scenario, sim, collector.records, runtime, runtime_decisions, summary_path,
                     calibration != nullptr);
}

}  // namespace heatsink::sim
