// ValidationHtml: the validation report as a page of side-by-side charts
// (sim/validate.h).
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/report_format.h"
#include "sim/report_html.h"
#include "sim/report_svg.h"
#include "sim/validate.h"

namespace heatsink::sim {
namespace {

constexpr double kNsPerSecD = 1e9;
constexpr double kNsPerMsD = 1e6;
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// Accepted admissions so far, as a step line: one point before and one at
// each acceptance.
PlotSeries CumulativeSeries(std::string name, const std::vector<TimeNs>& sorted_ns) {
  PlotSeries s{std::move(name), {0.0}, {0.0}};
  for (size_t i = 0; i < sorted_ns.size(); ++i) {
    const double t = static_cast<double>(sorted_ns[i]) / kNsPerSecD;
    s.x.push_back(t);
    s.y.push_back(static_cast<double>(i));
    s.x.push_back(t);
    s.y.push_back(static_cast<double>(i + 1));
  }
  return s;
}

// The rows whose metric starts with `prefix`, as bar groups labelled by the
// rest of the metric name (up to " (", the calibration tag), values scaled.
std::vector<BarGroup> GroupsOf(const ValidationReport& r, const std::string& prefix, double scale) {
  std::vector<BarGroup> groups;
  for (const ValidationRow& row : r.rows) {
    if (!absl::StartsWith(row.metric, prefix)) continue;
    std::string label = row.metric.substr(prefix.size());
    if (const size_t tag = label.find(" ("); tag != std::string::npos) label.resize(tag);
    groups.push_back(BarGroup{label, {row.sim * scale, row.runtime * scale}});
  }
  return groups;
}

std::string ErrorCell(const std::optional<double>& e) {
  return e.has_value() ? absl::StrFormat("%.2f%%", *e * 100) : std::string("n/a");
}

}  // namespace

std::string ValidationHtml(const ValidationReport& r) {
  const std::string title = absl::StrCat("Validation: ", r.scenario);
  std::string body = absl::StrCat("<h1>", HtmlEscape(title), "</h1>\n");
  absl::StrAppend(&body, "<p>",
                  HtmlEscape(absl::StrFormat(
                      "Seed %d. The simulation (sim) against a heatsink-replay run of the same "
                      "scenario on real processes (runtime); read latency %s.",
                      r.seed,
                      r.calibrated ? "with the simulator's network calibrated to this machine"
                                   : "with the scenario's own network (uncalibrated)")),
                  "</p>\n");
  absl::StrAppend(
      &body, "<p>",
      HtmlEscape(absl::StrFormat(
          "Accepted admissions: sim %d, runtime %d, in both %d; Jaccard %.4f. Admission lag "
          "(runtime - sim, %d matched): median %.1f ms, p90 %.1f ms.",
          r.sim_accepted, r.runtime_accepted, r.common_accepted, r.jaccard, r.lag.matched,
          static_cast<double>(r.lag.median_ns) / kNsPerMsD,
          static_cast<double>(r.lag.p90_ns) / kNsPerMsD)),
      "</p>\n");

  LineChartOptions admissions;
  admissions.title = "Accepted admissions over time";
  admissions.x_label = "scenario time (s)";
  admissions.y_label = "accepted so far";
  absl::StrAppend(
      &body, RenderFigure(RenderLineChartSvg(admissions,
                                             {CumulativeSeries("sim", r.sim_accepted_ns),
                                              CumulativeSeries("runtime", r.runtime_accepted_ns)}),
                          "runtime times mapped onto the scenario's time line"));
  const std::vector<std::string> worlds = {"sim", "runtime"};
  auto bars = [&](const std::string& chart_title, const std::string& unit,
                  const std::vector<BarGroup>& groups, const std::string& caption) {
    BarChartOptions o;
    o.title = chart_title;
    o.value_label = unit;
    o.series = worlds;
    o.label_width = 160;
    absl::StrAppend(&body, RenderFigure(RenderBarChartSvg(o, groups), caption));
  };
  bars("Bytes read by distance", "MiB", GroupsOf(r, "bytes_read.", 1.0 / kBytesPerMiB),
       "same host, same domain, cross domain and total");
  bars("Share of the bytes served, by host", "fraction", GroupsOf(r, "host_load.share.", 1.0),
       "each host's part of all bytes served to reads");
  bars("Read latency", "ms", GroupsOf(r, "reads.latency_ns.", 1.0 / kNsPerMsD),
       r.calibrated ? "percentiles, simulator calibrated to this machine"
                    : "percentiles, simulator uncalibrated");

  std::vector<std::vector<std::string>> rows;
  for (const ValidationRow& row : r.rows) {
    rows.push_back({row.metric, absl::StrFormat("%.6g", row.sim),
                    absl::StrFormat("%.6g", row.runtime), ErrorCell(row.relative_error)});
  }
  absl::StrAppend(&body, "<h2>All metrics</h2>\n",
                  RenderHtmlTable({"metric", "sim", "runtime", "relative error"}, rows));
  return RenderHtmlPage(title, body);
}

}  // namespace heatsink::sim
