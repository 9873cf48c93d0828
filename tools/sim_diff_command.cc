#include "tools/sim_diff_command.h"

#include <iostream>
#include <utility>

#include "absl/status/status.h"
#include "sim/decision_log.h"
#include "sim/validate.h"

namespace {
constexpr int kExitOk = 0;
constexpr int kExitDifferent = 1;
constexpr int kExitError = 2;
}  // namespace

int RunDiff(const DiffArgs& args) {
  const auto fail = [](const absl::Status& st) {
    std::cerr << "heatsink-sim diff: " << st.message() << "\n";
    return kExitError;
  };
  auto a = heatsink::sim::ReadDecisionLogFile(args.a);
  if (!a.ok()) return fail(a.status());
  auto b = heatsink::sim::ReadDecisionLogFile(args.b);
  if (!b.ok()) return fail(b.status());
  heatsink::sim::DecisionDiffOptions options;
  options.time_tolerance_ns = args.time_tolerance_ms * 1'000'000;
  auto ignored = heatsink::sim::ParseIgnoredDecisionFields(args.ignore);
  if (!ignored.ok()) return fail(ignored.status());
  options.ignored_fields = *std::move(ignored);
  if (!args.b_replay_summary.empty()) {
    auto summary = heatsink::sim::ReadRuntimeSummaryFile(args.b_replay_summary);
    if (!summary.ok()) return fail(summary.status());
    heatsink::sim::PlaceOnScenarioTime(&*b, summary->t0_steady_ns, summary->time_scale);
    std::cout << "B's times placed on the scenario's time line: (t - " << summary->t0_steady_ns
              << ") / " << summary->time_scale << "; records are shown as written\n";
  }
  const heatsink::sim::DecisionDiff diff = heatsink::sim::DiffDecisionLogs(*a, *b, options);
  std::cout << heatsink::sim::FormatDecisionDiff(diff, *a, *b, args.a, args.b, args.keys_max);
  return diff.equal() ? kExitOk : kExitDifferent;
}

const char* DiffCommandExample() {
  return "Simulation against real processes: heatsink-sim diff SIM/decisions.jsonl "
         "REPLAY/decisions.jsonl --b-replay-summary REPLAY/summary.json --time-tolerance-ms 500 "
         "--ignore version,lease_id";
}

CLI::App* AddDiffCommand(CLI::App* app, DiffArgs* args) {
  CLI::App* diff = app->add_subcommand(
      "diff",
      "Compare two decision logs (decisions.jsonl): added, removed and changed admission "
      "decisions, grouped by reason and by key, with the first divergence in context.");
  diff->add_option("A", args->a, "Reference decision log (for example the golden file)")
      ->required()
      ->check(CLI::ExistingFile);
  diff->add_option("B", args->b, "Decision log to compare against A")
      ->required()
      ->check(CLI::ExistingFile);
  diff->add_option("--keys", args->keys_max, "How many keys to list in the by-key table")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  diff->add_option("--time-tolerance-ms", args->time_tolerance_ms,
                   "Match records of the same kind, key and domains whose times differ by at "
                   "most this much (0: equal times, the regression setting)")
      ->check(CLI::Range(int64_t{0}, int64_t{86'400'000}))
      ->capture_default_str();
  diff->add_option("--ignore", args->ignore,
                   "Comma-separated fields a matched pair may differ in: version, lease_id, "
                   "source_segment, target_segment");
  diff->add_option("--b-replay-summary", args->b_replay_summary,
                   "B was written by heatsink-replay: read t0_steady_ns and time_scale from this "
                   "summary.json and place B's times on the scenario's time line first")
      ->check(CLI::ExistingFile);
  return diff;
}
