// File: sim/estimate_sweep.h
//
// Knob sweeps of the observe-mode estimate (`heatsink-sim estimate --sweep
// knob=v1,v2,...`, repeatable; docs/estimate.md). The grid is the Cartesian
// product of the axes, in the order given, the last axis varying fastest.
// Every cell is one `heatsink-sim estimate` process with the cell's values
// as `--set` overrides and its own output directory; up to `jobs` cells run
// at once. Results are read back from each cell's estimate.json and always
// reported in grid order, so the table, CSV and HTML do not depend on which
// process finished first.
//
// Outputs: a text table (stdout), sweep.csv (one row per cell) and
// sweep.html with the curves: copies and extra memory peak against the
// admission threshold (dynamic_replication_admission_qps_threshold when it
// is swept, else the first axis), one line per heat window
// (dynamic_replication_heat_window_seconds when swept, else the next axis),
// one pair of charts per combination of the remaining axes.
#ifndef HEATSINK_SIM_ESTIMATE_SWEEP_H_
#define HEATSINK_SIM_ESTIMATE_SWEEP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/estimate.h"

namespace heatsink::sim {

struct SweepAxis {
  std::string knob;
  std::vector<std::string> values;
};

// "knob=v1,v2,...": INVALID_ARGUMENT without '=', with an empty knob name,
// no value, an empty value or a value given twice.
[[nodiscard]] absl::StatusOr<SweepAxis> ParseSweepAxis(const std::string& text);

// Every cell's values (one per axis), last axis fastest.
std::vector<std::vector<std::string>> SweepGrid(const std::vector<SweepAxis>& axes);

struct SweepCell {
  std::vector<std::string> values;  // one per axis
  std::string out_dir;              // the cell's run and estimate outputs
  EstimateTotals totals;
};

struct SweepResult {
  std::vector<SweepAxis> axes;
  std::vector<SweepCell> cells;  // grid order
};

struct SweepRunOptions {
  // The heatsink-sim binary and the estimate arguments shared by every cell
  // (for example {"estimate", "scenario.json", "--seed", "3"}); each cell adds
  // `--set knob=value` per axis and `--out <out_dir>/cell-<index>`.
  std::string binary;
  std::vector<std::string> base_args;
  std::string out_dir;
  int jobs = 1;
  int64_t cells_max = 4'096;  // a larger grid is INVALID_ARGUMENT
};

// Runs the grid. A cell whose process fails is an error naming the cell and
// its log file (<out_dir>/cell-<index>.log holds its stdout and stderr).
[[nodiscard]] absl::StatusOr<SweepResult> RunSweep(const std::vector<SweepAxis>& axes,
                                                  const SweepRunOptions& options);

// The table printed on stdout: one row per cell, one column per axis, then
// would-propose, copies, capped, bytes, copies/s mean and peak, extra memory peak.
std::string FormatSweepTable(const SweepResult& sweep);
// The same values as CSV (integers exact, rates with 6 decimals).
std::string SweepCsv(const SweepResult& sweep);
// Self-contained page: the table and the curves (inline SVG, no scripts).
std::string SweepHtml(const SweepResult& sweep, const std::string& title);

// Writes sweep.txt, sweep.csv and sweep.html into `out_dir`.
[[nodiscard]] absl::Status WriteSweepOutputs(const SweepResult& sweep, const std::string& title,
                                             const std::string& out_dir);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_ESTIMATE_SWEEP_H_
