// heatsink-sim: the simulator's user jobs.
//
//   run SCENARIO      one deterministic run; outputs into --out
//   compare SCENARIO  the same scenario and seed under several
//                     dynamic_replication_mode settings, side by side
//   diff A B          two decision logs, decision by decision
//   estimate ...      observe-mode estimate of what enforce would cost, and
//                     knob sweeps of it (RunEstimate below; sim/estimate.h)
//   swarm --seeds A..B  randomized fault simulation with invariant checks
//                     (sim/swarm.h, docs/swarm.md); exit 1 when a seed fails
//   validate SCENARIO --runtime DIR  the simulation against a heatsink-replay
//                     run of it (tools/sim_validate_command.h, sim/validate.h)
//   gen-trace --shape S  a seeded synthetic trace in the Mooncake format
//                     (tools/sim_gen_trace_command.h, sim/trace_gen.h)
//
// Exit codes (all subcommands): 0 success (for `diff`: logs equal), 1 a
// difference or a failed scenario check (for `diff`: logs differ), 2 an error
// (bad arguments, unreadable or malformed input, a run that could not
// complete).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/base/status_macros.h"
#include "sim/decision_log.h"
#include "sim/estimate.h"
#include "sim/estimate_sweep.h"
#include "sim/malloc_tuning.h"
#include "sim/report.h"
#include "sim/report_format.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/swarm.h"
#include "tools/sim_diff_command.h"
#include "tools/sim_gen_trace_command.h"
#include "tools/sim_validate_command.h"

namespace {

using heatsink::sim::CheckOutcome;
using heatsink::sim::KnobOverride;
using heatsink::sim::RunOptions;
using heatsink::sim::RunResult;
using heatsink::sim::Scenario;

constexpr int kExitOk = 0;
constexpr int kExitDifferent = 1;
constexpr int kExitError = 2;

constexpr char kExitCodesHelp[] =
    "Exit codes: 0 success (diff: logs equal), 1 a scenario check failed (diff: logs differ), "
    "2 an error (bad arguments, unreadable or malformed input, a run that could not complete).";

// Shell-quotes a word when it needs it.
std::string Quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                             "_-./=,:+") == std::string::npos) {
    return word;
  }
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The command that reproduces one run (the output directory is the user's
// choice and is left out, so the command is the same wherever outputs go).
std::string ReplayCommand(const std::string& scenario_path, uint64_t seed,
                          const std::vector<std::string>& sets) {
  std::string command = absl::StrCat("heatsink-sim run ", Quote(scenario_path), " --seed ", seed);
  for (const std::string& s : sets) absl::StrAppend(&command, " --set ", Quote(s));
  return command;
}

// A progress line on stderr, rewritten in place, at most twice a second and
// only when stderr is a terminal.
class Progress {
 public:
  explicit Progress(std::string label) : label_(std::move(label)), tty_(isatty(2) == 1) {}
  heatsink::sim::ProgressFn Fn() {
    if (!tty_) return nullptr;
    return [this](heatsink::TimeNs now, heatsink::TimeNs end, uint64_t events) {
      const auto wall = std::chrono::steady_clock::now();
      if (shown_ && wall - last_ < std::chrono::milliseconds(500) && now < end) return;
      last_ = wall;
      shown_ = true;
      std::fprintf(stderr, "\r[%s] simulated %.1f s of %.1f s (%3d%%), %llu events   ",
                   label_.c_str(), static_cast<double>(now) / 1e9, static_cast<double>(end) / 1e9,
                   end > 0 ? static_cast<int>(now * 100 / end) : 100,
                   static_cast<unsigned long long>(events));
      std::fflush(stderr);
    };
  }
  void Done() {
    if (tty_ && shown_) std::fprintf(stderr, "\r%80s\r", "");
  }

 private:
  std::string label_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

// One progress line on stderr for runs that go at once (compare --jobs): the
// simulated fraction of each, in mode order. Nothing when stderr is not a
// terminal. Thread-safe.
class SharedProgress {
 public:
  explicit SharedProgress(std::vector<std::string> labels)
      : labels_(std::move(labels)), percent_(labels_.size(), -1), tty_(isatty(2) == 1) {}
  heatsink::sim::ProgressFn Fn(size_t run) {
    if (!tty_) return nullptr;
    return [this, run](heatsink::TimeNs now, heatsink::TimeNs end, uint64_t) {
      absl::MutexLock lock(&mu_);
      percent_[run] = end > 0 ? static_cast<int>(now * 100 / end) : 100;
      const auto wall = std::chrono::steady_clock::now();
      if (shown_ && wall - last_ < std::chrono::milliseconds(500)) return;
      last_ = wall;
      shown_ = true;
      std::string line;
      for (size_t i = 0; i < labels_.size(); ++i) {
        absl::StrAppend(&line, i == 0 ? "" : "  ", "[", labels_[i], " ",
                        percent_[i] < 0 ? std::string("waiting") : absl::StrCat(percent_[i], "%"),
                        "]");
      }
      std::fprintf(stderr, "\r%s   ", line.c_str());
      std::fflush(stderr);
    };
  }
  void Done() {
    absl::MutexLock lock(&mu_);
    if (tty_ && shown_) std::fprintf(stderr, "\r%100s\r", "");
  }

 private:
  const std::vector<std::string> labels_;
  absl::Mutex mu_;
  std::vector<int> percent_ ABSL_GUARDED_BY(mu_);  // -1: not started
  const bool tty_;
  bool shown_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point last_ ABSL_GUARDED_BY(mu_);
};

struct CommonArgs {
  std::string scenario_path;
  std::optional<uint64_t> seed;
  std::vector<std::string> sets;
  std::string out_dir;
  bool log_reads = false;
};

absl::StatusOr<std::vector<KnobOverride>> ParseSets(const std::vector<std::string>& sets) {
  std::vector<KnobOverride> out;
  for (const std::string& s : sets) {
    HS_ASSIGN_OR_RETURN(KnobOverride o, heatsink::sim::ParseKnobOverride(s));
    out.push_back(std::move(o));
  }
  return out;
}

// Prints the check outcomes; true when every applicable check passed.
bool ReportChecks(const Scenario& scenario, const RunResult& run) {
  const std::vector<CheckOutcome> outcomes = heatsink::sim::EvaluateChecks(scenario, run);
  if (outcomes.empty()) return true;
  std::cout << heatsink::sim::FormatCheckOutcomes(outcomes);
  bool ok = true;
  for (const CheckOutcome& o : outcomes) ok = ok && (!o.applies || o.passed);
  return ok;
}

// Prints the scenario's knob notes (sim/runner.h ScenarioNotes) on stderr
// before a run. A knob error is left for the run to report.
void PrintNotes(const char* command, const Scenario& scenario, const RunOptions& options) {
  absl::StatusOr<std::vector<std::string>> notes = heatsink::sim::ScenarioNotes(scenario, options);
  if (!notes.ok()) return;
  for (const std::string& note : *notes) std::cerr << command << ": note: " << note << "\n";
}

int RunOne(const CommonArgs& args) {
  absl::StatusOr<Scenario> scenario = heatsink::sim::LoadScenarioForRun(args.scenario_path);
  if (!scenario.ok()) {
    std::cerr << "heatsink-sim run: " << scenario.status().message() << "\n";
    return kExitError;
  }
  absl::StatusOr<std::vector<KnobOverride>> overrides = ParseSets(args.sets);
  if (!overrides.ok()) {
    std::cerr << "heatsink-sim run: " << overrides.status().message() << "\n";
    return kExitError;
  }
  RunOptions options;
  options.seed = args.seed.value_or(scenario->seed);
  options.overrides = *overrides;
  options.replay_command = ReplayCommand(args.scenario_path, *options.seed, args.sets);
  options.out_dir = args.out_dir.empty() ? absl::StrCat("out/", scenario->name) : args.out_dir;
  if (args.log_reads) options.log_reads = true;
  std::cout << "seed: " << *options.seed << "\n"
            << "replay: " << options.replay_command << "\n";
  std::cout.flush();
  PrintNotes("heatsink-sim run", *scenario, options);
  Progress progress(scenario->name);
  options.progress = progress.Fn();
  absl::StatusOr<RunResult> run = heatsink::sim::RunScenario(*scenario, options);
  progress.Done();
  if (!run.ok()) {
    std::cerr << "heatsink-sim run: " << run.status().message() << "\n";
    return kExitError;
  }
  run->scenario_path = args.scenario_path;
  if (absl::Status st = heatsink::sim::ValidateRunResult(*run); !st.ok()) {
    std::cerr << "heatsink-sim run: " << st.message() << "\n";
    return kExitError;
  }
  const heatsink::sim::RunStats stats = heatsink::sim::ComputeRunStats(*run);
  if (absl::Status st = heatsink::sim::WriteRunOutputs(*run, stats, options.out_dir); !st.ok()) {
    std::cerr << "heatsink-sim run: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << heatsink::sim::FormatRunSummary(*run, stats);
  std::cout << "outputs: " << options.out_dir << "/ (report: " << options.out_dir
            << "/report.html)\n";
  return ReportChecks(*scenario, *run) ? kExitOk : kExitDifferent;
}

int RunCompare(const CommonArgs& args, const std::string& modes_text, int jobs_arg) {
  absl::StatusOr<Scenario> scenario = heatsink::sim::LoadScenarioForRun(args.scenario_path);
  if (!scenario.ok()) {
    std::cerr << "heatsink-sim compare: " << scenario.status().message() << "\n";
    return kExitError;
  }
  absl::StatusOr<std::vector<KnobOverride>> overrides = ParseSets(args.sets);
  if (!overrides.ok()) {
    std::cerr << "heatsink-sim compare: " << overrides.status().message() << "\n";
    return kExitError;
  }
  std::vector<std::string> modes = absl::StrSplit(modes_text, ',', absl::SkipEmpty());
  if (modes.empty()) {
    std::cerr << "heatsink-sim compare: --modes lists no mode\n";
    return kExitError;
  }
  for (size_t i = 0; i < modes.size(); ++i) {
    if (modes[i] != "off" && modes[i] != "observe" && modes[i] != "enforce") {
      std::cerr << "heatsink-sim compare: --modes: unknown mode \"" << modes[i]
                << "\" (expected off, observe or enforce)\n";
      return kExitError;
    }
    for (size_t j = 0; j < i; ++j) {
      if (modes[j] == modes[i]) {
        std::cerr << "heatsink-sim compare: --modes: \"" << modes[i] << "\" given twice\n";
        return kExitError;
      }
    }
  }
  const uint64_t seed = args.seed.value_or(scenario->seed);
  const std::string out_dir =
      args.out_dir.empty() ? absl::StrCat("out/", scenario->name, "-compare") : args.out_dir;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const size_t jobs = std::min<size_t>(
      modes.size(), static_cast<size_t>(jobs_arg > 0 ? jobs_arg : (cores > 0 ? cores : 1)));
  std::cout << "seed: " << seed << "\n";
  // One RunOptions per mode, in mode order; the runs are independent
  // simulations, so they go `jobs` at once and land in their own slots.
  std::vector<RunOptions> options(modes.size());
  for (size_t i = 0; i < modes.size(); ++i) {
    std::vector<std::string> sets = args.sets;
    sets.push_back(absl::StrCat("dynamic_replication_mode=", modes[i]));
    RunOptions& o = options[i];
    o.seed = seed;
    o.overrides = *overrides;
    o.overrides.push_back(KnobOverride{"dynamic_replication_mode", modes[i]});
    o.label = modes[i];
    o.replay_command = ReplayCommand(args.scenario_path, seed, sets);
    o.out_dir = absl::StrCat(out_dir, "/", modes[i]);
    if (args.log_reads) o.log_reads = true;
    std::cout << "replay (" << modes[i] << "): " << o.replay_command << "\n";
  }
  std::cout << (jobs > 1 ? absl::StrCat(jobs, " runs at once\n") : "");
  std::cout.flush();
  PrintNotes("heatsink-sim compare", *scenario, options[0]);
  SharedProgress progress(modes);
  for (size_t i = 0; i < modes.size(); ++i) options[i].progress = progress.Fn(i);
  std::vector<absl::StatusOr<RunResult>> results(modes.size());  // each set by its run
  std::atomic<size_t> next{0};
  const auto work = [&] {
    for (size_t i = next.fetch_add(1); i < modes.size(); i = next.fetch_add(1)) {
      results[i] = heatsink::sim::RunScenario(*scenario, options[i]);
    }
  };
  const auto wall_start = std::chrono::steady_clock::now();
  {
    std::vector<std::thread> threads;
    for (size_t t = 1; t < jobs; ++t) threads.emplace_back(work);
    work();
    for (std::thread& t : threads) t.join();
  }
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  progress.Done();
  std::vector<RunResult> runs;
  bool checks_ok = true;
  for (size_t i = 0; i < modes.size(); ++i) {
    absl::StatusOr<RunResult>& run = results[i];
    if (!run.ok()) {
      std::cerr << "heatsink-sim compare (" << modes[i] << "): " << run.status().message() << "\n";
      return kExitError;
    }
    run->scenario_path = args.scenario_path;
    checks_ok = ReportChecks(*scenario, *run) && checks_ok;
    runs.push_back(std::move(*run));
  }
  if (absl::Status st = heatsink::sim::WriteCompareOutputs(runs, out_dir); !st.ok()) {
    std::cerr << "heatsink-sim compare: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << "\n" << heatsink::sim::FormatCompareTable(runs) << "\n";
  int64_t run_ms = 0;
  for (const RunResult& r : runs) run_ms += r.wall_time_ms;
  std::cout << "wall time: " << absl::StrFormat("%.1f", wall_s) << " s for " << runs.size()
            << " runs (" << absl::StrFormat("%.1f", static_cast<double>(run_ms) / 1000)
            << " s of run time, " << jobs << " at once)\n";
  std::cout << "report: " << out_dir << "/compare.html (each run: " << out_dir
            << "/<mode>/report.html)\n";
  return checks_ok ? kExitOk : kExitDifferent;
}

// ---------------------------------------------------------------- estimate

struct EstimateArgs {
  std::string scenario_path;
  std::string trace_path;
  std::string decisions_path;
  std::optional<uint64_t> seed;
  std::vector<std::string> sets;
  std::vector<std::string> sweeps;
  std::string out_dir;
  int jobs = 0;
  uint64_t object_bytes = 0;
  int64_t max_memory_replicas = 2;
  int64_t original_replicas = 1;
  int64_t time_step_ms = 1'000;
  double replay_speed = 1.0;
  int64_t request_limit = 0;
  int64_t duration_s = 0;
};

// Writes estimate.txt and estimate.json into `out_dir`.
absl::Status WriteEstimate(const heatsink::sim::Estimate& estimate, const std::string& source,
                           const std::string& out_dir) {
  HS_RETURN_IF_ERROR(heatsink::sim::EnsureDirectory(out_dir));
  HS_RETURN_IF_ERROR(heatsink::sim::WriteTextFile(heatsink::sim::JoinPath(out_dir, "estimate.txt"),
                                                  heatsink::sim::FormatEstimate(estimate, source)));
  return heatsink::sim::WriteTextFile(heatsink::sim::JoinPath(out_dir, "estimate.json"),
                                      heatsink::sim::EstimateToJson(estimate, source));
}

int EstimateFromLog(const EstimateArgs& args) {
  auto log = heatsink::sim::ReadDecisionLogFile(args.decisions_path);
  if (!log.ok()) {
    std::cerr << "heatsink-sim estimate: " << log.status().message() << "\n";
    return kExitError;
  }
  heatsink::sim::EstimateOptions options;
  options.max_memory_replicas = args.max_memory_replicas;
  options.original_replicas = args.original_replicas;
  options.default_object_bytes = args.object_bytes;
  options.time_step_ns = args.time_step_ms * heatsink::kNsPerMs;
  auto estimate = heatsink::sim::EstimateFromDecisions(*log, {}, options);
  if (!estimate.ok()) {
    std::cerr << "heatsink-sim estimate: " << estimate.status().message() << "\n";
    return kExitError;
  }
  std::cout << heatsink::sim::FormatEstimate(*estimate, args.decisions_path);
  if (!args.out_dir.empty()) {
    if (absl::Status st = WriteEstimate(*estimate, args.decisions_path, args.out_dir); !st.ok()) {
      std::cerr << "heatsink-sim estimate: " << st.message() << "\n";
      return kExitError;
    }
    std::cout << "outputs: " << args.out_dir << "/estimate.{txt,json}\n";
  }
  return kExitOk;
}

// The path of this executable, for the sweep's cell processes.
std::string SelfPath(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

int EstimateSweep(const EstimateArgs& args, const std::string& name, const char* argv0) {
  std::vector<heatsink::sim::SweepAxis> axes;
  for (const std::string& s : args.sweeps) {
    auto axis = heatsink::sim::ParseSweepAxis(s);
    if (!axis.ok()) {
      std::cerr << "heatsink-sim estimate: " << axis.status().message() << "\n";
      return kExitError;
    }
    axes.push_back(std::move(*axis));
  }
  heatsink::sim::SweepRunOptions options;
  options.binary = SelfPath(argv0);
  options.base_args = {"estimate"};
  if (!args.scenario_path.empty()) options.base_args.push_back(args.scenario_path);
  if (!args.trace_path.empty()) {
    for (const std::string& a :
         {std::string("--trace"), args.trace_path, std::string("--replay-speed"),
          absl::StrFormat("%.17g", args.replay_speed), std::string("--request-limit"),
          absl::StrCat(args.request_limit), std::string("--duration-s"),
          absl::StrCat(args.duration_s)}) {
      options.base_args.push_back(a);
    }
  }
  if (args.seed.has_value()) {
    options.base_args.push_back("--seed");
    options.base_args.push_back(absl::StrCat(*args.seed));
  }
  for (const std::string& s : args.sets) {
    options.base_args.push_back("--set");
    options.base_args.push_back(s);
  }
  options.out_dir = args.out_dir.empty() ? absl::StrCat("out/", name, "-sweep") : args.out_dir;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  options.jobs = args.jobs > 0 ? args.jobs : static_cast<int>(cores > 0 ? cores : 1);
  std::cout << "sweep: " << heatsink::sim::SweepGrid(axes).size() << " cells, " << options.jobs
            << " at a time\n";
  std::cout.flush();
  auto sweep = heatsink::sim::RunSweep(axes, options);
  if (!sweep.ok()) {
    std::cerr << "heatsink-sim estimate: " << sweep.status().message() << "\n";
    return kExitError;
  }
  const std::string title = absl::StrCat("Estimate sweep: ", name);
  if (absl::Status st = heatsink::sim::WriteSweepOutputs(*sweep, title, options.out_dir);
      !st.ok()) {
    std::cerr << "heatsink-sim estimate: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << heatsink::sim::FormatSweepTable(*sweep);
  std::cout << "outputs: " << options.out_dir
            << "/sweep.{txt,csv,html} (each cell: " << options.out_dir << "/cell-NNN/)\n";
  return kExitOk;
}

int RunEstimate(const EstimateArgs& args, const char* argv0) {
  const int sources = (args.scenario_path.empty() ? 0 : 1) + (args.trace_path.empty() ? 0 : 1) +
                      (args.decisions_path.empty() ? 0 : 1);
  if (sources != 1) {
    std::cerr << "heatsink-sim estimate: give exactly one of SCENARIO, --trace FILE, "
                 "--decisions FILE\n";
    return kExitError;
  }
  if (!args.decisions_path.empty()) {
    if (!args.sweeps.empty() || !args.sets.empty()) {
      std::cerr << "heatsink-sim estimate: --sweep and --set need a run (SCENARIO or --trace), "
                   "not a recorded --decisions log\n";
      return kExitError;
    }
    return EstimateFromLog(args);
  }
  absl::StatusOr<Scenario> scenario;
  if (!args.scenario_path.empty()) {
    scenario = heatsink::sim::LoadScenarioForRun(args.scenario_path);
  } else {
    heatsink::sim::TraceScenarioOptions trace_options;
    trace_options.replay_speed = args.replay_speed;
    trace_options.request_limit = args.request_limit;
    trace_options.duration_s = args.duration_s;
    scenario = heatsink::sim::TraceScenario(args.trace_path, trace_options);
  }
  if (!scenario.ok()) {
    std::cerr << "heatsink-sim estimate: " << scenario.status().message() << "\n";
    return kExitError;
  }
  if (!args.sweeps.empty()) return EstimateSweep(args, scenario->name, argv0);

  absl::StatusOr<std::vector<KnobOverride>> overrides = ParseSets(args.sets);
  if (!overrides.ok()) {
    std::cerr << "heatsink-sim estimate: " << overrides.status().message() << "\n";
    return kExitError;
  }
  const std::string source = args.scenario_path.empty() ? args.trace_path : args.scenario_path;
  RunOptions options;
  options.seed = args.seed.value_or(scenario->seed);
  options.overrides = *overrides;
  std::vector<std::string> sets = args.sets;
  sets.push_back("dynamic_replication_mode=observe");
  options.label = "observe";
  if (args.trace_path.empty()) {
    options.replay_command = ReplayCommand(source, *options.seed, sets);
  } else {
    // The trace's scenario exists only inside this command: replay it.
    options.replay_command = absl::StrCat(
        "heatsink-sim estimate --trace ", Quote(args.trace_path), " --replay-speed ",
        absl::StrFormat("%.17g", args.replay_speed), " --request-limit ", args.request_limit,
        " --duration-s ", args.duration_s, " --seed ", *options.seed);
    for (const std::string& s : args.sets) {
      absl::StrAppend(&options.replay_command, " --set ", Quote(s));
    }
  }
  options.out_dir =
      args.out_dir.empty() ? absl::StrCat("out/", scenario->name, "-estimate") : args.out_dir;
  std::cout << "seed: " << *options.seed << "\n"
            << "observe run: " << options.replay_command << "\n";
  std::cout.flush();
  Progress progress(scenario->name);
  options.progress = progress.Fn();
  auto result = heatsink::sim::EstimateScenario(*scenario, options);
  progress.Done();
  if (!result.ok()) {
    std::cerr << "heatsink-sim estimate: " << result.status().message() << "\n";
    return kExitError;
  }
  result->run.scenario_path = source;
  absl::Status st = heatsink::sim::WriteRunOutputs(result->run, options.out_dir);
  if (st.ok()) st = WriteEstimate(result->estimate, source, options.out_dir);
  if (!st.ok()) {
    std::cerr << "heatsink-sim estimate: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << heatsink::sim::FormatEstimate(result->estimate, source);
  std::cout << "outputs: " << options.out_dir
            << "/estimate.{txt,json} (observe run report: " << options.out_dir << "/report.html)\n";
  return kExitOk;
}

void AddEstimateOptions(CLI::App* cmd, EstimateArgs* args) {
  cmd->add_option("SCENARIO", args->scenario_path, "Scenario JSON file to run in observe mode");
  cmd->add_option("--trace", args->trace_path,
                  "Mooncake trace (JSONL) to replay on the default topology instead of a scenario");
  cmd->add_option("--decisions", args->decisions_path,
                  "Estimate from a recorded decision log (simulator or runtime in observe mode) "
                  "instead of a run");
  cmd->add_option("--seed", args->seed, "Master seed (default: the scenario's)");
  cmd->add_option("--set", args->sets, "Override a knob, name=value (repeatable)");
  cmd->add_option("--sweep", args->sweeps,
                  "Sweep a knob: name=v1,v2,... (repeatable; the grid of every combination "
                  "runs in parallel processes)");
  cmd->add_option("--jobs", args->jobs, "Sweep processes at once (default: the cores online)");
  cmd->add_option("--out", args->out_dir,
                  "Output directory (default: out/<scenario>-estimate, or -sweep)");
  cmd->add_option("--object-bytes", args->object_bytes,
                  "--decisions: size of every copied object (the log does not carry sizes)")
      ->capture_default_str();
  cmd->add_option("--max-memory-replicas", args->max_memory_replicas,
                  "--decisions: dynamic_replication_max_memory_replicas of the observed system")
      ->capture_default_str();
  cmd->add_option("--original-replicas", args->original_replicas,
                  "--decisions: replicas each object has before any dynamic copy (stage 1)")
      ->capture_default_str();
  cmd->add_option("--time-step-ms", args->time_step_ms,
                  "--decisions: interval for copies/s peak and the memory series")
      ->capture_default_str();
  cmd->add_option("--replay-speed", args->replay_speed, "--trace: replay speed")
      ->capture_default_str();
  cmd->add_option("--request-limit", args->request_limit,
                  "--trace: replay only the first N requests (0: all)")
      ->capture_default_str();
  cmd->add_option("--duration-s", args->duration_s,
                  "--trace: simulated seconds (0: the trace's span plus 10 s)")
      ->capture_default_str();
}

void AddCommonOptions(CLI::App* cmd, CommonArgs* args, const std::string& out_help) {
  cmd->add_option("SCENARIO", args->scenario_path,
                  "Scenario JSON file (format: docs/scenario-format.md; examples in scenarios/)")
      ->required();
  cmd->add_option("--seed", args->seed,
                  "Master seed (default: the scenario's \"seed\"); every subsystem's seed is "
                  "derived from it");
  cmd->add_option("--set", args->sets,
                  "Override a knob, name=value (repeatable; applied after the scenario's "
                  "\"knobs\"; same names as the scenario, e.g. "
                  "dynamic_replication_admission_qps_threshold=2)");
  cmd->add_option("--out", args->out_dir, out_help);
  cmd->add_flag("--log-reads", args->log_reads,
                "Also write reads.jsonl (one line per key read that reached the master)");
}

struct SwarmArgs {
  std::string seeds;
  std::string scenario_path;
  int jobs = 1;
  std::string out_dir = "out/swarm";
  int64_t time_budget_s = 0;
  int64_t progress_every = 100;
  bool keep_scenarios = false;
};

int RunSwarmCommand(const SwarmArgs& args) {
  if (!args.scenario_path.empty()) {
    if (!args.seeds.empty()) {
      std::cerr << "heatsink-sim swarm: give --seeds or --scenario, not both\n";
      return kExitError;
    }
    absl::StatusOr<Scenario> scenario = heatsink::sim::LoadScenarioForRun(args.scenario_path);
    if (!scenario.ok()) {
      std::cerr << "heatsink-sim swarm: " << scenario.status().message() << "\n";
      return kExitError;
    }
    const heatsink::sim::SwarmSeedResult r =
        heatsink::sim::RunSwarmScenario(*scenario, heatsink::sim::SwarmCheckerOptions{});
    if (r.passed) {
      std::cout << "swarm: " << args.scenario_path << " passed, " << r.events << " events\n";
      return kExitOk;
    }
    std::cout << heatsink::sim::FormatSwarmFailure(r, args.scenario_path, "heatsink-sim");
    return kExitDifferent;
  }
  if (args.seeds.empty()) {
    std::cerr << "heatsink-sim swarm: --seeds A..B (or --scenario FILE) is required\n";
    return kExitError;
  }
  absl::StatusOr<std::pair<uint64_t, uint64_t>> range = heatsink::sim::ParseSeedRange(args.seeds);
  if (!range.ok()) {
    std::cerr << "heatsink-sim swarm: " << range.status().message() << "\n";
    return kExitError;
  }
  heatsink::sim::SwarmOptions options;
  options.seed_first = range->first;
  options.seed_last = range->second;
  options.jobs = args.jobs;
  options.out_dir = args.out_dir;
  options.time_budget_s = args.time_budget_s;
  options.progress_every = args.progress_every;
  options.keep_scenarios = args.keep_scenarios;
  const heatsink::sim::SwarmSummary summary =
      heatsink::sim::RunSwarm(options, std::cout, std::cerr);
  return summary.failed == 0 ? kExitOk : kExitDifferent;
}

}  // namespace

int main(int argc, char** argv) {
  heatsink::sim::ReexecWithMallocTunables(argv);  // heap settings (sim/malloc_tuning.h)
  // Single-threaded: Abseil's lock-order checks (on in Debian's build) only cost time.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{
      "heatsink-sim: replay workloads against the Heatsink core in a deterministic "
      "discrete-event simulation. Same scenario + seed gives byte-identical outputs.\n" +
      std::string(kExitCodesHelp)};
  app.require_subcommand(1);

  CLI::App* run = app.add_subcommand(
      "run",
      "Run one scenario. Prints the seed and the replay command first, then a short summary; "
      "writes decisions.jsonl, summary.json, timeseries.csv, host_load.csv, requests.csv, "
      "report.html and timing.json (docs/outputs.md). Exit 1 when a scenario check fails.");
  CommonArgs run_args;
  AddCommonOptions(run, &run_args, "Output directory (default: out/<scenario name>)");

  CLI::App* compare = app.add_subcommand(
      "compare",
      "Run the same scenario and seed once per dynamic_replication_mode and print one "
      "side-by-side table (latency percentiles, cross-domain bytes, bottleneck host load, "
      "copies, extra memory); writes each run into <out>/<mode>/ and compare.txt, "
      "compare.json and compare.html into <out>.");
  CommonArgs compare_args;
  std::string modes = "off,observe,enforce";
  AddCommonOptions(compare, &compare_args,
                   "Output directory (default: out/<scenario name>-compare)");
  compare
      ->add_option("--modes", modes,
                   "Comma-separated dynamic_replication_mode settings to run: off, observe, "
                   "enforce")
      ->capture_default_str();
  int compare_jobs = 0;
  compare
      ->add_option("--jobs", compare_jobs,
                   "Runs at once, on threads (default: the cores online, at most one per mode); "
                   "the outputs do not depend on it, the memory does (one run's worth per job)")
      ->check(CLI::NonNegativeNumber);

  DiffArgs diff_args;
  CLI::App* diff = AddDiffCommand(&app, &diff_args);

  CLI::App* estimate = app.add_subcommand(
      "estimate",
      "Run a scenario (or a trace) in observe mode, or read a recorded observe decision log, "
      "and report what enforce would do: would-propose count, copies per second (mean, peak), "
      "bytes copied, extra memory peak, per requester and target domain (docs/estimate.md). "
      "With --sweep, the grid of knob settings as a table, sweep.csv and sweep.html.");
  EstimateArgs estimate_args;
  AddEstimateOptions(estimate, &estimate_args);

  CLI::App* swarm = app.add_subcommand(
      "swarm",
      "Randomized fault simulation: each seed draws a small topology, tiny-limit knobs, "
      "workloads and a fault schedule, runs it with every invariant checked after every event "
      "and a liveness phase after the faults stop (docs/swarm.md). A failing seed prints the "
      "invariant, the last events, its scenario file and the replay command. Exit 0 when every "
      "seed passes, 1 when one fails, 2 on a usage error.");
  SwarmArgs swarm_args;
  swarm->add_option("--seeds", swarm_args.seeds, "Seed range A..B (inclusive), or one seed N");
  swarm->add_option("--scenario", swarm_args.scenario_path,
                    "Run one scenario file (for example a failing seed's) under the swarm checks");
  swarm->add_option("--jobs", swarm_args.jobs, "Seeds run at once (threads)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  swarm->add_option("--out", swarm_args.out_dir, "Where failing seeds' scenarios are written")
      ->capture_default_str();
  swarm->add_option("--time-budget-s", swarm_args.time_budget_s,
                    "Stop starting seeds after this many seconds of wall time (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  swarm->add_option("--progress-every", swarm_args.progress_every,
                    "A progress line on stderr every N seeds (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  swarm->add_flag("--keep-scenarios", swarm_args.keep_scenarios,
                  "Write every seed's scenario into --out, not only the failing ones'");

  GenTraceArgs gen_trace_args;
  CLI::App* gen_trace = AddGenTraceCommand(&app, &gen_trace_args);
  ValidateArgs validate_args;
  CLI::App* validate = AddValidateCommand(&app, &validate_args);

  for (CLI::App* sub : {run, compare, estimate}) sub->footer(kExitCodesHelp);
  diff->footer(absl::StrCat(kExitCodesHelp, "\n\n", DiffCommandExample()));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitError;
  }
  try {
    if (*run) return RunOne(run_args);
    if (*compare) return RunCompare(compare_args, modes, compare_jobs);
    if (*diff) return RunDiff(diff_args);
    if (*estimate) return RunEstimate(estimate_args, argv[0]);
    if (*swarm) return RunSwarmCommand(swarm_args);
    if (*gen_trace) return RunGenTrace(gen_trace_args);
    if (*validate) return RunValidate(validate_args);
  } catch (const std::exception& e) {
    std::cerr << "heatsink-sim: " << e.what() << "\n";
    return kExitError;
  }
  return kExitError;
}
