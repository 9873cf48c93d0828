// Covers the RFC's first rule on a whole run (sim/network.h, "Traffic
// classes"): on the cross-domain scenario the copies enforce starts cross
// the trunk that carries the reads; with copies as background flows (the
// default, strict priority) enforce's p99.9 and maximum read latency stay
// within 1.1x of off's, while with copies sharing as equals (the model
// before traffic classes) the tail grows several times. The copies and the
// cross-domain bytes they remove are the same either way, and the
// per-interval copy bytes and latencies of the report line up.
#include <algorithm>
#include <string>
#include <vector>

#include "core/base/status_macros.h"
#include "gtest/gtest.h"
#include "sim/report_stats.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

absl::StatusOr<RunResult> RunCrossDomain(const std::string& mode, const std::string& sharing) {
  HS_ASSIGN_OR_RETURN(
      Scenario scenario,
      LoadScenarioForRun(
          (testing_paths::RepoRoot() / "scenarios/cross-domain-reuse.json").string()));
  RunOptions options;
  options.overrides.push_back(KnobOverride{"dynamic_replication_mode", mode});
  options.overrides.push_back(KnobOverride{"background_sharing", sharing});
  return RunScenario(scenario, options);
}

TEST(ForegroundFirstTest, CopiesDoNotRaiseTheReadTailUnderStrictPriority) {
  absl::StatusOr<RunResult> off = RunCrossDomain("off", "strict");
  ASSERT_TRUE(off.ok()) << off.status();
  absl::StatusOr<RunResult> strict = RunCrossDomain("enforce", "strict");
  ASSERT_TRUE(strict.ok()) << strict.status();
  absl::StatusOr<RunResult> equal = RunCrossDomain("enforce", "equal");
  ASSERT_TRUE(equal.ok()) << equal.status();
  const RunStats o = ComputeRunStats(*off);
  const RunStats s = ComputeRunStats(*strict);
  const RunStats e = ComputeRunStats(*equal);
  // Off starts no copy, so its sharing mode does not matter.
  EXPECT_EQ(off->copies_completed, 0);

  EXPECT_LE(s.latency.p999_ns * 10, o.latency.p999_ns * 11);
  EXPECT_LE(s.latency.max_ns * 10, o.latency.max_ns * 11);
  // Equal sharing: the copies crossing the trunk hold reads back.
  EXPECT_GT(e.latency.p999_ns, 2 * o.latency.p999_ns);
  EXPECT_GT(e.latency.max_ns, 2 * o.latency.max_ns);

  // The effect stays: the same copies, the same cross-domain bytes.
  EXPECT_GT(strict->copies_completed, 0);
  EXPECT_EQ(strict->copies_completed, equal->copies_completed);
  EXPECT_EQ(strict->copy_bytes, equal->copy_bytes);
  EXPECT_EQ(strict->bytes_read.cross_domain, equal->bytes_read.cross_domain);
  EXPECT_LT(strict->bytes_read.cross_domain, off->bytes_read.cross_domain);

  // The report's series: every byte the copies moved is in some interval,
  // and under equal sharing the worst interval p99 is one that moved copies.
  uint64_t moved = 0;
  for (const IntervalSample& i : strict->intervals) moved += i.background_bytes;
  EXPECT_EQ(moved, strict->copy_bytes);
  size_t worst = 0;
  for (size_t i = 0; i < e.intervals.size(); ++i) {
    if (e.intervals[i].latency.p99_ns > e.intervals[worst].latency.p99_ns) worst = i;
  }
  EXPECT_GT(equal->intervals[worst].background_bytes, 0u);
}

}  // namespace
}  // namespace heatsink::sim
