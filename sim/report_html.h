// File: sim/report_html.h
//
// Self-contained HTML pages for simulator reports: inline CSS and inline SVG
// charts (sim/report_svg.h), no scripts, no external fonts, images or links
// to the network. Pages open from the file system in any browser.
//
// The run page (report.html) has a header (scenario, label, seed, replay
// command, key numbers) and five charts: per-host load heatmap over time,
// read latency CDF, read bytes by distance over time (cross-domain first),
// replica counts over time, local-hit fraction over time.
//
// The compare page (compare.html) has the compare table (BuildCompareRows)
// with links to each run's own report.html in <label>/, and four charts with
// one line per run: read latency CDFs, cross-domain bytes over time, busiest
// host load over time (the highest per-host load in each interval), dynamic
// replica count over time.
//
// Determinism: same input, same bytes (see report_svg.h).
#ifndef HEATSINK_SIM_REPORT_HTML_H_
#define HEATSINK_SIM_REPORT_HTML_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "sim/report_stats.h"
#include "sim/run_result.h"

namespace heatsink::sim {

// REQUIRES: stats == ComputeRunStats(run).
std::string RenderRunReportHtml(const RunResult& run, const RunStats& stats);

// REQUIRES: stats[i] == ComputeRunStats(runs[i]).
std::string RenderCompareReportHtml(const std::vector<RunResult>& runs,
                                    const std::vector<RunStats>& stats);

// Building blocks for other report pages (estimate, sweep).
//
// A complete HTML5 document with the shared stylesheet; `body_html` is
// inserted as is, `title` is escaped.
std::string RenderHtmlPage(absl::string_view title, absl::string_view body_html);
// A <table>: cells are escaped; the first column is left-aligned, the others
// right-aligned. REQUIRES: every row has header.size() cells.
std::string RenderHtmlTable(const std::vector<std::string>& header,
                            const std::vector<std::vector<std::string>>& rows);
// A chart inside a <figure> with an optional caption (escaped).
std::string RenderFigure(absl::string_view svg, absl::string_view caption);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_REPORT_HTML_H_
