// File: sim/report.h
//
// Turns a simulated run (sim/run_result.h) into its output files and the
// short stdout summary, and puts several runs side by side for `compare`.
// Every file and field is documented in docs/outputs.md.
//
// Run outputs (WriteRunOutputs, into one directory):
//   summary.json     totals and derived statistics (deterministic)
//   timeseries.csv   one row per sampling interval (deterministic)
//   host_load.csv    bytes served per interval, one column per host (deterministic)
//   requests.csv     one row per request (deterministic)
//   report.html      self-contained page with inline SVG plots (deterministic)
//   timing.json      wall time and events/s: the only non-deterministic file
// The decision and reads logs are written by the driver as the run goes.
//
// Compare outputs (WriteCompareOutputs): each run's outputs in
// <out_dir>/<label>/, plus compare.txt (the table), compare.json and
// compare.html in <out_dir>.
//
// Determinism: the same RunResult gives byte-identical files (except
// timing.json), in any process: no wall time, no hash-map iteration, doubles
// printed with fixed decimals.
//
// REQUIRES (every function): ValidateRunResult(run) is ok. The writers check
// it and return its INVALID_ARGUMENT error; the formatters treat a violation
// as a programmer error.
#ifndef HEATSINK_SIM_REPORT_H_
#define HEATSINK_SIM_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sim/report_stats.h"
#include "sim/run_result.h"

namespace heatsink::sim {

// Version of the summary.json / compare.json layout ("format_version").
inline constexpr int kReportFormatVersion = 1;

// File contents, exposed so that tools (estimate, sweep) and tests can reuse
// them without touching the file system.
std::string RenderSummaryJson(const RunResult& run, const RunStats& stats);
std::string RenderTimeseriesCsv(const RunResult& run, const RunStats& stats);
std::string RenderHostLoadCsv(const RunResult& run);
// One row per NUMA host per interval (docs/outputs.md); "" without NUMA hosts.
std::string RenderNumaCsv(const RunResult& run);
std::string RenderRequestsCsv(const RunResult& run);
std::string RenderTimingJson(const RunResult& run);

// Writes the run output files listed above into `out_dir`, creating it (and
// its parents) when missing. Errors name the path that failed. The second
// form takes the run's ComputeRunStats, so a caller that also prints the
// summary sorts the latencies once.
[[nodiscard]] absl::Status WriteRunOutputs(const RunResult& run, const std::string& out_dir);
[[nodiscard]] absl::Status WriteRunOutputs(const RunResult& run, const RunStats& stats,
                                           const std::string& out_dir);

// About a dozen lines for stdout: identity and replay command, reads and
// latency percentiles, bytes by distance, busiest host, copies, extra
// memory, admissions, local-hit fraction, events; the last line carries the
// wall time (stdout is not part of the determinism contract).
std::string FormatRunSummary(const RunResult& run);
std::string FormatRunSummary(const RunResult& run, const RunStats& stats);

// One side-by-side text table, one column per run (headed by RunLabel), one
// row per metric of BuildCompareRows.
std::string FormatCompareTable(const std::vector<RunResult>& runs);

// compare.json: per run, the label and the exact values behind the table.
std::string RenderCompareJson(const std::vector<RunResult>& runs,
                              const std::vector<RunStats>& stats);

// Writes each run's outputs into <out_dir>/<label>/ and compare.txt,
// compare.json and compare.html into `out_dir`. Labels (RunLabel) must be unique and usable
// as a directory name (non-empty, no '/', not "." or ".."), otherwise
// INVALID_ARGUMENT before anything is written.
[[nodiscard]] absl::Status WriteCompareOutputs(const std::vector<RunResult>& runs,
                                               const std::string& out_dir);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_REPORT_H_
