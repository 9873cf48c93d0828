// heatsink-sim swarm (sim/swarm.h): seeds to scenarios to checked runs.
#include "sim/swarm.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/report_format.h"
#include "sim/runner.h"
#include "sim/swarm_generator.h"

namespace heatsink::sim {
namespace {

// The invariant named by a core CheckInvariants message.
std::string CoreInvariantName(absl::string_view message) {
  if (absl::StartsWith(message, "master invariant violated")) return "core.master";
  if (absl::StartsWith(message, "dynamic replication invariant violated")) {
    return "core.dynamic_replication";
  }
  if (absl::StartsWith(message, "heat window")) return "core.heat_window";
  // The run's own recovery checks (sim/internal/recovery_audit.h):
  // "recovery invariant <name>: ...".
  if (absl::ConsumePrefix(&message, "recovery invariant ")) {
    return std::string(message.substr(0, message.find(':')));
  }
  return "run_error";
}

}  // namespace

SwarmSeedResult RunSwarmScenario(const Scenario& scenario, const SwarmCheckerOptions& checker) {
  SwarmSeedResult result;
  result.seed = scenario.seed;
  result.scenario_name = scenario.name;
  SwarmChecker observer(checker);
  RunOptions options;
  options.keep_scenario_echo = false;
  options.observer = &observer;
  absl::StatusOr<RunResult> run = RunScenario(scenario, options);
  result.recent_events = observer.RecentEvents();
  result.leases_accepted = observer.leases_accepted();
  result.proposals_accepted = observer.proposals_accepted();
  result.master_crashes = observer.master_crashes();
  result.copy_ends_accepted = observer.copy_ends_accepted();
  if (run.ok()) {
    result.passed = true;
    result.events = run->events_simulated;
    return result;
  }
  if (observer.violation().has_value()) {
    const SwarmViolation& v = *observer.violation();
    result.invariant = v.invariant;
    result.message = v.message;
    result.t_ns = v.t_ns;
    result.event = v.event;
  } else {
    result.invariant = CoreInvariantName(run.status().message());
    result.message = std::string(run.status().message());
  }
  result.events = static_cast<int64_t>(std::max(result.event, observer.events_seen()));
  if (result.t_ns == 0) result.t_ns = observer.last_event_ns();
  if (result.event == 0) result.event = observer.events_seen();
  return result;
}

SwarmSeedResult RunSwarmSeed(uint64_t seed, const SwarmCheckerOptions& checker) {
  const SwarmScenario generated = GenerateSwarmScenario(seed);
  absl::StatusOr<Scenario> scenario = ParseScenario(
      generated.json, absl::StrCat(generated.name, ".json"), "", SimulatorLoadOptions());
  SwarmSeedResult result;
  if (scenario.ok()) {
    result = RunSwarmScenario(*scenario, checker);
  } else {
    result.seed = seed;
    result.scenario_name = generated.name;
    result.invariant = "run_error";
    result.message =
        absl::StrCat("the generated scenario does not load: ", scenario.status().message());
  }
  result.seed = seed;
  result.scenario_json = generated.json;
  return result;
}

std::string FormatSwarmFailure(const SwarmSeedResult& r, const std::string& scenario_path,
                               const std::string& program) {
  std::string out =
      absl::StrCat("FAIL seed ", r.seed, " (", r.scenario_name, "): invariant ", r.invariant, "\n");
  absl::StrAppend(&out, "  message: ", r.message, "\n");
  absl::StrAppendFormat(&out, "  at: %d.%06d ms simulated, event %d\n", r.t_ns / kNsPerMs,
                        r.t_ns % kNsPerMs, r.event);
  absl::StrAppend(&out, "  last ", r.recent_events.size(), " events:\n");
  for (const std::string& e : r.recent_events) absl::StrAppend(&out, "    ", e, "\n");
  if (!scenario_path.empty()) absl::StrAppend(&out, "  scenario: ", scenario_path, "\n");
  absl::StrAppend(&out, "  replay: ", program, " swarm --seeds ", r.seed, "..", r.seed, "\n");
  if (!scenario_path.empty()) {
    absl::StrAppend(&out, "  replay the file: ", program, " swarm --scenario ", scenario_path,
                    "  (or: ", program, " run ", scenario_path, ", core checks only)\n");
  }
  return out;
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> ParseSeedRange(const std::string& text) {
  constexpr uint64_t kSeedMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  std::vector<std::string> parts = absl::StrSplit(text, absl::MaxSplits("..", 1));
  if (parts.size() == 1) parts.push_back(parts.front());
  uint64_t a = 0;
  uint64_t b = 0;
  if (!absl::SimpleAtoi(parts[0], &a) || !absl::SimpleAtoi(parts[1], &b) || a > kSeedMax ||
      b > kSeedMax || a > b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--seeds \"", text, "\": expected A..B with 0 <= A <= B <= 2^63-1 (or one seed N)"));
  }
  return std::make_pair(a, b);
}

std::string FormatSwarmSummary(const SwarmSummary& s) {
  std::string out =
      absl::StrCat("swarm: ", s.seeds_run, " seeds run, ", s.passed, " passed, ", s.failed,
                   " failed, ", s.events, " events, ", s.wall_ms, " ms wall; ", s.leases_accepted,
                   " leases, ", s.copy_ends_accepted, " copies, ", s.proposals_accepted,
                   " proposals granted, ", s.master_crashes, " master crashes");
  if (s.budget_exhausted) absl::StrAppend(&out, " (time budget reached; later seeds not run)");
  return out;
}

SwarmSummary RunSwarm(const SwarmOptions& options, std::ostream& out, std::ostream& err) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed_ms = [start] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 start)
        .count();
  };
  const uint64_t count = options.seed_last - options.seed_first + 1;
  const int jobs = static_cast<int>(
      std::clamp<uint64_t>(static_cast<uint64_t>(std::max(options.jobs, 1)), 1, count));

  // Workers take seeds in order; the printer reports them in order.
  std::mutex mu;
  std::condition_variable ready;
  std::vector<std::optional<SwarmSeedResult>> results(count);
  uint64_t next = 0;
  uint64_t started = 0;
  bool stopped = false;
  auto worker = [&] {
    for (;;) {
      uint64_t index = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= count || stopped) return;
        if (options.time_budget_s > 0 && elapsed_ms() >= options.time_budget_s * 1000) {
          stopped = true;
          ready.notify_all();
          return;
        }
        index = next++;
        started = next;
      }
      SwarmSeedResult r = RunSwarmSeed(options.seed_first + index, options.checker);
      {
        std::lock_guard<std::mutex> lock(mu);
        results[index] = std::move(r);
      }
      ready.notify_all();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(jobs));
  for (int i = 0; i < jobs; ++i) threads.emplace_back(worker);

  SwarmSummary summary;
  for (uint64_t i = 0; i < count; ++i) {
    SwarmSeedResult r;
    {
      std::unique_lock<std::mutex> lock(mu);
      ready.wait(lock, [&] { return results[i].has_value() || (stopped && i >= started); });
      if (!results[i].has_value()) break;
      r = std::move(*results[i]);
      results[i].reset();
    }
    ++summary.seeds_run;
    summary.events += r.events;
    summary.leases_accepted += r.leases_accepted;
    summary.copy_ends_accepted += r.copy_ends_accepted;
    summary.proposals_accepted += r.proposals_accepted;
    summary.master_crashes += r.master_crashes;
    std::string path;
    if (!options.out_dir.empty() && (!r.passed || options.keep_scenarios)) {
      path = JoinPath(options.out_dir, absl::StrCat(r.scenario_name, ".json"));
      absl::Status written = EnsureDirectory(options.out_dir);
      if (written.ok()) written = WriteTextFile(path, r.scenario_json);
      if (!written.ok()) {
        err << "swarm: cannot write " << path << ": " << written.message() << "\n";
        path.clear();
      }
    }
    if (r.passed) {
      ++summary.passed;
    } else {
      ++summary.failed;
      out << FormatSwarmFailure(r, path, options.program) << std::flush;
    }
    if (options.progress_every > 0 && summary.seeds_run % options.progress_every == 0) {
      err << "swarm: " << summary.seeds_run << "/" << count << " seeds, " << summary.failed
          << " failed, " << elapsed_ms() << " ms\n"
          << std::flush;
    }
  }
  for (std::thread& t : threads) t.join();
  summary.budget_exhausted = summary.seeds_run < static_cast<int64_t>(count);
  summary.wall_ms = elapsed_ms();
  out << FormatSwarmSummary(summary) << "\n" << std::flush;
  return summary;
}

}  // namespace heatsink::sim
