#include "sim/estimate_sweep.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "sim/report_format.h"
#include "sim/report_html.h"
#include "sim/report_svg.h"

extern char** environ;

namespace heatsink::sim {
namespace {

constexpr char kThresholdKnob[] = "dynamic_replication_admission_qps_threshold";
constexpr char kWindowKnob[] = "dynamic_replication_heat_window_seconds";

std::string CellName(size_t index) { return absl::StrFormat("cell-%03d", index); }

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Running {
  pid_t pid = 0;
  size_t cell = 0;
};

absl::StatusOr<pid_t> SpawnCell(const std::vector<std::string>& argv_text,
                                const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> argv;
  for (const std::string& a : argv_text) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("cannot start ", argv_text[0], ": ", std::strerror(rc)));
  }
  return pid;
}

// Waits for `pid`; OK when it exited with status 0.
absl::Status WaitCell(pid_t pid, const std::string& what, const std::string& log_path) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return absl::InternalError(absl::StrCat("waiting for ", what, ": ", std::strerror(errno)));
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string how = WIFEXITED(status)
                              ? absl::StrCat("exit code ", WEXITSTATUS(status))
                              : absl::StrCat("signal ", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  std::string tail;
  if (absl::StatusOr<std::string> log = ReadWholeFile(log_path); log.ok()) {
    tail = log->size() > 2000 ? log->substr(log->size() - 2000) : *log;
  }
  return absl::InternalError(
      absl::StrCat(what, " failed (", how, "); its output (", log_path, "):\n", tail));
}

std::vector<std::string> Header(const SweepResult& sweep) {
  std::vector<std::string> header;
  for (const SweepAxis& a : sweep.axes) header.push_back(a.knob);
  for (const char* c : {"would_propose", "copies", "capped", "bytes", "copies_per_second_mean",
                        "copies_per_second_peak", "extra_memory_peak_bytes", "removed_bytes",
                        "online_removed_bytes", "of_online", "clairvoyant_removed_bytes",
                        "of_clairvoyant"}) {
    header.push_back(c);
  }
  return header;
}

// The axis index by role; -1 when there is none.
struct Roles {
  int x = 0;
  int line = -1;
  std::vector<int> panels;
};

Roles ChooseRoles(const std::vector<SweepAxis>& axes) {
  Roles r;
  const int n = static_cast<int>(axes.size());
  for (int i = 0; i < n; ++i) {
    if (axes[i].knob == kThresholdKnob) r.x = i;
  }
  for (int i = 0; i < n; ++i) {
    if (i != r.x && axes[i].knob == kWindowKnob) r.line = i;
  }
  if (r.line < 0) {
    for (int i = 0; i < n; ++i) {
      if (i != r.x) {
        r.line = i;
        break;
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (i != r.x && i != r.line) r.panels.push_back(i);
  }
  return r;
}

// An axis value as a number for the x axis; the value's index when it is
// not a number.
double XValue(const SweepAxis& axis, const std::string& value) {
  double x = 0;
  if (absl::SimpleAtod(value, &x) && std::isfinite(x)) return x;
  for (size_t i = 0; i < axis.values.size(); ++i) {
    if (axis.values[i] == value) return static_cast<double>(i);
  }
  return 0;
}

}  // namespace

absl::StatusOr<SweepAxis> ParseSweepAxis(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sweep ", text, ": expected knob=value1,value2,..."));
  }
  SweepAxis axis;
  axis.knob = text.substr(0, eq);
  if (axis.knob.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--sweep ", text, ": empty knob name"));
  }
  const std::string values = text.substr(eq + 1);
  std::set<std::string> seen;
  for (absl::string_view v : absl::StrSplit(values, ',')) {
    if (v.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--sweep ", text, ": empty value"));
    }
    if (!seen.insert(std::string(v)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sweep ", text, ": value ", v, " given twice"));
    }
    axis.values.emplace_back(v);
  }
  return axis;
}

std::vector<std::vector<std::string>> SweepGrid(const std::vector<SweepAxis>& axes) {
  std::vector<std::vector<std::string>> grid = {{}};
  for (const SweepAxis& axis : axes) {
    std::vector<std::vector<std::string>> next;
    for (const std::vector<std::string>& prefix : grid) {
      for (const std::string& v : axis.values) {
        next.push_back(prefix);
        next.back().push_back(v);
      }
    }
    grid = std::move(next);
  }
  return grid;
}

absl::StatusOr<SweepResult> RunSweep(const std::vector<SweepAxis>& axes,
                                     const SweepRunOptions& options) {
  if (axes.empty()) return absl::InvalidArgumentError("a sweep needs at least one --sweep axis");
  std::set<std::string> knobs;
  for (const SweepAxis& a : axes) {
    if (!knobs.insert(a.knob).second) {
      return absl::InvalidArgumentError(absl::StrCat("--sweep ", a.knob, " given twice"));
    }
  }
  if (options.jobs < 1) return absl::InvalidArgumentError("--jobs must be at least 1");
  const std::vector<std::vector<std::string>> grid = SweepGrid(axes);
  if (static_cast<int64_t>(grid.size()) > options.cells_max) {
    return absl::InvalidArgumentError(absl::StrCat("the sweep has ", grid.size(),
                                                   " cells, more than ", options.cells_max));
  }
  HS_RETURN_IF_ERROR(EnsureDirectory(options.out_dir));

  SweepResult result;
  result.axes = axes;
  for (size_t i = 0; i < grid.size(); ++i) {
    SweepCell cell;
    cell.values = grid[i];
    cell.out_dir = JoinPath(options.out_dir, CellName(i));
    result.cells.push_back(std::move(cell));
  }

  std::deque<Running> running;
  absl::Status first_error;
  auto finish_oldest = [&]() {
    const Running r = running.front();
    running.pop_front();
    const std::string log = JoinPath(options.out_dir, CellName(r.cell) + ".log");
    absl::Status st = WaitCell(r.pid, CellName(r.cell), log);
    if (!st.ok() && first_error.ok()) first_error = st;
  };
  for (size_t i = 0; i < result.cells.size(); ++i) {
    // After a failure no new cell starts; running ones are still reaped.
    if (!first_error.ok()) break;
    std::vector<std::string> argv = {options.binary};
    argv.insert(argv.end(), options.base_args.begin(), options.base_args.end());
    for (size_t a = 0; a < axes.size(); ++a) {
      argv.push_back("--set");
      argv.push_back(absl::StrCat(axes[a].knob, "=", result.cells[i].values[a]));
    }
    argv.push_back("--out");
    argv.push_back(result.cells[i].out_dir);
    const std::string log = JoinPath(options.out_dir, CellName(i) + ".log");
    absl::StatusOr<pid_t> pid = SpawnCell(argv, log);
    if (!pid.ok()) {
      first_error = pid.status();
      break;
    }
    running.push_back(Running{*pid, i});
    if (static_cast<int>(running.size()) >= options.jobs) finish_oldest();
  }
  while (!running.empty()) finish_oldest();
  HS_RETURN_IF_ERROR(first_error);

  for (SweepCell& cell : result.cells) {
    HS_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(JoinPath(cell.out_dir, "estimate.json")));
    absl::StatusOr<EstimateTotals> totals = ParseEstimateTotals(text);
    if (!totals.ok()) {
      return absl::InternalError(
          absl::StrCat(cell.out_dir, "/estimate.json: ", totals.status().message()));
    }
    cell.totals = *totals;
  }
  return result;
}

namespace {

std::vector<std::string> Row(const SweepCell& cell, bool human) {
  std::vector<std::string> row = cell.values;
  const EstimateTotals& t = cell.totals;
  row.push_back(absl::StrCat(t.would_propose));
  row.push_back(absl::StrCat(t.copies));
  row.push_back(absl::StrCat(t.capped));
  row.push_back(human ? FormatBytesIec(t.bytes) : absl::StrCat(t.bytes));
  row.push_back(FormatFixed(t.copies_per_second_mean, human ? 3 : 6));
  row.push_back(FormatFixed(t.copies_per_second_peak, human ? 3 : 6));
  row.push_back(human ? FormatBytesIec(t.extra_memory_peak_bytes)
                      : absl::StrCat(t.extra_memory_peak_bytes));
  // Limit lines: what the would-be replicas remove of the avoidable bytes,
  // beside the two lines (docs/estimate.md). Empty / n/a when unknown.
  const std::string none = human ? "n/a" : "";
  auto bytes = [human](uint64_t b) { return human ? FormatBytesIec(b) : absl::StrCat(b); };
  auto share = [&none, human](std::optional<uint64_t> part, uint64_t whole) {
    if (!part.has_value() || whole == 0) return none;
    return FormatFixed(static_cast<double>(*part) / static_cast<double>(whole), human ? 4 : 6);
  };
  if (t.limits.has_value()) {
    const EstimateLimits& l = *t.limits;
    row.push_back(l.removed_bytes.has_value() ? bytes(*l.removed_bytes) : none);
    row.push_back(bytes(l.online_removed_bytes));
    row.push_back(share(l.removed_bytes, l.online_removed_bytes));
    row.push_back(bytes(l.clairvoyant_removed_bytes));
    row.push_back(share(l.removed_bytes, l.clairvoyant_removed_bytes));
  } else {
    for (int i = 0; i < 5; ++i) row.push_back(none);
  }
  return row;
}

}  // namespace

std::string FormatSweepTable(const SweepResult& sweep) {
  std::vector<std::string> header;
  for (const SweepAxis& a : sweep.axes) header.push_back(a.knob);
  for (const char* c : {"would-propose", "copies", "capped", "bytes", "copies/s mean",
                        "copies/s peak", "extra memory peak", "removes", "online line",
                        "of online", "clairvoyant line", "of clairvoyant"}) {
    header.push_back(c);
  }
  TextTable table(header);
  for (const SweepCell& cell : sweep.cells) table.AddRow(Row(cell, /*human=*/true));
  return table.Render();
}

std::string SweepCsv(const SweepResult& sweep) {
  CsvWriter csv(Header(sweep));
  for (const SweepCell& cell : sweep.cells) csv.AddRow(Row(cell, /*human=*/false));
  return csv.text();
}

std::string SweepHtml(const SweepResult& sweep, const std::string& title) {
  std::string body = absl::StrCat("<h1>", HtmlEscape(title), "</h1>\n");
  absl::StrAppend(&body,
                  "<p>Observe-mode estimate of what enforce would do, per knob setting "
                  "(model: docs/estimate.md). Each cell is one observe run of the same "
                  "scenario and seed.</p>\n");
  if (sweep.axes.empty() || sweep.cells.empty()) {
    return RenderHtmlPage(title, body + "<p>No cells.</p>\n");
  }
  const Roles roles = ChooseRoles(sweep.axes);
  const SweepAxis& x_axis = sweep.axes[roles.x];
  // Panel key -> line value -> points, all in grid order.
  std::map<std::vector<std::string>, size_t> panel_index;
  std::vector<std::vector<std::string>> panel_keys;
  for (const SweepCell& cell : sweep.cells) {
    std::vector<std::string> key;
    for (int p : roles.panels) key.push_back(cell.values[p]);
    if (panel_index.emplace(key, panel_keys.size()).second) panel_keys.push_back(key);
  }
  for (size_t p = 0; p < panel_keys.size(); ++p) {
    std::string panel_title;
    for (size_t i = 0; i < roles.panels.size(); ++i) {
      absl::StrAppend(&panel_title, i == 0 ? "" : ", ", sweep.axes[roles.panels[i]].knob, " = ",
                      panel_keys[p][i]);
    }
    std::vector<PlotSeries> copies, memory;
    std::map<std::string, size_t> series_index;
    for (const SweepCell& cell : sweep.cells) {
      std::vector<std::string> key;
      for (int i : roles.panels) key.push_back(cell.values[i]);
      if (key != panel_keys[p]) continue;
      const std::string line =
          roles.line >= 0
              ? absl::StrCat(sweep.axes[roles.line].knob, " = ", cell.values[roles.line])
              : std::string("estimate");
      auto [it, inserted] = series_index.emplace(line, copies.size());
      if (inserted) {
        copies.push_back(PlotSeries{line, {}, {}});
        memory.push_back(PlotSeries{line, {}, {}});
      }
      const double x = XValue(x_axis, cell.values[roles.x]);
      copies[it->second].x.push_back(x);
      copies[it->second].y.push_back(static_cast<double>(cell.totals.copies));
      memory[it->second].x.push_back(x);
      memory[it->second].y.push_back(static_cast<double>(cell.totals.extra_memory_peak_bytes) /
                                     (1024.0 * 1024.0));
    }
    if (!panel_title.empty()) absl::StrAppend(&body, "<h2>", HtmlEscape(panel_title), "</h2>\n");
    LineChartOptions copies_opt;
    copies_opt.title = "Copies enforce would make";
    copies_opt.x_label = x_axis.knob;
    copies_opt.y_label = "copies";
    copies_opt.markers = true;
    LineChartOptions memory_opt = copies_opt;
    memory_opt.title = "Extra memory peak";
    memory_opt.y_label = "MiB";
    absl::StrAppend(&body, RenderFigure(RenderLineChartSvg(copies_opt, copies),
                                        "copies against " + x_axis.knob));
    absl::StrAppend(&body, RenderFigure(RenderLineChartSvg(memory_opt, memory),
                                        "extra memory peak against " + x_axis.knob));
  }
  std::vector<std::vector<std::string>> rows;
  for (const SweepCell& cell : sweep.cells) rows.push_back(Row(cell, /*human=*/true));
  std::vector<std::string> header;
  for (const SweepAxis& a : sweep.axes) header.push_back(a.knob);
  for (const char* c : {"would-propose", "copies", "capped", "bytes", "copies/s mean",
                        "copies/s peak", "extra memory peak", "removes", "online line",
                        "of online", "clairvoyant line", "of clairvoyant"}) {
    header.push_back(c);
  }
  absl::StrAppend(&body, "<h2>All cells</h2>\n", RenderHtmlTable(header, rows));
  return RenderHtmlPage(title, body);
}

absl::Status WriteSweepOutputs(const SweepResult& sweep, const std::string& title,
                               const std::string& out_dir) {
  HS_RETURN_IF_ERROR(EnsureDirectory(out_dir));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "sweep.txt"), FormatSweepTable(sweep)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "sweep.csv"), SweepCsv(sweep)));
  HS_RETURN_IF_ERROR(WriteTextFile(JoinPath(out_dir, "sweep.html"), SweepHtml(sweep, title)));
  return absl::OkStatus();
}

}  // namespace heatsink::sim
