// File: sim/report_svg.cc
#include "sim/report_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"
#include "sim/report_format.h"

namespace heatsink::sim {
namespace {

constexpr int kFontSize = 11;
constexpr int kLegendRowPx = 16;
constexpr const char* kAxisColor = "#444444";
constexpr const char* kGridColor = "#e3e3e3";

// Exact powers of ten for |e| <= 22 (all representable); beyond, the
// repeated product is still deterministic.
double Pow10(int e) {
  double p = 1.0;
  for (int i = 0; i < std::abs(e); ++i) p *= 10.0;
  return e < 0 ? 1.0 / p : p;
}

// floor(log10(v)) for v > 0, corrected for rounding in log10 near powers.
int FloorLog10(double v) {
  int e = static_cast<int>(std::floor(std::log10(v)));
  while (Pow10(e) > v) --e;
  while (Pow10(e + 1) <= v) ++e;
  return e;
}

std::string Px(double v) { return FormatFixed(v, 1); }

// SI-suffixed tick label. `step_exp` is the decimal exponent of the tick
// step, which fixes how many decimals the labels need.
std::string TickLabel(double value, double max_abs, int step_exp) {
  static constexpr const char* kSuffix[] = {"", "k", "M", "G", "T", "P"};
  int group = 0;
  if (max_abs >= 1e4) {
    while (group + 1 < static_cast<int>(std::size(kSuffix)) &&
           max_abs / Pow10(3 * group) >= 1000.0) {
      ++group;
    }
  }
  const int decimals = std::clamp(3 * group - step_exp, 0, 9);
  return absl::StrCat(FormatFixed(value / Pow10(3 * group), decimals), kSuffix[group]);
}

struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  std::vector<double> ticks;
  std::vector<std::string> labels;

  // Fraction of the axis length at which `v` lies (clamped to [0, 1]).
  double Fraction(double v) const {
    double f;
    if (log) {
      f = (std::log10(std::max(v, lo)) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      f = (v - lo) / (hi - lo);
    }
    return std::clamp(f, 0.0, 1.0);
  }
};

Axis LinearAxis(double lo, double hi, int target_ticks) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    hi = lo + pad;
    if (lo != 0) lo -= pad;
  }
  const double raw = (hi - lo) / target_ticks;
  int exp = FloorLog10(raw);
  const double f = raw / Pow10(exp);
  int nice = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  if (nice == 10) {
    nice = 1;
    ++exp;
  }
  const double step = nice * Pow10(exp);
  const auto k_lo = static_cast<int64_t>(std::floor(lo / step + 1e-9));
  const auto k_hi = static_cast<int64_t>(std::ceil(hi / step - 1e-9));
  Axis axis;
  axis.lo = static_cast<double>(k_lo) * step;
  axis.hi = static_cast<double>(k_hi) * step;
  if (!(axis.hi > axis.lo)) axis.hi = axis.lo + step;
  const double max_abs = std::max(std::abs(axis.lo), std::abs(axis.hi));
  for (int64_t k = k_lo; k <= std::max(k_hi, k_lo + 1); ++k) {
    const double v = static_cast<double>(k) * step;
    axis.ticks.push_back(v);
    axis.labels.push_back(TickLabel(v, max_abs, exp));
  }
  return axis;
}

Axis LogAxis(double min_positive, double max_positive) {
  Axis axis;
  axis.log = true;
  int e_lo = FloorLog10(min_positive);
  int e_hi = FloorLog10(max_positive);
  if (Pow10(e_hi) < max_positive || e_hi == e_lo) ++e_hi;
  axis.lo = Pow10(e_lo);
  axis.hi = Pow10(e_hi);
  const int stride = (e_hi - e_lo) > 10 ? 2 : 1;
  for (int e = e_lo; e <= e_hi; e += stride) {
    const double v = Pow10(e);
    axis.ticks.push_back(v);
    axis.labels.push_back(TickLabel(v, v, e));
  }
  return axis;
}

// The title, the axis frame, grid lines, tick labels and axis labels.
void AppendFrame(std::string* svg, const std::string& title, const std::string& x_label,
                 const std::string& y_label, const Axis& x, const Axis& y, double left, double top,
                 double right, double bottom) {
  absl::StrAppend(svg, "<text x=\"", Px(left), "\" y=\"16\" font-weight=\"bold\">",
                  HtmlEscape(title), "</text>\n");
  for (size_t i = 0; i < x.ticks.size(); ++i) {
    const double px = left + x.Fraction(x.ticks[i]) * (right - left);
    absl::StrAppend(svg, "<line x1=\"", Px(px), "\" y1=\"", Px(top), "\" x2=\"", Px(px),
                    "\" y2=\"", Px(bottom), "\" stroke=\"", kGridColor, "\"/>\n");
    absl::StrAppend(svg, "<text x=\"", Px(px), "\" y=\"", Px(bottom + 14),
                    "\" text-anchor=\"middle\">", HtmlEscape(x.labels[i]), "</text>\n");
  }
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    const double py = bottom - y.Fraction(y.ticks[i]) * (bottom - top);
    absl::StrAppend(svg, "<line x1=\"", Px(left), "\" y1=\"", Px(py), "\" x2=\"", Px(right),
                    "\" y2=\"", Px(py), "\" stroke=\"", kGridColor, "\"/>\n");
    absl::StrAppend(svg, "<text x=\"", Px(left - 5), "\" y=\"", Px(py + 4),
                    "\" text-anchor=\"end\">", HtmlEscape(y.labels[i]), "</text>\n");
  }
  absl::StrAppend(svg, "<rect x=\"", Px(left), "\" y=\"", Px(top), "\" width=\"",
                  Px(right - left), "\" height=\"", Px(bottom - top),
                  "\" fill=\"none\" stroke=\"", kAxisColor, "\"/>\n");
  absl::StrAppend(svg, "<text x=\"", Px((left + right) / 2), "\" y=\"", Px(bottom + 32),
                  "\" text-anchor=\"middle\">", HtmlEscape(x_label), "</text>\n");
  const double cy = (top + bottom) / 2;
  absl::StrAppend(svg, "<text x=\"14\" y=\"", Px(cy), "\" text-anchor=\"middle\" transform=\"rotate(-90 14 ",
                  Px(cy), ")\">", HtmlEscape(y_label), "</text>\n");
}

std::string SvgOpen(int width, double height) {
  return absl::StrCat("<svg width=\"", width, "\" height=\"", Px(height), "\" viewBox=\"0 0 ",
                      width, " ", Px(height), "\" font-family=\"sans-serif\" font-size=\"",
                      kFontSize, "\" role=\"img\">\n");
}

// Legend entries laid out left to right, wrapping at `max_x`. Returns the
// number of rows used.
int AppendLegend(std::string* svg, const std::vector<PlotSeries>& series, double left,
                 double max_x, double top) {
  double x = left;
  int row = 0;
  for (size_t i = 0; i < series.size(); ++i) {
    // Approximate text width: the legend only needs to avoid overlaps.
    const double entry = 22 + 6.5 * static_cast<double>(series[i].name.size()) + 14;
    if (x > left && x + entry > max_x) {
      x = left;
      ++row;
    }
    const double y = top + row * kLegendRowPx;
    absl::StrAppend(svg, "<rect x=\"", Px(x), "\" y=\"", Px(y + 3), "\" width=\"16\" height=\"4\" fill=\"",
                    SeriesColor(i), "\"/>\n");
    absl::StrAppend(svg, "<text x=\"", Px(x + 20), "\" y=\"", Px(y + 9), "\">",
                    HtmlEscape(series[i].name), "</text>\n");
    x += entry;
  }
  return series.empty() ? 0 : row + 1;
}

// How many legend rows AppendLegend will need (same layout rule).
int LegendRows(const std::vector<PlotSeries>& series, double left, double max_x) {
  std::string scratch;
  return AppendLegend(&scratch, series, left, max_x, 0);
}

}  // namespace

std::string SeriesColor(size_t index) {
  static constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                             "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                             "#bcbd22", "#17becf"};
  return kPalette[index % std::size(kPalette)];
}

std::string RenderBarChartSvg(const BarChartOptions& options,
                              const std::vector<BarGroup>& groups) {
  const size_t bars = options.series.size();
  double max_value = 0;
  for (const BarGroup& g : groups) {
    HS_CHECK(g.values.size() == bars);
    for (double v : g.values) {
      if (std::isfinite(v)) max_value = std::max(max_value, v);
    }
  }
  const Axis axis = LinearAxis(0, max_value, 5);
  const double left = options.label_width;
  const double right = options.width - 60;
  const double top = 28;
  const double group_gap = 10;
  const double group_height = static_cast<double>(bars) * (options.bar_height + 2);
  const double bottom = top + static_cast<double>(groups.size()) * (group_height + group_gap);
  std::vector<PlotSeries> legend;
  for (const std::string& name : options.series) legend.push_back(PlotSeries{name, {}, {}});
  std::string body;
  absl::StrAppend(&body, "<text x=\"", Px(left), "\" y=\"16\" font-weight=\"bold\">",
                  HtmlEscape(options.title), "</text>\n");
  for (size_t i = 0; i < axis.ticks.size(); ++i) {
    const double px = left + axis.Fraction(axis.ticks[i]) * (right - left);
    absl::StrAppend(&body, "<line x1=\"", Px(px), "\" y1=\"", Px(top), "\" x2=\"", Px(px),
                    "\" y2=\"", Px(bottom), "\" stroke=\"", kGridColor, "\"/>\n");
    absl::StrAppend(&body, "<text x=\"", Px(px), "\" y=\"", Px(bottom + 14),
                    "\" text-anchor=\"middle\">", HtmlEscape(axis.labels[i]), "</text>\n");
  }
  absl::StrAppend(&body, "<text x=\"", Px((left + right) / 2), "\" y=\"", Px(bottom + 30),
                  "\" text-anchor=\"middle\">", HtmlEscape(options.value_label), "</text>\n");
  for (size_t g = 0; g < groups.size(); ++g) {
    const double gy = top + static_cast<double>(g) * (group_height + group_gap);
    absl::StrAppend(&body, "<text x=\"", Px(left - 6), "\" y=\"", Px(gy + group_height / 2 + 4),
                    "\" text-anchor=\"end\">", HtmlEscape(groups[g].label), "</text>\n");
    for (size_t b = 0; b < bars; ++b) {
      const double raw = groups[g].values[b];
      const double v = std::isfinite(raw) ? std::max(raw, 0.0) : 0.0;
      const double y = gy + static_cast<double>(b) * (options.bar_height + 2);
      const double w = axis.Fraction(v) * (right - left);
      absl::StrAppend(&body, "<rect x=\"", Px(left), "\" y=\"", Px(y), "\" width=\"", Px(w),
                      "\" height=\"", options.bar_height, "\" fill=\"", SeriesColor(b),
                      "\"><title>", HtmlEscape(options.series[b]), ": ", FormatFixed(v, 2),
                      "</title></rect>\n");
      absl::StrAppend(&body, "<text x=\"", Px(left + w + 4), "\" y=\"",
                      Px(y + options.bar_height - 2), "\">", FormatFixed(v, 2), "</text>\n");
    }
  }
  absl::StrAppend(&body, "<line x1=\"", Px(left), "\" y1=\"", Px(top), "\" x2=\"", Px(left),
                  "\" y2=\"", Px(bottom), "\" stroke=\"", kAxisColor, "\"/>\n");
  std::string legend_svg;
  const int legend_rows = AppendLegend(&legend_svg, legend, left, options.width - 10, bottom + 40);
  const double height = bottom + 44 + legend_rows * kLegendRowPx;
  return absl::StrCat(SvgOpen(options.width, height), body, legend_svg, "</svg>\n");
}

std::string RenderLineChartSvg(const LineChartOptions& options,
                               const std::vector<PlotSeries>& series) {
  double x_min = 0, x_max = 0, y_min = 0, y_max = 0;
  bool any = false;
  for (const PlotSeries& s : series) {
    HS_CHECK_MSG(s.x.size() == s.y.size(), absl::StrCat("series '", s.name, "': x/y sizes differ"));
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      if (options.log_x && s.x[i] <= 0) continue;
      if (!any) {
        x_min = x_max = s.x[i];
        y_min = y_max = s.y[i];
        any = true;
      }
      x_min = std::min(x_min, s.x[i]);
      x_max = std::max(x_max, s.x[i]);
      y_min = std::min(y_min, s.y[i]);
      y_max = std::max(y_max, s.y[i]);
    }
  }
  if (!any) {
    x_min = options.log_x ? 1 : 0;
    x_max = options.log_x ? 10 : 1;
    y_min = 0;
    y_max = 1;
  }
  if (options.y_from_zero) {
    y_min = std::min(y_min, 0.0);
    y_max = std::max(y_max, 0.0);
  }
  if (options.y_max.has_value()) y_max = *options.y_max;
  const Axis x_axis = options.log_x ? LogAxis(x_min, x_max) : LinearAxis(x_min, x_max, 6);
  const Axis y_axis = LinearAxis(y_min, y_max, 5);

  const double left = 64, top = 28;
  const double right = options.width - 16.0;
  const double bottom = options.height - 44.0;
  HS_CHECK(right > left && bottom > top);
  const bool legend = series.size() > 1 || (series.size() == 1 && !series[0].name.empty());
  const int legend_rows = legend ? LegendRows(series, left, right) : 0;
  const double total_height = options.height + legend_rows * kLegendRowPx + (legend ? 4 : 0);

  std::string svg = SvgOpen(options.width, total_height);
  AppendFrame(&svg, options.title, options.x_label, options.y_label, x_axis, y_axis, left, top,
              right, bottom);
  auto px_x = [&](double v) { return left + x_axis.Fraction(v) * (right - left); };
  auto px_y = [&](double v) { return bottom - y_axis.Fraction(v) * (bottom - top); };
  HS_CHECK(options.bars_x.size() == options.bars_y.size());
  if (!options.bars_x.empty() && !options.log_x) {
    double bars_max = 0;
    for (double v : options.bars_y) {
      if (std::isfinite(v)) bars_max = std::max(bars_max, v);
    }
    for (size_t i = 0; i < options.bars_x.size() && bars_max > 0; ++i) {
      const double v = options.bars_y[i];
      if (!std::isfinite(v) || v <= 0 || !std::isfinite(options.bars_x[i])) continue;
      const double x0 = std::clamp(px_x(options.bars_x[i]), left, right);
      const double next =
          i + 1 < options.bars_x.size()
              ? options.bars_x[i + 1]
              : options.bars_x[i] + (i > 0 ? options.bars_x[i] - options.bars_x[i - 1] : 1);
      const double x1 = std::clamp(px_x(next), left, right);
      const double h = v / bars_max * (bottom - top);
      absl::StrAppend(&svg, "<rect x=\"", Px(x0), "\" y=\"", Px(bottom - h), "\" width=\"",
                      Px(std::max(0.0, x1 - x0)), "\" height=\"", Px(h), "\" fill=\"#d9d9d9\"/>\n");
    }
    absl::StrAppend(&svg, "<text x=\"", Px(right), "\" y=\"", Px(top - 4),
                    "\" text-anchor=\"end\" font-size=\"11\" fill=\"#666666\">grey bars: ",
                    HtmlEscape(options.bars_name), ", top = ", FormatFixed(bars_max, 1), " ",
                    HtmlEscape(options.bars_unit), "</text>\n");
  }
  for (size_t s = 0; s < series.size(); ++s) {
    const PlotSeries& line = series[s];
    const std::string color = SeriesColor(s);
    std::vector<std::pair<double, double>> run;
    auto flush = [&]() {
      if (run.size() >= 2) {
        std::string points;
        for (const auto& [px, py] : run) absl::StrAppend(&points, points.empty() ? "" : " ", Px(px), ",", Px(py));
        absl::StrAppend(&svg, "<polyline fill=\"none\" stroke=\"", color,
                        "\" stroke-width=\"1.5\" points=\"", points, "\"/>\n");
      }
      if (run.size() == 1 || options.markers) {
        for (const auto& [px, py] : run) {
          absl::StrAppend(&svg, "<circle cx=\"", Px(px), "\" cy=\"", Px(py), "\" r=\"2.5\" fill=\"",
                          color, "\"/>\n");
        }
      }
      run.clear();
    };
    for (size_t i = 0; i < line.x.size(); ++i) {
      const bool drawable = std::isfinite(line.x[i]) && std::isfinite(line.y[i]) &&
                            !(options.log_x && line.x[i] <= 0);
      if (!drawable) {
        flush();
        continue;
      }
      run.emplace_back(px_x(line.x[i]), px_y(line.y[i]));
    }
    flush();
  }
  if (!any) {
    absl::StrAppend(&svg, "<text x=\"", Px((left + right) / 2), "\" y=\"", Px((top + bottom) / 2),
                    "\" text-anchor=\"middle\" fill=\"#888888\">no data</text>\n");
  }
  if (legend) AppendLegend(&svg, series, left, right, options.height);
  svg += "</svg>\n";
  return svg;
}

PlotSeries LatencyCdfSeries(std::string name, const std::vector<TimeNs>& sorted_ns) {
  PlotSeries series{.name = std::move(name), .x = {}, .y = {}};
  if (sorted_ns.empty()) return series;
  // Quantiles in parts per million: every 0.5% up to 99.5%, then a tail.
  std::vector<int64_t> quantiles_ppm;
  for (int64_t q = 5'000; q <= 995'000; q += 5'000) quantiles_ppm.push_back(q);
  for (int64_t q : {996'000, 997'000, 998'000, 999'000, 999'500, 999'900, 999'990, 1'000'000}) {
    quantiles_ppm.push_back(q);
  }
  const auto n = static_cast<unsigned __int128>(sorted_ns.size());
  size_t last_rank = 0;
  // The first point is the minimum so that the curve starts at the fastest read.
  auto add_rank = [&](size_t rank) {
    if (rank <= last_rank) return;
    last_rank = rank;
    const TimeNs v = std::max<TimeNs>(sorted_ns[rank - 1], 1);
    series.x.push_back(static_cast<double>(v) / static_cast<double>(kNsPerMs));
    series.y.push_back(static_cast<double>(rank) / static_cast<double>(sorted_ns.size()));
  };
  add_rank(1);
  for (int64_t q : quantiles_ppm) {
    const auto rank = static_cast<size_t>((static_cast<unsigned __int128>(q) * n + 999'999) / 1'000'000);
    add_rank(std::clamp<size_t>(rank, 1, sorted_ns.size()));
  }
  return series;
}

namespace {

// Viridis-like sequential scale, t in [0, 1].
std::string HeatColor(double t) {
  static constexpr int kStops[][3] = {
      {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  constexpr int kSegments = static_cast<int>(std::size(kStops)) - 1;
  if (!std::isfinite(t) || t < 0) t = 0;
  t = std::min(t, 1.0);
  const double pos = t * kSegments;
  const int seg = std::min(static_cast<int>(pos), kSegments - 1);
  const double f = pos - seg;
  int rgb[3];
  for (int c = 0; c < 3; ++c) {
    rgb[c] = static_cast<int>(std::lround(kStops[seg][c] + f * (kStops[seg + 1][c] - kStops[seg][c])));
  }
  return absl::StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

}  // namespace

std::string RenderHeatmapSvg(const HeatmapOptions& options,
                             const std::vector<std::string>& row_labels,
                             const std::vector<double>& column_start_x, double column_width_x,
                             const std::vector<std::vector<double>>& values) {
  HS_CHECK(values.size() == row_labels.size());
  HS_CHECK(column_width_x > 0);
  for (const auto& row : values) HS_CHECK(row.size() == column_start_x.size());
  HS_CHECK(options.columns_max > 0 && options.row_height > 0 && options.max_rows_labelled > 0);

  // Merge adjacent columns into bins of `group` (the last bin may be short).
  const size_t columns = column_start_x.size();
  const size_t group =
      columns == 0 ? 1 : (columns + static_cast<size_t>(options.columns_max) - 1) /
                             static_cast<size_t>(options.columns_max);
  const size_t bins = (columns + group - 1) / group;
  std::vector<std::vector<double>> binned(values.size(), std::vector<double>(bins, 0.0));
  double value_max = 0;
  for (size_t r = 0; r < values.size(); ++r) {
    for (size_t b = 0; b < bins; ++b) {
      const size_t begin = b * group;
      const size_t end = std::min(columns, begin + group);
      double sum = 0;
      for (size_t c = begin; c < end; ++c) {
        const double v = values[r][c];
        if (std::isfinite(v) && v > 0) sum += v;
      }
      binned[r][b] = sum / static_cast<double>(end - begin);
      value_max = std::max(value_max, binned[r][b]);
    }
  }

  size_t label_chars = 4;
  for (const std::string& label : row_labels) label_chars = std::max(label_chars, label.size());
  // Room for the rotated axis label plus the widest row label.
  const double left = std::clamp(30.0 + 6.5 * static_cast<double>(label_chars), 50.0, 220.0);
  const double top = 28;
  const double right = options.width - 90.0;
  HS_CHECK(right > left);
  const size_t rows = std::max<size_t>(row_labels.size(), 1);
  const double row_px =
      std::max(2.0, std::min<double>(options.row_height, 900.0 / static_cast<double>(rows)));
  const double bottom = top + row_px * static_cast<double>(rows);
  const double height = bottom + 44;

  const double x_lo = columns == 0 ? 0 : column_start_x.front();
  const double x_hi = columns == 0 ? 1 : column_start_x.back() + column_width_x;
  const Axis x_axis = LinearAxis(x_lo, x_hi, 6);
  std::string svg = SvgOpen(options.width, height);
  const Axis no_y;  // row labels replace y ticks
  AppendFrame(&svg, options.title, options.x_label, options.y_label, x_axis, no_y, left, top, right,
              bottom);
  auto px_x = [&](double v) { return left + x_axis.Fraction(v) * (right - left); };

  svg += "<g shape-rendering=\"crispEdges\">\n";
  for (size_t r = 0; r < values.size(); ++r) {
    const double y = top + row_px * static_cast<double>(r);
    for (size_t b = 0; b < bins; ++b) {
      const size_t begin = b * group;
      const size_t end = std::min(columns, begin + group);
      const double x0 = px_x(column_start_x[begin]);
      const double x1 = px_x(column_start_x[end - 1] + column_width_x);
      const double t = value_max > 0 ? binned[r][b] / value_max : 0.0;
      // Cells overlap their right and lower neighbours by half a pixel so
      // that rounding at fractional positions leaves no seams.
      const double overlap_x = b + 1 < bins ? 0.5 : 0.0;
      const double overlap_y = r + 1 < values.size() ? 0.5 : 0.0;
      absl::StrAppend(&svg, "<rect x=\"", Px(x0), "\" y=\"", Px(y), "\" width=\"",
                      Px(std::max(x1 - x0, 0.5) + overlap_x), "\" height=\"",
                      Px(row_px + overlap_y), "\" fill=\"", HeatColor(t), "\"/>\n");
    }
  }
  svg += "</g>\n";

  const size_t label_every =
      (row_labels.size() + static_cast<size_t>(options.max_rows_labelled) - 1) /
      static_cast<size_t>(options.max_rows_labelled);
  for (size_t r = 0; r < row_labels.size(); r += std::max<size_t>(label_every, 1)) {
    const double y = top + row_px * (static_cast<double>(r) + 0.5) + 4;
    absl::StrAppend(&svg, "<text x=\"", Px(left - 5), "\" y=\"", Px(y), "\" text-anchor=\"end\">",
                    HtmlEscape(row_labels[r]), "</text>\n");
  }
  if (row_labels.empty() || columns == 0) {
    absl::StrAppend(&svg, "<text x=\"", Px((left + right) / 2), "\" y=\"", Px((top + bottom) / 2 + 4),
                    "\" text-anchor=\"middle\" fill=\"#888888\">no data</text>\n");
  }
  // Colour bar: 32 steps from 0 (bottom) to value_max (top).
  const double bar_x = right + 12;
  constexpr int kSteps = 32;
  const double step_px = (bottom - top) / kSteps;
  svg += "<g shape-rendering=\"crispEdges\">\n";
  for (int i = 0; i < kSteps; ++i) {
    const double y = bottom - step_px * (i + 1);
    absl::StrAppend(&svg, "<rect x=\"", Px(bar_x), "\" y=\"", Px(y), "\" width=\"14\" height=\"",
                    Px(step_px + 0.2), "\" fill=\"", HeatColor((i + 0.5) / kSteps), "\"/>\n");
  }
  svg += "</g>\n";
  const Axis scale = LinearAxis(0, value_max > 0 ? value_max : 1, 4);
  for (size_t i = 0; i < scale.ticks.size(); ++i) {
    if (scale.ticks[i] > (value_max > 0 ? value_max : 1) * 1.000001) continue;
    const double y = bottom - (scale.ticks[i] / (value_max > 0 ? value_max : 1)) * (bottom - top);
    absl::StrAppend(&svg, "<text x=\"", Px(bar_x + 18), "\" y=\"", Px(y + 4), "\">",
                    HtmlEscape(scale.labels[i]), "</text>\n");
  }
  absl::StrAppend(&svg, "<text x=\"", options.width - 4, "\" y=\"16\" text-anchor=\"end\">",
                  HtmlEscape(options.value_label), "</text>\n");
  svg += "</svg>\n";
  return svg;
}

}  // namespace heatsink::sim
