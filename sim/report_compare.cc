// File: sim/report_compare.cc
//
// The `compare` outputs: the side-by-side text table, compare.json, and the
// directory layout that puts each run's outputs beside compare.html.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "sim/report.h"
#include "sim/report_format.h"
#include "sim/report_html.h"

namespace heatsink::sim {
namespace {

std::vector<RunStats> StatsOf(const std::vector<RunResult>& runs) {
  std::vector<RunStats> stats;
  stats.reserve(runs.size());
  for (const RunResult& run : runs) stats.push_back(ComputeRunStats(run));
  return stats;
}

[[nodiscard]] absl::Status CheckLabels(const std::vector<RunResult>& runs) {
  std::set<std::string> seen;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string label = RunLabel(runs[i], i);
    if (label == "." || label == ".." || label.find('/') != std::string::npos ||
        label.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("compare: run label '", label, "' cannot be used as a directory name"));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("compare: two runs are labelled '", label, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string FormatCompareTable(const std::vector<RunResult>& runs) {
  const std::vector<RunStats> stats = StatsOf(runs);
  std::vector<std::string> header = {"metric"};
  for (size_t i = 0; i < runs.size(); ++i) header.push_back(RunLabel(runs[i], i));
  TextTable table(std::move(header));
  for (CompareRow& row : BuildCompareRows(runs, stats)) {
    std::vector<std::string> cells = {std::move(row.metric)};
    cells.insert(cells.end(), row.cells.begin(), row.cells.end());
    table.AddRow(std::move(cells));
  }
  return table.Render();
}

std::string RenderCompareJson(const std::vector<RunResult>& runs,
                              const std::vector<RunStats>& stats) {
  HS_CHECK(runs.size() == stats.size());
  JsonWriter w;
  w.BeginObject();
  w.Key("format_version").Int(kReportFormatVersion);
  w.Key("scenario").String(runs.empty() ? std::string() : runs.front().scenario_name);
  w.Key("runs").BeginArray();
  const RunResult* off = FindOffRun(runs);
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& run = runs[i];
    const RunStats& s = stats[i];
    const std::string label = RunLabel(run, i);
    w.BeginObject();
    w.Key("label").String(label);
    w.Key("output_dir").String(label);
    w.Key("seed").Uint(run.seed);
    w.Key("replay_command").String(run.replay_command);
    w.Key("reads").Int(run.reads);
    w.Key("latency_ns").BeginObject()
        .Key("p50").Int(s.latency.p50_ns)
        .Key("p90").Int(s.latency.p90_ns)
        .Key("p99").Int(s.latency.p99_ns)
        .Key("p999").Int(s.latency.p999_ns)
        .Key("max").Int(s.latency.max_ns)
        .EndObject();
    w.Key("bytes_read").BeginObject()
        .Key("same_host").Uint(run.bytes_read.same_host)
        .Key("same_domain").Uint(run.bytes_read.same_domain)
        .Key("cross_domain").Uint(run.bytes_read.cross_domain)
        .EndObject();
    w.Key("bottleneck").BeginObject().Key("host");
    if (s.host_load.busiest_host >= 0) {
      w.String(run.hosts[static_cast<size_t>(s.host_load.busiest_host)]);
    } else {
      w.Null();
    }
    w.Key("bytes_served").Uint(s.host_load.max_bytes)
        .Key("max_over_mean").Double(s.host_load.max_over_mean, 6)
        .Key("interval_max_over_mean_peak").Double(s.interval_max_over_mean_peak, 6)
        .EndObject();
    w.Key("copies").BeginObject()
        .Key("completed").Int(run.copies_completed)
        .Key("failed").Int(run.copies_failed)
        .Key("bytes").Uint(run.copy_bytes)
        .Key("cross_domain_bytes").Uint(run.copy_bytes_cross_domain)
        .EndObject();
    w.Key("extra_memory_bytes").BeginObject()
        .Key("peak").Uint(run.extra_memory_peak_bytes)
        .Key("final").Uint(run.extra_memory_final_bytes)
        .EndObject();
    w.Key("admissions").BeginObject()
        .Key("accepted").Int(s.admissions.accepted)
        .Key("would_propose").Int(s.admissions.would_propose)
        .Key("rejected").Int(s.admissions.rejected)
        .EndObject();
    w.Key("local_hit_oracle").OptionalDouble(s.local_hit_oracle, 6);
    w.Key("local_hit_fraction").OptionalDouble(s.local_hit_fraction, 6);
    const LimitLines& l = run.limits;
    w.Key("limits").BeginObject()
        .Key("first_touch_bytes").Uint(l.first_touch_bytes)
        .Key("repeat_bytes").Uint(l.repeat_bytes)
        .Key("avoidable_bytes").Uint(l.avoidable_bytes)
        .Key("avoidable_removed_bytes").Uint(l.avoidable_removed_bytes)
        .Key("avoidable_removed_fraction");
    w.OptionalDouble(off == nullptr ? std::nullopt : AvoidableRemovedVsOff(run, *off), 6);
    w.Key("online_removed_bytes").Uint(l.online.removed_bytes);
    w.Key("of_online");
    w.OptionalDouble(s.limits.of_online, 6);
    w.Key("clairvoyant_removed_bytes").Uint(l.clairvoyant.removed_bytes);
    w.Key("of_clairvoyant");
    w.OptionalDouble(s.limits.of_clairvoyant, 6);
    w.Key("extra_memory_mean_bytes").Uint(s.limits.extra_memory_mean_bytes);
    w.Key("clairvoyant_memory_mean_bytes").Uint(l.clairvoyant.memory_mean_bytes);
    w.Key("memory_of_clairvoyant");
    w.OptionalDouble(s.limits.memory_of_clairvoyant, 6);
    w.Key("extra_memory_of_stored");
    w.OptionalDouble(s.limits.extra_memory_of_stored, 6);
    w.EndObject();
    w.Key("events_simulated").Int(run.events_simulated);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Finish();
}

absl::Status WriteCompareOutputs(const std::vector<RunResult>& runs, const std::string& out_dir) {
  for (const RunResult& run : runs) HS_RETURN_IF_ERROR(ValidateRunResult(run));
  HS_RETURN_IF_ERROR(CheckLabels(runs));
  HS_RETURN_IF_ERROR(EnsureDirectory(out_dir));
  const std::vector<RunStats> stats = StatsOf(runs);
  for (size_t i = 0; i < runs.size(); ++i) {
    HS_RETURN_IF_ERROR(WriteRunOutputs(runs[i], stats[i], JoinPath(out_dir, RunLabel(runs[i], i))));
  }
  HS_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(out_dir, "compare.json"), RenderCompareJson(runs, stats)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "compare.txt"), FormatCompareTable(runs)));
  HS_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(out_dir, "compare.html"), RenderCompareReportHtml(runs, stats)));
  return absl::OkStatus();
}

}  // namespace heatsink::sim
