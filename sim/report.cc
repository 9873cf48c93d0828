// File: sim/report.cc
//
// Run outputs: summary.json, the CSV files, timing.json, report.html and the
// stdout summary. The compare outputs live in report_compare.cc.
#include "sim/report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "nlohmann/json.hpp"
#include "sim/report_format.h"
#include "sim/report_html.h"

namespace heatsink::sim {
namespace {

// Knob values arrive as text. A value that is a JSON number or boolean
// literal is written as that literal so that tools can read it typed; any
// other value (and any with blanks around it) stays a string.
void WriteKnobValue(JsonWriter& w, const std::string& value) {
  const bool bare = !value.empty() && value.find_first_of(" \t\r\n") == std::string::npos;
  const auto parsed = bare ? nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false)
                           : nlohmann::json(nlohmann::json::value_t::discarded);
  if (!parsed.is_discarded() && (parsed.is_number() || parsed.is_boolean())) {
    w.Raw(value);
  } else {
    w.String(value);
  }
}

void WriteLatency(JsonWriter& w, const LatencyPercentiles& p) {
  w.BeginObject()
      .Key("samples").Int(p.count)
      .Key("min").Int(p.min_ns)
      .Key("p50").Int(p.p50_ns)
      .Key("p90").Int(p.p90_ns)
      .Key("p99").Int(p.p99_ns)
      .Key("p999").Int(p.p999_ns)
      .Key("max").Int(p.max_ns)
      .Key("mean").Int(p.mean_ns)
      .EndObject();
}

void WriteCounts(JsonWriter& w, const std::map<std::string, int64_t>& counts) {
  w.BeginObject();
  for (const auto& [key, count] : counts) w.Key(key).Int(count);
  w.EndObject();
}

std::string HostName(const RunResult& run, int index) {
  return index >= 0 ? run.hosts[static_cast<size_t>(index)] : std::string();
}

std::vector<TimeNs> IntervalStarts(const RunResult& run) {
  std::vector<TimeNs> starts;
  starts.reserve(run.intervals.size());
  for (const IntervalSample& sample : run.intervals) starts.push_back(sample.t_start_ns);
  return starts;
}

std::string FractionCell(const std::optional<double>& fraction) {
  return fraction.has_value() ? FormatFixed(*fraction, 6) : std::string();
}

void WriteLimitLine(JsonWriter& w, const LimitLine& line) {
  w.Key("removed_bytes").Uint(line.removed_bytes)
      .Key("replicas").Int(line.replicas)
      .Key("capped").Int(line.capped)
      .Key("memory_peak_bytes").Uint(line.memory_peak_bytes)
      .Key("memory_mean_bytes").Uint(line.memory_mean_bytes);
}

// summary.json `limits` (docs/outputs.md, Limit lines).
void WriteLimits(JsonWriter& w, const RunResult& run, const RunStats& stats) {
  const LimitLines& l = run.limits;
  const LimitStats& ls = stats.limits;
  w.Key("limits").BeginObject()
      .Key("cross_domain_bytes").Uint(l.cross_domain_bytes)
      .Key("first_touch_bytes").Uint(l.first_touch_bytes)
      .Key("repeat_bytes").Uint(l.repeat_bytes)
      .Key("unavoidable_bytes").Uint(l.unavoidable_bytes)
      .Key("avoidable_bytes").Uint(l.avoidable_bytes)
      .Key("avoidable_removed_bytes").Uint(l.avoidable_removed_bytes)
      .Key("avoidable_removed_fraction");
  w.OptionalDouble(ls.avoidable_removed_fraction, 6);
  w.Key("pairs").Int(l.pairs);
  w.Key("online").BeginObject();
  WriteLimitLine(w, l.online);
  w.EndObject();
  w.Key("clairvoyant").BeginObject().Key("budget_bytes");
  if (l.clairvoyant_budget_bytes.has_value()) {
    w.Uint(*l.clairvoyant_budget_bytes);
  } else {
    w.Null();
  }
  WriteLimitLine(w, l.clairvoyant);
  w.Key("over_budget").Int(l.clairvoyant.over_budget);
  w.EndObject();
  w.Key("of_online");
  w.OptionalDouble(ls.of_online, 6);
  w.Key("of_clairvoyant");
  w.OptionalDouble(ls.of_clairvoyant, 6);
  w.Key("extra_memory_mean_bytes").Uint(ls.extra_memory_mean_bytes);
  w.Key("stored_bytes_mean").Uint(ls.stored_bytes_mean);
  w.Key("extra_memory_of_stored");
  w.OptionalDouble(ls.extra_memory_of_stored, 6);
  w.Key("memory_of_clairvoyant");
  w.OptionalDouble(ls.memory_of_clairvoyant, 6);
  w.Key("extra_gib_seconds").Double(ls.extra_gib_seconds, 3);
  w.Key("extra_gib_seconds_per_removed_gib");
  w.OptionalDouble(ls.extra_gib_seconds_per_removed_gib, 3);
  w.Key("even_share_bytes").Uint(ls.even_share_bytes);
  w.Key("busiest_host_bytes").Uint(stats.host_load.max_bytes);
  w.Key("steady_state_from_ns").Int(stats.steady_state_from_ns);
  w.Key("steady_state_max_over_mean");
  w.OptionalDouble(stats.steady_state_max_over_mean, 6);
  w.EndObject();
}

}  // namespace

std::string RenderSummaryJson(const RunResult& run, const RunStats& stats) {
  JsonWriter w;
  w.BeginObject();
  w.Key("format_version").Int(kReportFormatVersion);
  w.Key("scenario").BeginObject()
      .Key("name").String(run.scenario_name)
      .Key("path").String(run.scenario_path)
      .Key("label").String(run.label)
      .EndObject();
  w.Key("seed").Uint(run.seed);
  w.Key("sub_seeds").BeginObject();
  for (const auto& [name, seed] : run.sub_seeds) w.Key(name).Uint(seed);
  w.EndObject();
  w.Key("replay_command").String(run.replay_command);
  w.Key("duration_ns").Int(run.duration_ns);
  w.Key("time_step_ns").Int(run.time_step_ns);

  w.Key("topology").BeginObject().Key("domains").BeginArray();
  for (const std::string& domain : run.domains) w.String(domain);
  w.EndArray().Key("hosts").BeginArray();
  for (size_t h = 0; h < run.hosts.size(); ++h) {
    w.BeginObject().Key("name").String(run.hosts[h]).Key("domain").String(run.host_domains[h])
        .EndObject();
  }
  w.EndArray().EndObject();

  w.Key("knobs").BeginObject();
  for (const auto& [name, value] : run.knobs) {
    w.Key(name);
    WriteKnobValue(w, value);
  }
  w.EndObject();

  w.Key("reads").BeginObject().Key("count").Int(run.reads).Key("latency_ns");
  WriteLatency(w, stats.latency);
  w.EndObject();

  w.Key("bytes_read").BeginObject()
      .Key("same_host").Uint(run.bytes_read.same_host)
      .Key("same_domain").Uint(run.bytes_read.same_domain)
      .Key("cross_domain").Uint(run.bytes_read.cross_domain)
      .Key("total").Uint(run.bytes_read.same_host + run.bytes_read.same_domain +
                         run.bytes_read.cross_domain)
      .EndObject();

  const HostLoad& load = stats.host_load;
  w.Key("host_load").BeginObject()
      .Key("total_bytes").Uint(load.total_bytes)
      .Key("max_bytes").Uint(load.max_bytes)
      .Key("mean_bytes").Double(load.mean_bytes, 3)
      .Key("max_over_mean").Double(load.max_over_mean, 6);
  w.Key("busiest_host");
  if (load.busiest_host >= 0) {
    w.String(HostName(run, load.busiest_host));
  } else {
    w.Null();
  }
  w.Key("interval_max_over_mean_peak").Double(stats.interval_max_over_mean_peak, 6);
  w.Key("interval_max_over_mean_peak_t_ns");
  if (stats.interval_max_over_mean_peak_index >= 0) {
    w.Int(run.intervals[static_cast<size_t>(stats.interval_max_over_mean_peak_index)].t_start_ns);
  } else {
    w.Null();
  }
  w.Key("hosts").BeginArray();
  for (size_t h = 0; h < run.hosts.size(); ++h) {
    w.BeginObject()
        .Key("host").String(run.hosts[h])
        .Key("domain").String(run.host_domains[h])
        .Key("bytes_served").Uint(run.host_bytes_served[h])
        .EndObject();
  }
  w.EndArray().EndObject();

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

  const AdmissionCounts& admissions = stats.admissions;
  w.Key("admissions").BeginObject()
      .Key("accepted").Int(admissions.accepted)
      .Key("would_propose").Int(admissions.would_propose)
      .Key("rejected").Int(admissions.rejected)
      .Key("rejected_by_reason");
  WriteCounts(w, admissions.rejected_by_reason);
  w.Key("other");
  WriteCounts(w, admissions.other);
  w.EndObject();

  WriteLimits(w, run, stats);

  w.Key("local_hit_fraction");
  w.OptionalDouble(stats.local_hit_fraction, 6);
  w.Key("numa_reads").Int(run.numa_reads);
  w.Key("numa_local_reads").Int(run.numa_local_reads);
  w.Key("local_hit_oracle");
  w.OptionalDouble(stats.local_hit_oracle, 6);
  w.Key("numa_oracle_local_reads").Int(run.numa_oracle_local_reads);
  w.Key("metrics");
  WriteCounts(w, run.metrics);
  w.Key("intervals").Int(static_cast<int64_t>(run.intervals.size()));
  w.Key("requests").Int(static_cast<int64_t>(run.requests.size()));
  w.Key("events_simulated").Int(run.events_simulated);

  w.Key("scenario_echo");
  std::string echo;
  if (run.scenario_json.empty()) {
    w.Null();
  } else if (CanonicalJson(run.scenario_json, &echo).ok()) {
    w.Raw(echo);
  } else {
    // Not JSON (a driver bug or a hand-built result): keep it visible as text.
    w.String(run.scenario_json);
  }
  w.EndObject();
  return w.Finish();
}

std::string RenderTimeseriesCsv(const RunResult& run, const RunStats& stats) {
  HS_CHECK(stats.intervals.size() == run.intervals.size());
  CsvWriter csv({"t_s", "reads", "bytes_same_host", "bytes_same_domain", "bytes_cross_domain",
                 "host_load_max_bytes", "host_load_mean_bytes", "host_load_max_over_mean",
                 "replica_count", "dynamic_replica_count", "extra_memory_bytes", "copies",
                 "copy_bytes", "numa_reads", "numa_local_reads", "local_hit_fraction",
                 "numa_oracle_local_reads", "local_hit_oracle", "background_bytes",
                 "latency_p50_ms", "latency_p99_ms", "latency_p999_ms", "latency_max_ms"});
  const int decimals = SecondsDecimalsFor(IntervalStarts(run));
  // Empty latency cells for an interval without reads.
  auto ms = [](const LatencyPercentiles& p, TimeNs v) {
    return p.count > 0 ? FormatNsAsMs(v, 6) : std::string();
  };
  for (size_t i = 0; i < run.intervals.size(); ++i) {
    const IntervalSample& s = run.intervals[i];
    const IntervalStats& d = stats.intervals[i];
    csv.AddRow({FormatNsAsSeconds(s.t_start_ns, decimals), absl::StrCat(s.reads),
                absl::StrCat(s.bytes.same_host), absl::StrCat(s.bytes.same_domain),
                absl::StrCat(s.bytes.cross_domain), absl::StrCat(d.host_load.max_bytes),
                FormatFixed(d.host_load.mean_bytes, 3), FormatFixed(d.host_load.max_over_mean, 6),
                absl::StrCat(s.replica_count), absl::StrCat(s.dynamic_replica_count),
                absl::StrCat(s.extra_memory_bytes), absl::StrCat(s.copies_completed),
                absl::StrCat(s.copy_bytes), absl::StrCat(s.numa_reads),
                absl::StrCat(s.numa_local_reads), FractionCell(d.local_hit_fraction),
                absl::StrCat(s.numa_oracle_local_reads), FractionCell(d.local_hit_oracle),
                absl::StrCat(s.background_bytes), ms(d.latency, d.latency.p50_ns),
                ms(d.latency, d.latency.p99_ns), ms(d.latency, d.latency.p999_ns),
                ms(d.latency, d.latency.max_ns)});
  }
  return csv.text();
}

std::string RenderNumaCsv(const RunResult& run) {
  if (run.numa_samples.empty()) return "";
  CsvWriter csv({"t_s", "host", "head_reads", "local_reads", "local_hit_fraction",
                 "oracle_local_reads", "local_hit_oracle", "head_oracle_local_reads",
                 "head_oracle", "exchanges", "promotion_rounds", "head_trades",
                 "eligible_local_blocks", "eligible_foreign_blocks", "coldest_local_score",
                 "hottest_foreign_score"});
  const int decimals = SecondsDecimalsFor(IntervalStarts(run));
  const auto score = [](const std::optional<double>& v) {
    return v.has_value() ? FormatFixed(*v, 3) : std::string();
  };
  for (const NumaHostSample& sample : run.numa_samples) {
    const NumaIntervalStats& n = sample.stats;
    csv.AddRow({FormatNsAsSeconds(sample.t_start_ns, decimals),
                run.hosts[static_cast<size_t>(sample.host)], absl::StrCat(n.head_reads),
                absl::StrCat(n.local_reads),
                FractionCell(LocalHitFraction(n.head_reads, n.local_reads)),
                absl::StrCat(n.oracle_local_reads),
                FractionCell(LocalHitFraction(n.head_reads, n.oracle_local_reads)),
                absl::StrCat(n.head_oracle_local_reads),
                FractionCell(LocalHitFraction(n.head_reads, n.head_oracle_local_reads)),
                absl::StrCat(n.exchanges), absl::StrCat(n.promotion_rounds),
                absl::StrCat(n.head_trades), absl::StrCat(n.eligible_local_blocks),
                absl::StrCat(n.eligible_foreign_blocks),
                score(n.coldest_local_score), score(n.hottest_foreign_score)});
  }
  return csv.text();
}

std::string RenderHostLoadCsv(const RunResult& run) {
  std::vector<std::string> header = {"t_s"};
  header.insert(header.end(), run.hosts.begin(), run.hosts.end());
  CsvWriter csv(header);
  const int decimals = SecondsDecimalsFor(IntervalStarts(run));
  for (const IntervalSample& s : run.intervals) {
    std::vector<std::string> row = {FormatNsAsSeconds(s.t_start_ns, decimals)};
    for (uint64_t bytes : s.host_bytes_served) row.push_back(absl::StrCat(bytes));
    csv.AddRow(row);
  }
  return csv.text();
}

std::string RenderRequestsCsv(const RunResult& run) {
  CsvWriter csv({"id", "arrival_ns", "done_ns", "latency_ns", "prefill_instance",
                 "decode_instance", "blocks_hit", "blocks_missed", "bytes_read",
                 "cross_domain_bytes"});
  for (const RequestSample& r : run.requests) {
    csv.AddRow({absl::StrCat(r.id), absl::StrCat(r.arrival_ns), absl::StrCat(r.done_ns),
                absl::StrCat(r.done_ns - r.arrival_ns), r.prefill_instance, r.decode_instance,
                absl::StrCat(r.blocks_hit), absl::StrCat(r.blocks_missed),
                absl::StrCat(r.bytes_read), absl::StrCat(r.cross_domain_bytes)});
  }
  return csv.text();
}

std::string RenderTimingJson(const RunResult& run) {
  JsonWriter w;
  w.BeginObject()
      .Key("wall_time_ms").Int(run.wall_time_ms)
      .Key("events_simulated").Int(run.events_simulated)
      .Key("events_per_second");
  if (run.wall_time_ms > 0) {
    w.Double(static_cast<double>(run.events_simulated) * 1000.0 /
                 static_cast<double>(run.wall_time_ms),
             1);
  } else {
    w.Null();
  }
  w.Key("malloc_tunables");
  if (run.malloc_tunables.has_value()) {
    w.String(*run.malloc_tunables);
  } else {
    w.Null();
  }
  w.EndObject();
  return w.Finish();
}

absl::Status WriteRunOutputs(const RunResult& run, const std::string& out_dir) {
  HS_RETURN_IF_ERROR(ValidateRunResult(run));
  return WriteRunOutputs(run, ComputeRunStats(run), out_dir);
}

absl::Status WriteRunOutputs(const RunResult& run, const RunStats& stats,
                             const std::string& out_dir) {
  HS_RETURN_IF_ERROR(ValidateRunResult(run));
  HS_RETURN_IF_ERROR(EnsureDirectory(out_dir));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "summary.json"), RenderSummaryJson(run, stats)));
  HS_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(out_dir, "timeseries.csv"), RenderTimeseriesCsv(run, stats)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "host_load.csv"), RenderHostLoadCsv(run)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "requests.csv"), RenderRequestsCsv(run)));
  if (!run.numa_samples.empty()) {
    HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "numa.csv"), RenderNumaCsv(run)));
  }
  HS_RETURN_IF_ERROR(
      WriteTextFile(JoinPath(out_dir, "report.html"), RenderRunReportHtml(run, stats)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "timing.json"), RenderTimingJson(run)));
  return absl::OkStatus();
}

std::string FormatRunSummary(const RunResult& run) {
  return FormatRunSummary(run, ComputeRunStats(run));
}

std::string FormatRunSummary(const RunResult& run, const RunStats& stats) {
  std::string out;
  const std::string label = run.label.empty() ? "" : absl::StrCat(" [", run.label, "]");
  absl::StrAppend(&out, "scenario    ", run.scenario_name, label, "  seed ", run.seed, "\n");
  if (!run.replay_command.empty()) absl::StrAppend(&out, "replay      ", run.replay_command, "\n");
  absl::StrAppend(&out, "simulated   ", FormatNsAsSeconds(run.duration_ns, 3), " s, ",
                  run.events_simulated, " events, ", run.intervals.size(), " intervals\n");
  const LatencyPercentiles& p = stats.latency;
  absl::StrAppend(&out, "reads       ", run.reads, "  latency ms: p50 ", FormatNsAsMs(p.p50_ns),
                  "  p90 ", FormatNsAsMs(p.p90_ns), "  p99 ", FormatNsAsMs(p.p99_ns), "  p999 ",
                  FormatNsAsMs(p.p999_ns), "  max ", FormatNsAsMs(p.max_ns), "\n");
  absl::StrAppend(&out, "bytes read  same-host ", FormatBytesIec(run.bytes_read.same_host),
                  ", same-domain ", FormatBytesIec(run.bytes_read.same_domain),
                  ", cross-domain ", FormatBytesIec(run.bytes_read.cross_domain), "\n");
  const HostLoad& load = stats.host_load;
  if (load.busiest_host >= 0) {
    absl::StrAppend(&out, "host load   busiest ", HostName(run, load.busiest_host), " (",
                    FormatBytesIec(load.max_bytes), " served), max/mean ",
                    FormatFixed(load.max_over_mean, 3));
    if (stats.interval_max_over_mean_peak_index >= 0) {
      const TimeNs t =
          run.intervals[static_cast<size_t>(stats.interval_max_over_mean_peak_index)].t_start_ns;
      absl::StrAppend(&out, ", interval peak ", FormatFixed(stats.interval_max_over_mean_peak, 3),
                      " at ", FormatNsAsSeconds(t, 3), " s");
    }
    out += "\n";
  } else {
    out += "host load   no bytes served\n";
  }
  absl::StrAppend(&out, "copies      ", run.copies_completed, " completed, ", run.copies_failed,
                  " failed, ", FormatBytesIec(run.copy_bytes), " (",
                  FormatBytesIec(run.copy_bytes_cross_domain), " cross-domain)\n");
  absl::StrAppend(&out, "extra mem   peak ", FormatBytesIec(run.extra_memory_peak_bytes),
                  ", final ", FormatBytesIec(run.extra_memory_final_bytes), ", mean ",
                  FormatBytesIec(stats.limits.extra_memory_mean_bytes), " (",
                  stats.limits.extra_memory_of_stored.has_value()
                      ? FormatFixed(*stats.limits.extra_memory_of_stored, 4)
                      : std::string("n/a"),
                  " of the stored bytes)\n");
  const LimitLines& l = run.limits;
  auto fraction = [](const std::optional<double>& f) {
    return f.has_value() ? FormatFixed(*f, 4) : std::string("n/a");
  };
  absl::StrAppend(&out, "cross-dom   first-touch ", FormatBytesIec(l.first_touch_bytes),
                  ", repeat ", FormatBytesIec(l.repeat_bytes), "; avoidable ",
                  FormatBytesIec(l.avoidable_bytes), ", removed ",
                  fraction(stats.limits.avoidable_removed_fraction), "\n");
  absl::StrAppend(&out, "limits      online removes ", FormatBytesIec(l.online.removed_bytes),
                  " (run: ", fraction(stats.limits.of_online), " of it), clairvoyant removes ",
                  FormatBytesIec(l.clairvoyant.removed_bytes), " (run: ",
                  fraction(stats.limits.of_clairvoyant), ") holding ",
                  FormatBytesIec(l.clairvoyant.memory_mean_bytes), " on average\n");
  const AdmissionCounts& a = stats.admissions;
  absl::StrAppend(&out, "admissions  accepted ", a.accepted, ", would_propose ", a.would_propose,
                  ", rejected ", a.rejected);
  if (!a.rejected_by_reason.empty()) {
    // Most frequent reasons first; equal counts in reason order.
    std::vector<std::pair<std::string, int64_t>> reasons(a.rejected_by_reason.begin(),
                                                         a.rejected_by_reason.end());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& x, const auto& y) { return x.second > y.second; });
    out += " (";
    for (size_t i = 0; i < reasons.size() && i < 4; ++i) {
      absl::StrAppend(&out, i > 0 ? ", " : "", reasons[i].first, " ", reasons[i].second);
    }
    if (reasons.size() > 4) out += ", ...";
    out += ")";
  }
  out += "\n";
  absl::StrAppend(&out, "numa        local-hit fraction ",
                  stats.local_hit_fraction.has_value() ? FormatFixed(*stats.local_hit_fraction, 4)
                                                       : std::string("n/a"),
                  " (", run.numa_reads, " head reads), oracle ",
                  stats.local_hit_oracle.has_value() ? FormatFixed(*stats.local_hit_oracle, 4)
                                                     : std::string("n/a"),
                  "\n");
  if (!run.requests.empty()) {
    std::vector<TimeNs> request_latencies;
    request_latencies.reserve(run.requests.size());
    for (const RequestSample& r : run.requests) request_latencies.push_back(r.done_ns - r.arrival_ns);
    const LatencyPercentiles rp = ComputeLatencyPercentiles(std::move(request_latencies));
    absl::StrAppend(&out, "requests    ", run.requests.size(), "  latency ms: p50 ",
                    FormatNsAsMs(rp.p50_ns), "  p99 ", FormatNsAsMs(rp.p99_ns), "\n");
  }
  absl::StrAppend(&out, "wall time   ", run.wall_time_ms, " ms");
  if (run.wall_time_ms > 0) {
    absl::StrAppend(&out, " (",
                    FormatFixed(static_cast<double>(run.events_simulated) /
                                    static_cast<double>(run.wall_time_ms) / 1000.0,
                                3),
                    " M events/s)");
  }
  out += "\n";
  return out;
}

}  // namespace heatsink::sim
