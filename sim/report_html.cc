// File: sim/report_html.cc
#include "sim/report_html.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"
#include "sim/report_format.h"
#include "sim/report_svg.h"

namespace heatsink::sim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

constexpr const char* kStyle = R"css(
body { font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 20px; margin-bottom: 4px; }
h2 { font-size: 16px; margin-top: 28px; }
.meta { color: #555; margin: 2px 0; }
pre { background: #f5f5f5; padding: 8px; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; }
th { background: #f0f0f0; }
td { text-align: right; font-variant-numeric: tabular-nums; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 16px 0; }
figcaption { color: #555; font-size: 12px; }
details { margin: 8px 0; }
)css";

// Time series x values: interval start in seconds.
std::vector<double> IntervalSeconds(const RunResult& run) {
  std::vector<double> x;
  x.reserve(run.intervals.size());
  for (const IntervalSample& s : run.intervals) {
    x.push_back(static_cast<double>(s.t_start_ns) / static_cast<double>(kNsPerSec));
  }
  return x;
}

// Bytes in one interval as MB/s (10^6 bytes per second).
double MegabytesPerSecond(uint64_t bytes, DurationNs step_ns) {
  return static_cast<double>(bytes) * 1000.0 / static_cast<double>(step_ns);
}

// Percent-encodes everything but RFC 3986 unreserved characters so that a
// run label is safe as a relative link.
std::string UrlPathEscape(absl::string_view text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, absl::StrFormat("%%%02X", u));
    }
  }
  return out;
}

std::string OptionalFraction(const std::optional<double>& f) {
  return f.has_value() ? FormatFixed(*f, 4) : std::string("n/a");
}

std::string KeyNumbersTable(const RunResult& run, const RunStats& stats) {
  const LatencyPercentiles& p = stats.latency;
  const HostLoad& load = stats.host_load;
  std::vector<std::vector<std::string>> rows = {
      {"reads", absl::StrCat(run.reads)},
      {"read latency p50 / p90 / p99 / p999 (ms)",
       absl::StrCat(FormatNsAsMs(p.p50_ns), " / ", FormatNsAsMs(p.p90_ns), " / ",
                    FormatNsAsMs(p.p99_ns), " / ", FormatNsAsMs(p.p999_ns))},
      {"bytes read same-host", FormatBytesIec(run.bytes_read.same_host)},
      {"bytes read same-domain", FormatBytesIec(run.bytes_read.same_domain)},
      {"bytes read cross-domain", FormatBytesIec(run.bytes_read.cross_domain)},
      {"cross-domain first-touch / repeat",
       absl::StrCat(FormatBytesIec(run.limits.first_touch_bytes), " / ",
                    FormatBytesIec(run.limits.repeat_bytes))},
      {"avoidable bytes removed", absl::StrCat(FormatBytesIec(run.limits.avoidable_removed_bytes),
                                               " of ", FormatBytesIec(run.limits.avoidable_bytes),
                                               " (", OptionalFraction(stats.limits.avoidable_removed_fraction), ")")},
      {"of the online / clairvoyant line",
       absl::StrCat(OptionalFraction(stats.limits.of_online), " / ",
                    OptionalFraction(stats.limits.of_clairvoyant))},
      {"extra memory mean (of the stored bytes)",
       absl::StrCat(FormatBytesIec(stats.limits.extra_memory_mean_bytes), " (",
                    OptionalFraction(stats.limits.extra_memory_of_stored), ")")},
      {"busiest host",
       load.busiest_host >= 0
           ? absl::StrCat(run.hosts[static_cast<size_t>(load.busiest_host)], " (",
                          FormatBytesIec(load.max_bytes), ")")
           : std::string("n/a")},
      {"host load max/mean (whole run)", FormatFixed(load.max_over_mean, 3)},
      {"host load max/mean (peak interval)", FormatFixed(stats.interval_max_over_mean_peak, 3)},
      {"copies completed / failed",
       absl::StrCat(run.copies_completed, " / ", run.copies_failed)},
      {"copy bytes (cross-domain)", absl::StrCat(FormatBytesIec(run.copy_bytes), " (",
                                                 FormatBytesIec(run.copy_bytes_cross_domain),
                                                 ")")},
      {"extra memory peak / final", absl::StrCat(FormatBytesIec(run.extra_memory_peak_bytes),
                                                 " / ",
                                                 FormatBytesIec(run.extra_memory_final_bytes))},
      {"admissions accepted / would_propose / rejected",
       absl::StrCat(stats.admissions.accepted, " / ", stats.admissions.would_propose, " / ",
                    stats.admissions.rejected)},
      {"local-hit fraction", OptionalFraction(stats.local_hit_fraction)},
      {"local-hit oracle (whole blocks)", OptionalFraction(stats.local_hit_oracle)},
      {"events simulated", absl::StrCat(run.events_simulated)},
  };
  return RenderHtmlTable({"metric", "value"}, rows);
}

std::string HostHeatmap(const RunResult& run) {
  std::vector<std::string> rows;
  std::vector<std::vector<double>> values(run.hosts.size());
  for (size_t h = 0; h < run.hosts.size(); ++h) {
    rows.push_back(absl::StrCat(run.hosts[h], " (", run.host_domains[h], ")"));
    values[h].reserve(run.intervals.size());
    for (const IntervalSample& s : run.intervals) {
      values[h].push_back(MegabytesPerSecond(s.host_bytes_served[h], run.time_step_ns));
    }
  }
  HeatmapOptions options{.title = "Per-host read load over time",
                         .x_label = "time (s)",
                         .y_label = "host (domain)",
                         .value_label = "MB/s served"};
  const double step_s = run.time_step_ns > 0 ? static_cast<double>(run.time_step_ns) /
                                                   static_cast<double>(kNsPerSec)
                                             : 1.0;
  return RenderHeatmapSvg(options, rows, IntervalSeconds(run), step_s, values);
}

LineChartOptions CdfOptions() {
  return LineChartOptions{.title = "Read latency CDF",
                          .x_label = "read latency (ms, log scale)",
                          .y_label = "fraction of reads <= x",
                          .log_x = true,
                          .y_max = 1.0};
}

std::string CrossDomainChart(const RunResult& run) {
  const std::vector<double> x = IntervalSeconds(run);
  PlotSeries cross{.name = "cross-domain", .x = x, .y = {}};
  PlotSeries domain{.name = "same-domain", .x = x, .y = {}};
  PlotSeries host{.name = "same-host", .x = x, .y = {}};
  for (const IntervalSample& s : run.intervals) {
    cross.y.push_back(MegabytesPerSecond(s.bytes.cross_domain, run.time_step_ns));
    domain.y.push_back(MegabytesPerSecond(s.bytes.same_domain, run.time_step_ns));
    host.y.push_back(MegabytesPerSecond(s.bytes.same_host, run.time_step_ns));
  }
  return RenderLineChartSvg({.title = "Bytes read by distance over time (cross-domain first)",
                             .x_label = "time (s)",
                             .y_label = "MB/s"},
                            {cross, domain, host});
}

std::string ReplicaChart(const RunResult& run) {
  const std::vector<double> x = IntervalSeconds(run);
  PlotSeries dynamic{.name = "dynamic replicas", .x = x, .y = {}};
  PlotSeries all{.name = "all MEMORY replicas", .x = x, .y = {}};
  for (const IntervalSample& s : run.intervals) {
    dynamic.y.push_back(static_cast<double>(s.dynamic_replica_count));
    all.y.push_back(static_cast<double>(s.replica_count));
  }
  return RenderLineChartSvg(
      {.title = "Replica count over time", .x_label = "time (s)", .y_label = "replicas"},
      {dynamic, all});
}

// Read latency percentiles per interval with the copies' bytes behind them,
// so tail latency and copy bursts can be lined up.
std::string LatencyOverTimeChart(const RunResult& run, const RunStats& stats) {
  const std::vector<double> x = IntervalSeconds(run);
  PlotSeries p50{.name = "p50", .x = x, .y = {}};
  PlotSeries p99{.name = "p99", .x = x, .y = {}};
  PlotSeries p999{.name = "p99.9", .x = x, .y = {}};
  PlotSeries max{.name = "max", .x = x, .y = {}};
  auto ms = [](const LatencyPercentiles& p, TimeNs v) {
    return p.count > 0 ? static_cast<double>(v) / 1e6 : kNaN;
  };
  for (const IntervalStats& s : stats.intervals) {
    p50.y.push_back(ms(s.latency, s.latency.p50_ns));
    p99.y.push_back(ms(s.latency, s.latency.p99_ns));
    p999.y.push_back(ms(s.latency, s.latency.p999_ns));
    max.y.push_back(ms(s.latency, s.latency.max_ns));
  }
  LineChartOptions options{.title = "Read latency per interval, copy traffic behind it",
                           .x_label = "time (s)",
                           .y_label = "ms"};
  options.bars_name = "copy bytes moved";
  options.bars_unit = "MB/s";
  options.bars_x = x;
  for (const IntervalSample& s : run.intervals) {
    options.bars_y.push_back(MegabytesPerSecond(s.background_bytes, run.time_step_ns));
  }
  return RenderLineChartSvg(options, {p50, p99, p999, max});
}

std::string LocalHitChart(const RunResult& run, const RunStats& stats) {
  PlotSeries fraction{.name = "local-hit fraction", .x = IntervalSeconds(run), .y = {}};
  PlotSeries oracle{.name = "oracle (whole blocks)", .x = IntervalSeconds(run), .y = {}};
  for (const IntervalStats& s : stats.intervals) {
    fraction.y.push_back(s.local_hit_fraction.value_or(kNaN));
    oracle.y.push_back(s.local_hit_oracle.value_or(kNaN));
  }
  return RenderLineChartSvg({.title = "NUMA local-hit fraction over time",
                             .x_label = "time (s)",
                             .y_label = "local-hit fraction",
                             .y_max = 1.0},
                            {fraction, oracle});
}

std::string RunTitle(const RunResult& run) {
  return run.label.empty() ? run.scenario_name
                           : absl::StrCat(run.scenario_name, " [", run.label, "]");
}

}  // namespace

std::string RenderHtmlPage(absl::string_view title, absl::string_view body_html) {
  return absl::StrCat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
                      "<title>", HtmlEscape(title), "</title>\n<style>", kStyle,
                      "</style>\n</head>\n<body>\n", body_html, "</body>\n</html>\n");
}

std::string RenderHtmlTable(const std::vector<std::string>& header,
                            const std::vector<std::vector<std::string>>& rows) {
  std::string out = "<table>\n<tr>";
  for (const std::string& cell : header) absl::StrAppend(&out, "<th>", HtmlEscape(cell), "</th>");
  out += "</tr>\n";
  for (const auto& row : rows) {
    HS_CHECK(row.size() == header.size());
    out += "<tr>";
    for (const std::string& cell : row) absl::StrAppend(&out, "<td>", HtmlEscape(cell), "</td>");
    out += "</tr>\n";
  }
  out += "</table>\n";
  return out;
}

std::string RenderFigure(absl::string_view svg, absl::string_view caption) {
  std::string out = absl::StrCat("<figure>\n", svg);
  if (!caption.empty()) absl::StrAppend(&out, "<figcaption>", HtmlEscape(caption), "</figcaption>\n");
  out += "</figure>\n";
  return out;
}

std::string RenderRunReportHtml(const RunResult& run, const RunStats& stats) {
  std::string body;
  absl::StrAppend(&body, "<h1>", HtmlEscape(RunTitle(run)), "</h1>\n");
  absl::StrAppend(&body, "<p class=\"meta\">seed ", run.seed, " &middot; simulated ",
                  FormatNsAsSeconds(run.duration_ns, 3), " s &middot; ", run.hosts.size(),
                  " hosts in ", run.domains.size(), " domains &middot; ", run.intervals.size(),
                  " intervals of ", FormatNsAsMs(run.time_step_ns), " ms</p>\n");
  if (!run.scenario_path.empty()) {
    absl::StrAppend(&body, "<p class=\"meta\">scenario file ", HtmlEscape(run.scenario_path),
                    "</p>\n");
  }
  absl::StrAppend(&body, "<p class=\"meta\">replay:</p>\n<pre>", HtmlEscape(run.replay_command),
                  "</pre>\n");
  body += "<h2>Key numbers</h2>\n";
  body += KeyNumbersTable(run, stats);

  body += "<h2>Plots</h2>\n";
  body += RenderFigure(HostHeatmap(run),
                       "Bytes served by each host per interval; the bottleneck is the brightest row.");
  body += RenderFigure(
      RenderLineChartSvg(CdfOptions(), {LatencyCdfSeries("", stats.sorted_latencies_ns)}),
      absl::StrCat("Every object read (", stats.latency.count, " samples)."));
  body += RenderFigure(CrossDomainChart(run), "");
  body += RenderFigure(LatencyOverTimeChart(run, stats),
                       "Object reads completed in each interval; gaps mark intervals without "
                       "reads. Grey bars: bytes every kind of copy moved in the interval.");
  body += RenderFigure(ReplicaChart(run), "Readable MEMORY replicas at the end of each interval.");
  body += RenderFigure(LocalHitChart(run, stats),
                       "Head reads served from the preferred NUMA node; gaps mark intervals "
                       "without head reads.");

  body += "<h2>Admissions by outcome</h2>\n";
  std::vector<std::vector<std::string>> admission_rows = {
      {"accepted", absl::StrCat(stats.admissions.accepted)},
      {"would_propose", absl::StrCat(stats.admissions.would_propose)}};
  for (const auto& [reason, count] : stats.admissions.rejected_by_reason) {
    admission_rows.push_back({absl::StrCat("rejected: ", reason), absl::StrCat(count)});
  }
  for (const auto& [key, count] : stats.admissions.other) {
    admission_rows.push_back({key, absl::StrCat(count)});
  }
  body += RenderHtmlTable({"outcome", "decisions"}, admission_rows);

  body += "<details><summary>Seeds and knobs</summary>\n";
  std::vector<std::vector<std::string>> seed_rows = {{"seed", absl::StrCat(run.seed)}};
  for (const auto& [name, seed] : run.sub_seeds) seed_rows.push_back({name, absl::StrCat(seed)});
  body += RenderHtmlTable({"seed", "value"}, seed_rows);
  std::vector<std::vector<std::string>> knob_rows;
  for (const auto& [name, value] : run.knobs) knob_rows.push_back({name, value});
  body += RenderHtmlTable({"knob", "value"}, knob_rows);
  body += "</details>\n";
  return RenderHtmlPage(absl::StrCat("Heatsink run: ", RunTitle(run)), body);
}

std::string RenderCompareReportHtml(const std::vector<RunResult>& runs,
                                    const std::vector<RunStats>& stats) {
  HS_CHECK(runs.size() == stats.size());
  std::string body;
  const std::string scenario = runs.empty() ? std::string() : runs.front().scenario_name;
  absl::StrAppend(&body, "<h1>Compare: ", HtmlEscape(scenario), "</h1>\n");
  if (!runs.empty()) {
    absl::StrAppend(&body, "<p class=\"meta\">seed ", runs.front().seed, " &middot; ",
                    runs.size(), " runs</p>\n");
  }
  body += "<p class=\"meta\">per-run reports:";
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string label = RunLabel(runs[i], i);
    absl::StrAppend(&body, " <a href=\"", UrlPathEscape(label), "/report.html\">",
                    HtmlEscape(label), "</a>");
  }
  body += "</p>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    absl::StrAppend(&body, "<p class=\"meta\">replay ", HtmlEscape(RunLabel(runs[i], i)),
                    ":</p>\n<pre>", HtmlEscape(runs[i].replay_command), "</pre>\n");
  }

  std::vector<std::string> header = {"metric"};
  for (size_t i = 0; i < runs.size(); ++i) header.push_back(RunLabel(runs[i], i));
  std::vector<std::vector<std::string>> rows;
  for (CompareRow& row : BuildCompareRows(runs, stats)) {
    std::vector<std::string> cells = {row.metric};
    cells.insert(cells.end(), row.cells.begin(), row.cells.end());
    rows.push_back(std::move(cells));
  }
  body += "<h2>Side by side</h2>\n";
  body += RenderHtmlTable(header, rows);

  std::vector<PlotSeries> cdfs, cross, busiest, dynamic, extra;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& run = runs[i];
    const std::string label = RunLabel(run, i);
    cdfs.push_back(LatencyCdfSeries(label, stats[i].sorted_latencies_ns));
    const std::vector<double> x = IntervalSeconds(run);
    PlotSeries c{.name = label, .x = x, .y = {}};
    PlotSeries b{.name = label, .x = x, .y = {}};
    PlotSeries d{.name = label, .x = x, .y = {}};
    PlotSeries e{.name = label, .x = x, .y = {}};
    for (size_t k = 0; k < run.intervals.size(); ++k) {
      const IntervalSample& s = run.intervals[k];
      c.y.push_back(MegabytesPerSecond(s.bytes.cross_domain, run.time_step_ns));
      b.y.push_back(MegabytesPerSecond(stats[i].intervals[k].host_load.max_bytes, run.time_step_ns));
      d.y.push_back(static_cast<double>(s.dynamic_replica_count));
      e.y.push_back(static_cast<double>(s.extra_memory_bytes) / (1024.0 * 1024.0));
    }
    cross.push_back(std::move(c));
    busiest.push_back(std::move(b));
    dynamic.push_back(std::move(d));
    extra.push_back(std::move(e));
  }
  body += "<h2>Plots</h2>\n";
  {
    // Limit lines: what each run removed of the avoidable cross-domain bytes,
    // beside the two upper lines computed from its own reads.
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    BarChartOptions bars{.title = "Avoidable cross-domain bytes removed, against the limit lines",
                         .value_label = "GiB",
                         .series = {"removed by the run", "online line", "clairvoyant line",
                                    "avoidable (repeat reads without replicas)"}};
    std::vector<BarGroup> groups;
    for (size_t i = 0; i < runs.size(); ++i) {
      const LimitLines& l = runs[i].limits;
      groups.push_back(BarGroup{
          .label = RunLabel(runs[i], i),
          .values = {static_cast<double>(l.avoidable_removed_bytes) / kGiB,
                     static_cast<double>(l.online.removed_bytes) / kGiB,
                     static_cast<double>(l.clairvoyant.removed_bytes) / kGiB,
                     static_cast<double>(l.avoidable_bytes) / kGiB}});
    }
    body += RenderFigure(
        RenderBarChartSvg(bars, groups),
        "Online line: a replica right after a domain's second cross-domain read of an object. "
        "Clairvoyant line: a replica right before it, within the memory budget. Both from the "
        "run's own reads (docs/outputs.md, Limit lines).");
    BarChartOptions memory{.title = "Extra memory, time-averaged, against the limit lines",
                           .value_label = "GiB",
                           .series = {"run (dynamic replicas)", "online line",
                                      "clairvoyant line"}};
    std::vector<BarGroup> memory_groups;
    for (size_t i = 0; i < runs.size(); ++i) {
      const LimitLines& l = runs[i].limits;
      memory_groups.push_back(BarGroup{
          .label = RunLabel(runs[i], i),
          .values = {static_cast<double>(stats[i].limits.extra_memory_mean_bytes) / kGiB,
                     static_cast<double>(l.online.memory_mean_bytes) / kGiB,
                     static_cast<double>(l.clairvoyant.memory_mean_bytes) / kGiB}});
    }
    body += RenderFigure(RenderBarChartSvg(memory, memory_groups), "");
  }
  body += RenderFigure(RenderLineChartSvg(CdfOptions(), cdfs), "One curve per run.");
  body += RenderFigure(RenderLineChartSvg({.title = "Cross-domain bytes read over time",
                                           .x_label = "time (s)",
                                           .y_label = "MB/s"},
                                          cross),
                       "");
  body += RenderFigure(RenderLineChartSvg({.title = "Busiest host load over time",
                                           .x_label = "time (s)",
                                           .y_label = "MB/s served"},
                                          busiest),
                       "The highest per-host load in each interval (the bottleneck).");
  body += RenderFigure(RenderLineChartSvg({.title = "Dynamic replicas over time",
                                           .x_label = "time (s)",
                                           .y_label = "replicas"},
                                          dynamic),
                       "");
  body += RenderFigure(RenderLineChartSvg({.title = "Extra memory over time",
                                           .x_label = "time (s)",
                                           .y_label = "MiB held by dynamic replicas"},
                                          extra),
                       "Bytes of dynamic replicas, in-flight copies included: what eviction "
                       "and the optional cold release give back.");
  return RenderHtmlPage(absl::StrCat("Heatsink compare: ", scenario), body);
}

}  // namespace heatsink::sim
