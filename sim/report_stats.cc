// File: sim/report_stats.cc
#include "sim/report_stats.h"

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/replication/replication_knobs.h"
#include "sim/report_format.h"

namespace heatsink::sim {

absl::Status ValidateRunResult(const RunResult& run) {
  const size_t hosts = run.hosts.size();
  if (run.host_domains.size() != hosts) {
    return absl::InvalidArgumentError(absl::StrCat("run result: ", hosts, " hosts but ",
                                                   run.host_domains.size(), " host domains"));
  }
  if (run.host_bytes_served.size() != hosts) {
    return absl::InvalidArgumentError(absl::StrCat("run result: ", hosts, " hosts but ",
                                                   run.host_bytes_served.size(),
                                                   " entries in host_bytes_served"));
  }
  if (!run.intervals.empty() && run.time_step_ns <= 0) {
    return absl::InvalidArgumentError("run result: intervals without a positive time_step_ns");
  }
  for (size_t i = 0; i < run.intervals.size(); ++i) {
    const IntervalSample& sample = run.intervals[i];
    if (sample.host_bytes_served.size() != hosts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run result: interval ", i, " has ", sample.host_bytes_served.size(),
          " host_bytes_served entries for ", hosts, " hosts"));
    }
    if (i > 0 && sample.t_start_ns <= run.intervals[i - 1].t_start_ns) {
      return absl::InvalidArgumentError(
          absl::StrCat("run result: interval ", i, " does not start after interval ", i - 1));
    }
  }
  return absl::OkStatus();
}

TimeNs NearestRankPercentile(const std::vector<TimeNs>& sorted, int64_t parts_per_million) {
  HS_CHECK(parts_per_million > 0 && parts_per_million <= 1'000'000);
  if (sorted.empty()) return 0;
  const auto n = static_cast<unsigned __int128>(sorted.size());
  const auto q = static_cast<unsigned __int128>(parts_per_million);
  // ceil(q * n / 1e6) without floating point.
  auto rank = static_cast<size_t>((q * n + 999'999) / 1'000'000);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

LatencyPercentiles PercentilesOfSorted(const std::vector<TimeNs>& sorted) {
  LatencyPercentiles p;
  if (sorted.empty()) return p;
  p.count = static_cast<int64_t>(sorted.size());
  p.min_ns = sorted.front();
  p.max_ns = sorted.back();
  p.p50_ns = NearestRankPercentile(sorted, kP50);
  p.p90_ns = NearestRankPercentile(sorted, kP90);
  p.p99_ns = NearestRankPercentile(sorted, kP99);
  p.p999_ns = NearestRankPercentile(sorted, kP999);
  __int128 sum = 0;
  for (TimeNs v : sorted) sum += v;
  // Floor division, also for a (malformed) negative sum.
  __int128 mean = sum / p.count;
  if (sum % p.count != 0 && sum < 0) --mean;
  p.mean_ns = static_cast<TimeNs>(mean);
  return p;
}

LatencyPercentiles ComputeLatencyPercentiles(std::vector<TimeNs> latencies_ns) {
  std::sort(latencies_ns.begin(), latencies_ns.end());
  return PercentilesOfSorted(latencies_ns);
}

HostLoad ComputeHostLoad(const std::vector<uint64_t>& bytes_per_host) {
  HostLoad load;
  for (size_t h = 0; h < bytes_per_host.size(); ++h) {
    load.total_bytes += bytes_per_host[h];
    if (load.busiest_host < 0 || bytes_per_host[h] > load.max_bytes) {
      load.max_bytes = bytes_per_host[h];
      load.busiest_host = static_cast<int>(h);
    }
  }
  if (load.total_bytes == 0) {
    load.max_bytes = 0;
    load.busiest_host = -1;
    return load;
  }
  const auto hosts = static_cast<double>(bytes_per_host.size());
  load.mean_bytes = static_cast<double>(load.total_bytes) / hosts;
  load.max_over_mean = static_cast<double>(load.max_bytes) * hosts /
                       static_cast<double>(load.total_bytes);
  return load;
}

std::optional<double> LocalHitFraction(int64_t numa_reads, int64_t numa_local_reads) {
  if (numa_reads <= 0) return std::nullopt;
  return static_cast<double>(numa_local_reads) / static_cast<double>(numa_reads);
}

AdmissionCounts CountAdmissions(const std::map<std::string, int64_t>& decisions_by_outcome) {
  AdmissionCounts counts;
  constexpr absl::string_view kRejectedPrefix = "rejected/";
  for (const auto& [key, count] : decisions_by_outcome) {
    if (key == "accepted") {
      counts.accepted += count;
    } else if (key == "would_propose") {
      counts.would_propose += count;
    } else if (absl::StartsWith(key, "dropped/")) {
      counts.dropped += count;
    } else if (absl::StartsWith(key, kRejectedPrefix) && key.size() > kRejectedPrefix.size()) {
      counts.rejected_by_reason[key.substr(kRejectedPrefix.size())] += count;
      counts.rejected += count;
    } else {
      counts.other[key] += count;
    }
  }
  return counts;
}

namespace {

// A knob's value from the run's echo; `fallback` when absent or unreadable.
int64_t KnobOr(const RunResult& run, absl::string_view name, int64_t fallback) {
  for (const auto& [knob, value] : run.knobs) {
    int64_t v = 0;
    if (knob == name && absl::SimpleAtoi(value, &v)) return v;
  }
  return fallback;
}

}  // namespace

namespace {

std::optional<double> Ratio(uint64_t num, uint64_t den) {
  if (den == 0) return std::nullopt;
  return static_cast<double>(num) / static_cast<double>(den);
}

}  // namespace

LimitStats ComputeLimitStats(const RunResult& run) {
  const LimitLines& l = run.limits;
  LimitStats out;
  out.avoidable_removed_fraction = Ratio(l.avoidable_removed_bytes, l.avoidable_bytes);
  out.of_online = Ratio(l.avoidable_removed_bytes, l.online.removed_bytes);
  out.of_clairvoyant = Ratio(l.avoidable_removed_bytes, l.clairvoyant.removed_bytes);
  unsigned __int128 extra_byte_ns = 0;
  unsigned __int128 stored_byte_ns = 0;
  for (const IntervalSample& s : run.intervals) {
    const DurationNs length =
        std::clamp<DurationNs>(run.duration_ns - s.t_start_ns, 0, run.time_step_ns);
    extra_byte_ns += static_cast<unsigned __int128>(s.extra_memory_bytes) *
                     static_cast<unsigned __int128>(length);
    stored_byte_ns +=
        static_cast<unsigned __int128>(s.stored_bytes) * static_cast<unsigned __int128>(length);
  }
  if (run.duration_ns > 0) {
    const auto duration = static_cast<unsigned __int128>(run.duration_ns);
    out.extra_memory_mean_bytes = static_cast<uint64_t>(extra_byte_ns / duration);
    out.stored_bytes_mean = static_cast<uint64_t>(stored_byte_ns / duration);
  }
  out.extra_memory_of_stored = Ratio(out.extra_memory_mean_bytes, out.stored_bytes_mean);
  out.memory_of_clairvoyant =
      Ratio(out.extra_memory_mean_bytes, l.clairvoyant.memory_mean_bytes);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  out.extra_gib_seconds = static_cast<double>(extra_byte_ns) / kGiB / 1e9;
  if (l.avoidable_removed_bytes > 0) {
    out.extra_gib_seconds_per_removed_gib =
        out.extra_gib_seconds / (static_cast<double>(l.avoidable_removed_bytes) / kGiB);
  }
  uint64_t served = 0;
  for (uint64_t b : run.host_bytes_served) served += b;
  if (!run.hosts.empty()) out.even_share_bytes = served / run.hosts.size();
  return out;
}

std::optional<double> AvoidableRemovedVsOff(const RunResult& run, const RunResult& off) {
  if (off.limits.repeat_bytes == 0) return std::nullopt;
  return 1.0 - static_cast<double>(run.limits.repeat_bytes) /
                   static_cast<double>(off.limits.repeat_bytes);
}

const RunResult* FindOffRun(const std::vector<RunResult>& runs) {
  for (const RunResult& r : runs) {
    for (const auto& [knob, value] : r.knobs) {
      if (knob == "dynamic_replication_mode" && value == "off") return &r;
    }
  }
  return nullptr;
}

TimeNs SteadyStateFromNs(const RunResult& run) {
  const ReplicationKnobs defaults;
  const int64_t window_s = KnobOr(run, "dynamic_replication_heat_window_seconds",
                                  defaults.dynamic_replication_heat_window_seconds);
  const int64_t cooldown_ms = KnobOr(run, "dynamic_replication_admission_cooldown_ms",
                                     defaults.dynamic_replication_admission_cooldown_ms);
  return SecToNs(window_s) + MsToNs(cooldown_ms);
}

RunStats ComputeRunStats(const RunResult& run) {
  HS_CHECK_OK(ValidateRunResult(run));
  RunStats stats;
  stats.sorted_latencies_ns = run.read_latencies_ns;
  std::sort(stats.sorted_latencies_ns.begin(), stats.sorted_latencies_ns.end());
  stats.latency = PercentilesOfSorted(stats.sorted_latencies_ns);
  stats.host_load = ComputeHostLoad(run.host_bytes_served);
  stats.local_hit_fraction = LocalHitFraction(run.numa_reads, run.numa_local_reads);
  stats.local_hit_oracle = LocalHitFraction(run.numa_reads, run.numa_oracle_local_reads);
  stats.admissions = CountAdmissions(run.decisions_by_outcome);
  stats.intervals.reserve(run.intervals.size());
  // Latencies are in completion order and every completed read is counted in
  // the interval it completed in, so each interval's reads are one run of
  // them (a result from elsewhere whose counts do not add up has none).
  uint64_t counted = 0;
  for (const IntervalSample& sample : run.intervals) counted += static_cast<uint64_t>(sample.reads);
  const bool split_latencies = counted == run.read_latencies_ns.size();
  size_t first_read = 0;
  std::vector<TimeNs> interval_latencies;
  for (size_t i = 0; i < run.intervals.size(); ++i) {
    const IntervalSample& sample = run.intervals[i];
    LatencyPercentiles latency;
    if (split_latencies && sample.reads > 0) {
      const auto begin = run.read_latencies_ns.begin() + static_cast<ptrdiff_t>(first_read);
      interval_latencies.assign(begin, begin + sample.reads);
      std::sort(interval_latencies.begin(), interval_latencies.end());
      latency = PercentilesOfSorted(interval_latencies);
      first_read += static_cast<size_t>(sample.reads);
    }
    IntervalStats interval{
        .host_load = ComputeHostLoad(sample.host_bytes_served),
        .latency = latency,
        .local_hit_fraction = LocalHitFraction(sample.numa_reads, sample.numa_local_reads),
        .local_hit_oracle = LocalHitFraction(sample.numa_reads, sample.numa_oracle_local_reads),
    };
    if (interval.host_load.busiest_host >= 0 &&
        (stats.interval_max_over_mean_peak_index < 0 ||
         interval.host_load.max_over_mean > stats.interval_max_over_mean_peak)) {
      stats.interval_max_over_mean_peak = interval.host_load.max_over_mean;
      stats.interval_max_over_mean_peak_index = static_cast<int>(i);
    }
    stats.intervals.push_back(std::move(interval));
  }
  stats.steady_state_from_ns = SteadyStateFromNs(run);
  double steady_sum = 0;
  int64_t steady_count = 0;
  for (size_t i = 0; i < run.intervals.size(); ++i) {
    if (run.intervals[i].t_start_ns < stats.steady_state_from_ns) continue;
    if (stats.intervals[i].host_load.busiest_host < 0) continue;
    steady_sum += stats.intervals[i].host_load.max_over_mean;
    ++steady_count;
  }
  if (steady_count > 0) stats.steady_state_max_over_mean = steady_sum / steady_count;
  stats.limits = ComputeLimitStats(run);
  stats.extra_memory_mean_bytes = static_cast<double>(stats.limits.extra_memory_mean_bytes);
  if (auto it = run.metrics.find("sim_read_misses_total"); it != run.metrics.end()) {
    stats.read_misses = it->second;
  }
  return stats;
}

std::string RunLabel(const RunResult& run, size_t index) {
  if (!run.label.empty()) return run.label;
  return absl::StrCat("run", index + 1);
}

namespace {

std::string FractionCell(const std::optional<double>& fraction) {
  return fraction.has_value() ? FormatFixed(*fraction, 4) : "n/a";
}

}  // namespace

std::vector<CompareRow> BuildCompareRows(const std::vector<RunResult>& runs,
                                         const std::vector<RunStats>& stats) {
  HS_CHECK(runs.size() == stats.size());
  std::vector<CompareRow> rows;
  auto add = [&](std::string metric, auto cell_of) {
    CompareRow row{.metric = std::move(metric), .cells = {}};
    for (size_t i = 0; i < runs.size(); ++i) row.cells.push_back(cell_of(runs[i], stats[i]));
    rows.push_back(std::move(row));
  };
  using R = const RunResult&;
  using S = const RunStats&;
  add("latency p50 (ms)", [](R, S s) { return FormatNsAsMs(s.latency.p50_ns); });
  add("latency p90 (ms)", [](R, S s) { return FormatNsAsMs(s.latency.p90_ns); });
  add("latency p99 (ms)", [](R, S s) { return FormatNsAsMs(s.latency.p99_ns); });
  add("latency p999 (ms)", [](R, S s) { return FormatNsAsMs(s.latency.p999_ns); });
  add("latency max (ms)", [](R, S s) { return FormatNsAsMs(s.latency.max_ns); });
  add("worst interval p99 (ms)", [](R, S s) {
    TimeNs worst = 0;
    for (const IntervalStats& i : s.intervals) worst = std::max(worst, i.latency.p99_ns);
    return FormatNsAsMs(worst);
  });
  add("reads", [](R r, S) { return absl::StrCat(r.reads); });
  add("bytes cross-domain", [](R r, S) { return FormatBytesIec(r.bytes_read.cross_domain); });
  // Limit lines (sim/limit_lines.h): the split, the removal against off and
  // against the two upper lines, and what it costs.
  const RunResult* off = FindOffRun(runs);
  add("cross-domain first-touch", [](R r, S) { return FormatBytesIec(r.limits.first_touch_bytes); });
  add("cross-domain repeat", [](R r, S) { return FormatBytesIec(r.limits.repeat_bytes); });
  add("avoidable removed vs off", [off](R r, S) {
    return off == nullptr ? std::string("n/a") : FractionCell(AvoidableRemovedVsOff(r, *off));
  });
  add("avoidable removed (own reads)",
      [](R, S s) { return FractionCell(s.limits.avoidable_removed_fraction); });
  add("online line removes", [](R r, S) { return FormatBytesIec(r.limits.online.removed_bytes); });
  add("of online line", [](R, S s) { return FractionCell(s.limits.of_online); });
  add("clairvoyant line removes",
      [](R r, S) { return FormatBytesIec(r.limits.clairvoyant.removed_bytes); });
  add("of clairvoyant line", [](R, S s) { return FractionCell(s.limits.of_clairvoyant); });
  add("clairvoyant memory mean",
      [](R r, S) { return FormatBytesIec(r.limits.clairvoyant.memory_mean_bytes); });
  add("bottleneck host", [](R r, S s) {
    return s.host_load.busiest_host >= 0 ? r.hosts[static_cast<size_t>(s.host_load.busiest_host)]
                                         : std::string("n/a");
  });
  add("bottleneck host bytes", [](R, S s) { return FormatBytesIec(s.host_load.max_bytes); });
  add("even share per host", [](R, S s) { return FormatBytesIec(s.limits.even_share_bytes); });
  add("host load max/mean", [](R, S s) { return FormatFixed(s.host_load.max_over_mean, 3); });
  add("host load max/mean (steady)", [](R, S s) {
    if (!s.steady_state_max_over_mean.has_value()) return std::string("n/a");
    return absl::StrCat(FormatFixed(*s.steady_state_max_over_mean, 3), " (t >= ",
                        s.steady_state_from_ns / kNsPerSec, " s)");
  });
  add("read misses", [](R, S s) { return absl::StrCat(s.read_misses); });
  add("copies", [](R r, S) { return absl::StrCat(r.copies_completed); });
  add("copy bytes", [](R r, S) { return FormatBytesIec(r.copy_bytes); });
  add("copy bytes cross-domain",
      [](R r, S) { return FormatBytesIec(r.copy_bytes_cross_domain); });
  add("extra memory peak", [](R r, S) { return FormatBytesIec(r.extra_memory_peak_bytes); });
  add("extra memory mean", [](R, S s) { return FormatBytesIec(s.limits.extra_memory_mean_bytes); });
  add("extra memory mean / stored", [](R, S s) { return FractionCell(s.limits.extra_memory_of_stored); });
  add("extra memory mean / clairvoyant's",
      [](R, S s) { return FractionCell(s.limits.memory_of_clairvoyant); });
  add("extra GiB-s per avoidable GiB removed", [](R, S s) {
    return s.limits.extra_gib_seconds_per_removed_gib.has_value()
               ? FormatFixed(*s.limits.extra_gib_seconds_per_removed_gib, 3)
               : std::string("n/a");
  });
  add("would-propose", [](R, S s) { return absl::StrCat(s.admissions.would_propose); });
  add("accepted", [](R, S s) { return absl::StrCat(s.admissions.accepted); });
  add("dynamic replicas dropped", [](R, S s) { return absl::StrCat(s.admissions.dropped); });
  add("local-hit fraction", [](R, S s) { return FractionCell(s.local_hit_fraction); });
  add("local-hit oracle (whole blocks)", [](R, S s) { return FractionCell(s.local_hit_oracle); });
  return rows;
}

}  // namespace heatsink::sim
