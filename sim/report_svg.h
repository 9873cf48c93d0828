// File: sim/report_svg.h
//
// A small SVG plotting module for the simulator's HTML reports: line charts
// (linear or log x axis, several series with a legend), empirical CDFs, and a
// heatmap with a colour legend. Every chart is one self-contained <svg>
// element meant to be inlined in an HTML5 page: no scripts, no external
// fonts or stylesheets, no xmlns or other URL (HTML5 does not need one), and
// no element ids, so any number of charts can share a page.
//
// Determinism: coordinates and tick labels are printed with fixed decimals;
// ticks come from the data range with 1-2-5 steps (linear) or powers of ten
// (log); series colours follow the series order. The same input gives the
// same bytes.
//
// Example:
//   LineChartOptions opt{.title = "Cross-domain bytes", .x_label = "time (s)",
//                        .y_label = "MB/s"};
//   std::string svg = RenderLineChartSvg(opt, {{.name = "off", .x = t, .y = v}});
#ifndef HEATSINK_SIM_REPORT_SVG_H_
#define HEATSINK_SIM_REPORT_SVG_H_

#include <optional>
#include <string>
#include <vector>

#include "core/env/time.h"

namespace heatsink::sim {

// One line of a chart. x and y have the same length; a non-finite y (NaN)
// is a gap that breaks the line. Points need not be sorted but are drawn in
// the given order.
struct PlotSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
};

struct LineChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  int width = 760;   // whole svg, pixels
  int height = 300;  // plot plus axes, without the legend rows
  // Log-scale x: points with x <= 0 are skipped. Ticks at powers of ten.
  bool log_x = false;
  // The y range always includes 0 unless this is false.
  bool y_from_zero = true;
  // Fixed y range top (for fractions: 1.0); values above are clipped.
  std::optional<double> y_max = std::nullopt;
  // A dot at every point (for sparse sweeps), not only isolated ones.
  bool markers = false;
  // Optional bars behind the lines, on their own scale (0 to their largest
  // value, printed at the top right with `bars_unit`): one bar per x, as
  // wide as the gap to the next x. Used to overlay copy traffic on read
  // latency. REQUIRES: bars_x.size() == bars_y.size().
  std::string bars_name = {};
  std::string bars_unit = {};
  std::vector<double> bars_x = {};
  std::vector<double> bars_y = {};
};

// A line chart; with more than one series (or one named series) a legend
// with the series names is drawn under the plot. With no finite point the
// axes are drawn around a "no data" note.
// REQUIRES: every series has x.size() == y.size().
std::string RenderLineChartSvg(const LineChartOptions& options,
                               const std::vector<PlotSeries>& series);

// The empirical CDF of sorted latencies as a plot series: x in milliseconds,
// y the fraction of samples <= x, sampled at fixed quantiles (every 0.5% and
// a denser tail up to the maximum) so a million samples still make a
// ~230-point line. Latencies below 1 ns are drawn at 1 ns so that a log axis
// can show them. REQUIRES: `sorted_ns` ascending.
PlotSeries LatencyCdfSeries(std::string name, const std::vector<TimeNs>& sorted_ns);

struct HeatmapOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string value_label;   // legend caption, e.g. "MB/s served"
  int width = 760;
  int row_height = 14;       // pixels per row (rows are never thinner than 2 px)
  int max_rows_labelled = 40;  // label every k-th row beyond this many
  // Adjacent columns are merged (values averaged) until at most this many
  // remain, keeping the svg small for long runs.
  int columns_max = 240;
};

// A heatmap of `values[row][column]` (rows top to bottom in the given order,
// column c spanning [column_start_x[c], column_start_x[c] + column_width_x)).
// Colour runs from the lowest colour at 0 to the highest at the largest
// value; negative and non-finite values draw as 0. A colour bar with its
// scale is drawn on the right.
// REQUIRES: values.size() == row_labels.size(); each row has
// column_start_x.size() entries; column_width_x > 0.
std::string RenderHeatmapSvg(const HeatmapOptions& options,
                             const std::vector<std::string>& row_labels,
                             const std::vector<double>& column_start_x, double column_width_x,
                             const std::vector<std::vector<double>>& values);

// One group of a bar chart: a label and one value per bar series (the
// series names are given once, BarChartOptions::series).
struct BarGroup {
  std::string label;
  std::vector<double> values;  // one per series; negative or non-finite draw as 0
};

struct BarChartOptions {
  std::string title;
  std::string value_label;          // under the value axis
  std::vector<std::string> series;  // bar names, in drawing order (legend)
  int width = 760;
  int bar_height = 12;
  int label_width = 120;            // room for group labels on the left
};

// A horizontal grouped bar chart: one block of bars per group (top to
// bottom in the given order), one bar per series in series order, each bar
// labelled with its value (2 decimals). The value
// axis starts at 0 and ends at a 1-2-5 tick above the largest value.
// REQUIRES: every group has options.series.size() values.
std::string RenderBarChartSvg(const BarChartOptions& options, const std::vector<BarGroup>& groups);

// The fixed ten-colour series palette; index wraps around.
std::string SeriesColor(size_t index);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_REPORT_SVG_H_
