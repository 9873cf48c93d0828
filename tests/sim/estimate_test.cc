// Covers the observe-mode estimator (sim/estimate.h) and its sweeps
// (sim/estimate_sweep.h): the replica-limit and release model on hand-made
// decision logs (copies, capped, bytes, copies per second, extra memory over
// time, per requester and target domain), the estimate of a scenario against
// what enforce actually did on the same scenario and seed (within the
// tolerance stated in docs/estimate.md), monotonicity in the admission
// threshold, and the shape of a sweep run through the heatsink-sim binary
// (table, CSV, HTML, grid order).
#include "sim/estimate.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/estimate_sweep.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_paths::RepoRoot;

constexpr uint64_t kMiB = 1 << 20;

std::string Line(int64_t t_ms, const std::string& key, const std::string& outcome,
                 int64_t version, const std::string& requester = "null",
                 const std::string& target = "null", const std::string& extra = "") {
  const std::string reason = outcome == "rejected" ? "\"cooldown\"" : "null";
  return absl::StrCat("{\"t_ns\":", t_ms * 1'000'000, ",\"kind\":\"heat\",\"tenant\":\"default\",",
                      "\"key\":\"", key, "\",\"requester_domain\":", requester,
                      ",\"target_domain\":", target, ",\"outcome\":\"", outcome,
                      "\",\"reason\":", reason,
                      ",\"source_segment\":1,\"target_segment\":2,\"lease_id\":null,\"version\":",
                      version, extra, "}\n");
}

std::vector<LoggedDecision> Parse(const std::string& text) {
  absl::StatusOr<std::vector<LoggedDecision>> log = ParseDecisionLog(text, "test.jsonl");
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *log : std::vector<LoggedDecision>();
}

ObjectEvent Put(int64_t t_ms, const std::string& key, uint64_t size) {
  return ObjectEvent{t_ms * 1'000'000, "default", key, false, size};
}

Estimate MustEstimate(const std::vector<LoggedDecision>& log,
                      const std::vector<ObjectEvent>& objects, const EstimateOptions& options) {
  absl::StatusOr<Estimate> e = EstimateFromDecisions(log, objects, options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? *e : Estimate();
}

TEST(EstimateModel, CountsCopiesBytesAndRatesFromWouldPropose) {
  const auto log = Parse(Line(100, "a", "would_propose", 1) + Line(200, "b", "would_propose", 1) +
                         Line(300, "a", "rejected", 1) + Line(2500, "c", "would_propose", 1));
  EstimateOptions options;
  options.max_memory_replicas = 4;
  options.duration_ns = 4 * kNsPerSec;
  const Estimate e = MustEstimate(
      log, {Put(0, "a", 1 * kMiB), Put(0, "b", 2 * kMiB), Put(0, "c", 4 * kMiB)}, options);
  EXPECT_EQ(e.decisions, 4);
  EXPECT_EQ(e.would_propose, 3);
  EXPECT_EQ(e.rejected, 1);
  EXPECT_EQ(e.copies, 3);
  EXPECT_EQ(e.capped, 0);
  EXPECT_EQ(e.bytes, 7 * kMiB);
  EXPECT_EQ(e.sizes_unknown, 0);
  // Two copies in [0 s, 1 s), one in [2 s, 3 s): peak 2/s, mean 3 / 4 s.
  EXPECT_EQ(e.copies_interval_peak, 2);
  EXPECT_EQ(e.copies_interval_peak_t_ns, 0);
  EXPECT_DOUBLE_EQ(e.copies_per_second_peak(), 2.0);
  EXPECT_DOUBLE_EQ(e.copies_per_second_mean(), 0.75);
  ASSERT_EQ(e.intervals.size(), 4u);
  EXPECT_EQ(e.intervals[0].extra_memory_bytes, 3 * kMiB);
  EXPECT_EQ(e.intervals[1].extra_memory_bytes, 3 * kMiB);  // carried over
  EXPECT_EQ(e.intervals[2].copies, 1);
  EXPECT_EQ(e.intervals[3].extra_memory_bytes, 7 * kMiB);
  EXPECT_EQ(e.extra_memory_peak_bytes, 7 * kMiB);
  EXPECT_EQ(e.extra_memory_peak_t_ns, 2500 * kNsPerMs);
}

TEST(EstimateModel, ReplicaLimitCountsOriginalsAndResetsOnNewVersion) {
  // Cap 3 with one original: two copies of version 1, the third is capped;
  // version 2 (a new put) drops the old replicas and copies again.
  const auto log = Parse(Line(1000, "k", "would_propose", 1) + Line(2000, "k", "would_propose", 1) +
                         Line(3000, "k", "would_propose", 1) + Line(5000, "k", "would_propose", 2));
  EstimateOptions options;
  options.max_memory_replicas = 3;
  options.original_replicas = 1;
  const Estimate e =
      MustEstimate(log, {Put(0, "k", 1 * kMiB), Put(4000, "k", 2 * kMiB)}, options);
  EXPECT_EQ(e.would_propose, 4);
  EXPECT_EQ(e.copies, 3);
  EXPECT_EQ(e.capped, 1);
  EXPECT_EQ(e.bytes, 4 * kMiB);  // 1 + 1 of version 1, then 2 of version 2
  EXPECT_EQ(e.extra_memory_peak_bytes, 2 * kMiB);
  EXPECT_EQ(e.extra_memory_final_bytes, 2 * kMiB);
  // The put at 4 s released the two old replicas.
  ASSERT_GE(e.intervals.size(), 5u);
  EXPECT_EQ(e.intervals[4].extra_memory_bytes, 0u);
}

TEST(EstimateModel, VersionChangeInTheLogReleasesWithoutObjectEvents) {
  const auto log = Parse(Line(1000, "k", "would_propose", 1) + Line(2000, "k", "would_propose", 1) +
                         Line(3000, "k", "would_propose", 2));
  EstimateOptions options;
  options.max_memory_replicas = 2;
  options.default_object_bytes = 10;
  const Estimate e = MustEstimate(log, {}, options);
  EXPECT_EQ(e.copies, 2);  // version 1 once (cap 2 with the original), version 2 once
  EXPECT_EQ(e.capped, 1);
  EXPECT_EQ(e.bytes, 20u);
  EXPECT_EQ(e.sizes_unknown, 2);
  EXPECT_EQ(e.extra_memory_peak_bytes, 10u);
}

TEST(EstimateModel, RemoveReleasesMemory) {
  const auto log = Parse(Line(1000, "k", "would_propose", 1));
  EstimateOptions options;
  options.duration_ns = 5 * kNsPerSec;
  ObjectEvent remove{3000 * kNsPerMs, "default", "k", true, 0};
  const Estimate e = MustEstimate(log, {Put(0, "k", kMiB), remove}, options);
  EXPECT_EQ(e.extra_memory_peak_bytes, kMiB);
  EXPECT_EQ(e.extra_memory_final_bytes, 0u);
  ASSERT_EQ(e.intervals.size(), 5u);
  EXPECT_EQ(e.intervals[2].extra_memory_bytes, kMiB);
  EXPECT_EQ(e.intervals[3].extra_memory_bytes, 0u);
}

TEST(EstimateModel, GroupsByRequesterAndTargetDomainWithPerDomainCap) {
  // Domain-aware: the cap counts would-be copies in the target domain only.
  const auto log = Parse(Line(1000, "k", "would_propose", 1, "\"d1\"", "\"d1\"") +
                         Line(2000, "k", "would_propose", 1, "\"d1\"", "\"d1\"") +
                         Line(3000, "k", "would_propose", 1, "\"d1\"", "\"d1\"") +
                         Line(4000, "k", "would_propose", 1, "\"d2\"", "\"d2\""));
  EstimateOptions options;
  options.max_memory_replicas = 2;
  const Estimate e = MustEstimate(log, {Put(0, "k", kMiB)}, options);
  ASSERT_EQ(e.groups.size(), 2u);
  EXPECT_EQ(e.groups[0].requester_domain, "d1");
  EXPECT_EQ(e.groups[0].target_domain, "d1");
  EXPECT_EQ(e.groups[0].would_propose, 3);
  EXPECT_EQ(e.groups[0].copies, 2);
  EXPECT_EQ(e.groups[0].capped, 1);
  EXPECT_EQ(e.groups[0].extra_memory_peak_bytes, 2 * kMiB);
  EXPECT_EQ(e.groups[1].requester_domain, "d2");
  EXPECT_EQ(e.groups[1].copies, 1);
  EXPECT_EQ(e.extra_memory_peak_bytes, 3 * kMiB);
  const std::string text = FormatEstimate(e, "test.jsonl");
  EXPECT_THAT(text, HasSubstr("d1 -> d1"));
  EXPECT_THAT(text, HasSubstr("d2 -> d2"));
}

TEST(EstimateModel, SizeFromAnExtraLogKeyWins) {
  const auto log =
      Parse(Line(1000, "k", "would_propose", 1, "null", "null", ",\"size_bytes\":777"));
  const Estimate e = MustEstimate(log, {Put(0, "k", kMiB)}, EstimateOptions());
  EXPECT_EQ(e.bytes, 777u);
}

TEST(EstimateModel, AcceptedAndRejectedRecordsAreNotEstimated) {
  const auto log = Parse(Line(1000, "k", "accepted", 1) + Line(2000, "k", "rejected", 1));
  const Estimate e = MustEstimate(log, {}, EstimateOptions());
  EXPECT_EQ(e.accepted, 1);
  EXPECT_EQ(e.rejected, 1);
  EXPECT_EQ(e.copies, 0);
  EXPECT_EQ(e.extra_memory_peak_bytes, 0u);
}

TEST(EstimateModel, RejectsBadOptions) {
  EstimateOptions options;
  options.max_memory_replicas = 0;
  EXPECT_FALSE(EstimateFromDecisions({}, {}, options).ok());
  options = EstimateOptions();
  options.time_step_ns = 0;
  EXPECT_FALSE(EstimateFromDecisions({}, {}, options).ok());
}

TEST(EstimateModel, JsonRoundTripsTheTotals) {
  const auto log = Parse(Line(100, "a", "would_propose", 1) + Line(1200, "b", "would_propose", 1));
  const Estimate e =
      MustEstimate(log, {Put(0, "a", kMiB), Put(0, "b", 3 * kMiB)}, EstimateOptions());
  absl::StatusOr<EstimateTotals> t = ParseEstimateTotals(EstimateToJson(e, "x"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->would_propose, 2);
  EXPECT_EQ(t->copies, 2);
  EXPECT_EQ(t->bytes, 4 * kMiB);
  EXPECT_EQ(t->extra_memory_peak_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(t->copies_per_second_peak, 1.0);
  EXPECT_FALSE(ParseEstimateTotals("{\"copies\": 1}").ok());
}

// ------------------------------------------------------------ on scenarios

Scenario Load(const std::string& relative) {
  absl::StatusOr<Scenario> s = LoadScenarioForRun((RepoRoot() / relative).string());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario();
}

fs::path FreshDir(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heatsink_estimate" / name;
  fs::remove_all(dir);
  return dir;
}

ScenarioEstimate MustEstimateScenario(const Scenario& s, const std::string& dir,
                                      std::vector<KnobOverride> overrides = {}) {
  RunOptions options;
  options.out_dir = FreshDir(dir).string();
  options.overrides = std::move(overrides);
  absl::StatusOr<ScenarioEstimate> e = EstimateScenario(s, options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : ScenarioEstimate();
}

RunResult MustRunEnforce(const Scenario& s) {
  RunOptions options;
  options.overrides.push_back(KnobOverride{"dynamic_replication_mode", "enforce"});
  absl::StatusOr<RunResult> r = RunScenario(s, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : RunResult();
}

// docs/estimate.md: the estimated copies are within max(2, 5%) of the copies
// enforce completes on the same scenario and seed.
void ExpectWithinTolerance(int64_t estimated, int64_t actual) {
  const int64_t tolerance = std::max<int64_t>(2, actual * 5 / 100);
  EXPECT_LE(std::abs(estimated - actual), tolerance)
      << "estimated " << estimated << " copies, enforce made " << actual;
}

TEST(EstimateScenarios, ObserveEstimateMatchesEnforceOnCrossDomainReuse) {
  const Scenario s = Load("scenarios/cross-domain-reuse.json");
  const ScenarioEstimate observe = MustEstimateScenario(s, "cdr");
  const RunResult enforce = MustRunEnforce(s);
  EXPECT_EQ(observe.run.copies_completed, 0);  // observe creates nothing
  ASSERT_GT(enforce.copies_completed, 10);
  ExpectWithinTolerance(observe.estimate.copies, enforce.copies_completed);
  // Bytes and memory follow the copies (same objects, no eviction here).
  const double bytes_ratio = static_cast<double>(observe.estimate.bytes) /
                             static_cast<double>(enforce.copy_bytes);
  EXPECT_NEAR(bytes_ratio, 1.0, 0.05);
  // What the would-be replicas remove of the avoidable cross-domain bytes
  // (the observe run's limit lines) matches what enforce removed; it is never
  // above the online line, and the lines are the observe run's own.
  ASSERT_TRUE(observe.estimate.limits.has_value());
  const EstimateLimits& l = *observe.estimate.limits;
  EXPECT_EQ(l.online_removed_bytes, observe.run.limits.online.removed_bytes);
  EXPECT_EQ(l.avoidable_bytes, observe.run.limits.avoidable_bytes);
  ASSERT_TRUE(l.removed_bytes.has_value());
  EXPECT_LE(*l.removed_bytes, l.online_removed_bytes);
  ASSERT_GT(enforce.limits.avoidable_removed_bytes, 0u);
  EXPECT_NEAR(static_cast<double>(*l.removed_bytes) /
                  static_cast<double>(enforce.limits.avoidable_removed_bytes),
              1.0, 0.05);
  EXPECT_EQ(observe.run.limit_recorder, nullptr);  // released after the estimate
}

TEST(EstimateScenarios, RefusesAScriptedModeSwitch) {
  // The estimate is what observe saw from start to end.
  const Scenario s = Load("scenarios/admission/rollout.json");
  RunOptions options;
  options.out_dir = FreshDir("rollout").string();
  const absl::StatusOr<ScenarioEstimate> e = EstimateScenario(s, options);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("rollout.json:"));
  EXPECT_THAT(e.status().message(), HasSubstr("set_knob of dynamic_replication_mode"));
}

TEST(EstimateScenarios, ObserveEstimateBoundsEnforceOnEvictionRecreate) {
  const Scenario s = Load("scenarios/eviction-recreate.json");
  const ScenarioEstimate observe = MustEstimateScenario(s, "er");
  const RunResult enforce = MustRunEnforce(s);
  ASSERT_GT(enforce.copies_completed, 10);
  // docs/estimate.md: with eviction the estimate is an upper bound (eviction
  // drops dynamic replicas first and starts recreate cooldowns observe does
  // not see, and enforce's own replicas fill the memory the placement cap
  // counts), at most twice the copies made.
  EXPECT_GE(observe.estimate.copies, enforce.copies_completed);
  EXPECT_LE(observe.estimate.copies, enforce.copies_completed * 2)
      << "estimated " << observe.estimate.copies << " copies, enforce made "
      << enforce.copies_completed;
}

// Where monotonicity must hold: with an admission cooldown longer than the
// run every heat key proposes at most once, and a key whose window reaches a
// higher hit count has reached every lower one. (With a short cooldown it
// need not hold: a later first admission can end its cooldown in time for a
// second one; docs/estimate.md.)
TEST(EstimateScenarios, HigherThresholdNeverMoreWouldPropose) {
  const Scenario s = Load("scenarios/cross-domain-reuse.json");
  int64_t previous = -1;
  int64_t first = -1;
  for (const char* threshold : {"0.2", "0.5", "0.6", "0.8"}) {
    const ScenarioEstimate e = MustEstimateScenario(
        s, absl::StrCat("mono-", threshold),
        {KnobOverride{"dynamic_replication_admission_cooldown_ms", "3600000"},
         KnobOverride{"dynamic_replication_admission_qps_threshold", threshold}});
    if (previous >= 0) {
      EXPECT_LE(e.estimate.would_propose, previous) << "threshold " << threshold;
    } else {
      first = e.estimate.would_propose;
    }
    previous = e.estimate.would_propose;
  }
  // The range changes the outcome (200 objects, then fewer, then none).
  EXPECT_GT(first, 0);
  EXPECT_LT(previous, first);
}

// ----------------------------------------------------------------- sweeps

TEST(EstimateSweep, ParsesAxesAndOrdersTheGridLastAxisFastest) {
  absl::StatusOr<SweepAxis> a = ParseSweepAxis("x=1,2");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->knob, "x");
  EXPECT_THAT(a->values, ::testing::ElementsAre("1", "2"));
  EXPECT_FALSE(ParseSweepAxis("x").ok());
  EXPECT_FALSE(ParseSweepAxis("=1").ok());
  EXPECT_FALSE(ParseSweepAxis("x=1,,2").ok());
  EXPECT_FALSE(ParseSweepAxis("x=1,1").ok());
  const auto grid = SweepGrid({SweepAxis{"x", {"1", "2"}}, SweepAxis{"y", {"a", "b", "c"}}});
  ASSERT_EQ(grid.size(), 6u);
  EXPECT_THAT(grid[0], ::testing::ElementsAre("1", "a"));
  EXPECT_THAT(grid[1], ::testing::ElementsAre("1", "b"));
  EXPECT_THAT(grid[3], ::testing::ElementsAre("2", "a"));
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunSim(const std::string& args, const fs::path& stdout_path) {
  const std::string command = absl::StrCat("cd '", RepoRoot().string(), "' && '",
                                           HEATSINK_SIM_BINARY, "' ", args, " >'",
                                           stdout_path.string(), "' 2>&1");
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(EstimateSweep, CommandWritesTableCsvAndHtmlInGridOrder) {
  const fs::path dir = FreshDir("sweep");
  fs::create_directories(dir);
  const int rc = RunSim(
      absl::StrCat("estimate scenarios/admission/threshold-get.json --jobs 3",
                   " --sweep dynamic_replication_admission_qps_threshold=0.1,0.3,0.5",
                   " --sweep dynamic_replication_heat_window_seconds=5,10 --out '",
                   (dir / "out").string(), "'"),
      dir / "stdout");
  const std::string out = ReadFile(dir / "stdout");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("sweep: 6 cells"));

  const std::string csv = ReadFile(dir / "out" / "sweep.csv");
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 7u) << csv;
  EXPECT_EQ(lines[0],
            "dynamic_replication_admission_qps_threshold,dynamic_replication_heat_window_seconds,"
            "would_propose,copies,capped,bytes,copies_per_second_mean,copies_per_second_peak,"
            "extra_memory_peak_bytes,removed_bytes,online_removed_bytes,of_online,"
            "clairvoyant_removed_bytes,of_clairvoyant");
  // Grid order (last axis fastest), whatever order the processes ended in.
  const std::vector<std::string> expected_prefix = {"0.1,5,", "0.1,10,", "0.3,5,",
                                                    "0.3,10,", "0.5,5,", "0.5,10,"};
  std::vector<int64_t> would_propose;
  for (size_t i = 0; i < expected_prefix.size(); ++i) {
    EXPECT_EQ(lines[i + 1].rfind(expected_prefix[i], 0), 0u) << lines[i + 1];
    std::vector<std::string> cells = absl::StrSplit(lines[i + 1], ',');
    ASSERT_EQ(cells.size(), 14u);
    int64_t w = 0;
    ASSERT_TRUE(absl::SimpleAtoi(cells[2], &w));
    would_propose.push_back(w);
    EXPECT_TRUE(fs::exists(dir / "out" / absl::StrFormat("cell-%03d", i) / "estimate.json"));
  }
  // threshold-get makes three reads of k in 20 ms: hit count
  // max(1, ceil(qps x window)) <= 3 proposes once, above it never.
  EXPECT_EQ(would_propose[0], 1);  // 0.1 x 5 -> 1
  EXPECT_EQ(would_propose[3], 1);  // 0.3 x 10 -> 3
  EXPECT_EQ(would_propose[5], 0);  // 0.5 x 10 -> 5
  // Per window, a higher threshold never proposes more.
  for (size_t w = 0; w < 2; ++w) {
    for (size_t t = 1; t < 3; ++t) {
      EXPECT_LE(would_propose[t * 2 + w], would_propose[(t - 1) * 2 + w]);
    }
  }
  const std::string html = ReadFile(dir / "out" / "sweep.html");
  EXPECT_THAT(html, HasSubstr("<svg"));
  EXPECT_THAT(html, HasSubstr("dynamic_replication_heat_window_seconds = 10"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_EQ(ReadFile(dir / "out" / "sweep.txt").empty(), false);
}

TEST(EstimateSweep, ScenarioEstimateIsByteIdenticalInTwoProcesses) {
  const fs::path dir = FreshDir("twice");
  fs::create_directories(dir);
  for (const char* run : {"a", "b"}) {
    ASSERT_EQ(RunSim(absl::StrCat("estimate scenarios/admission/observe-creates-nothing.json",
                                  " --out '", (dir / run).string(), "'"),
                     dir / absl::StrCat("stdout-", run)),
              0)
        << ReadFile(dir / absl::StrCat("stdout-", run));
  }
  const std::string a = ReadFile(dir / "a" / "estimate.json");
  EXPECT_THAT(a, HasSubstr("\"would_propose\": 1"));
  EXPECT_EQ(a, ReadFile(dir / "b" / "estimate.json"));
  EXPECT_EQ(ReadFile(dir / "a" / "estimate.txt"), ReadFile(dir / "b" / "estimate.txt"));
}

TEST(EstimateSweep, DecisionLogEstimateFromTheCommandLine) {
  const fs::path dir = FreshDir("from-log");
  fs::create_directories(dir);
  std::ofstream(dir / "decisions.jsonl")
      << Line(100, "a", "would_propose", 1) << Line(1500, "a", "would_propose", 1);
  const int rc = RunSim(absl::StrCat("estimate --decisions '", (dir / "decisions.jsonl").string(),
                                     "' --object-bytes 1048576 --max-memory-replicas 3 --out '",
                                     (dir / "out").string(), "'"),
                        dir / "stdout");
  const std::string out = ReadFile(dir / "stdout");
  ASSERT_EQ(rc, 0) << out;
  absl::StatusOr<EstimateTotals> t = ParseEstimateTotals(ReadFile(dir / "out" / "estimate.json"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->copies, 2);
  EXPECT_EQ(t->bytes, 2 * kMiB);
  // --sweep needs a run, not a recorded log.
  EXPECT_EQ(RunSim(absl::StrCat("estimate --decisions '", (dir / "decisions.jsonl").string(),
                                "' --sweep dynamic_replication_heat_window_seconds=1,2"),
                   dir / "stdout2"),
            2);
}

}  // namespace
}  // namespace heatsink::sim
