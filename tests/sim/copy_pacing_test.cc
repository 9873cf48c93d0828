// Covers copy pacing as the simulator sees it (issue 35's bad input): the
// scenario knobs copy_budget_per_source_bytes and copy_budget_per_trunk_bytes
// are accepted by name and rejected naming the knob when zero or below; a
// budget smaller than the scenario's objects is reported before the run
// (ScenarioNotes), and the run still completes its copies, one at a time per
// source and trunk, instead of deadlocking. Budgets at their defaults give no
// note and hold nothing back.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/runner.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;
using testing_paths::RepoRoot;

// cross-domain-reuse (8 MiB objects written in prefill, read from decode),
// shortened as in runner_test's SameScenarioSameResultInOneProcess.
Scenario ShortCrossDomainReuse() {
  absl::StatusOr<Scenario> s =
      LoadScenarioForRun((RepoRoot() / "scenarios/cross-domain-reuse.json").string());
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return Scenario();
  s->duration_ns = SecToNs(20);
  s->workloads[0].cross_domain_reuse.objects = 40;
  return *s;
}

int64_t Metric(const RunResult& run, const std::string& name) {
  const auto it = run.metrics.find(name);
  return it == run.metrics.end() ? 0 : it->second;
}

TEST(CopyPacing, BudgetSmallerThanOneObjectIsNotedAndCopiesStillComplete) {
  const Scenario s = ShortCrossDomainReuse();
  ASSERT_EQ(LargestObjectBytes(s), int64_t{8} << 20);
  RunOptions options;
  options.label = "paced";
  // 1 MiB budgets against 8 MiB objects: every copy goes alone on its source
  // host and on the prefill -> decode trunk.
  options.overrides = {{"copy_budget_per_source_bytes", "1048576"},
                       {"copy_budget_per_trunk_bytes", "1048576"}};
  absl::StatusOr<std::vector<std::string>> notes = ScenarioNotes(s, options);
  ASSERT_TRUE(notes.ok()) << notes.status();
  ASSERT_EQ(notes->size(), 2u);
  EXPECT_THAT((*notes)[0], HasSubstr("copy_budget_per_source_bytes (1048576 bytes)"));
  EXPECT_THAT((*notes)[0], HasSubstr("one at a time"));
  EXPECT_THAT((*notes)[1], HasSubstr("copy_budget_per_trunk_bytes"));

  absl::StatusOr<RunResult> paced = RunScenario(s, options);
  ASSERT_TRUE(paced.ok()) << paced.status();
  EXPECT_GT(paced->copies_completed, 0);
  EXPECT_GT(Metric(*paced, "sim_master_copy_fetches_deferred_total"), 0);

  RunOptions unpaced_options;
  unpaced_options.label = "unpaced";
  absl::StatusOr<std::vector<std::string>> none = ScenarioNotes(s, unpaced_options);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  absl::StatusOr<RunResult> unpaced = RunScenario(s, unpaced_options);
  ASSERT_TRUE(unpaced.ok()) << unpaced.status();
  EXPECT_EQ(Metric(*unpaced, "sim_master_copy_fetches_deferred_total"), 0);
  EXPECT_GT(unpaced->copies_completed, 0);
}

TEST(CopyPacing, BudgetsOfZeroOrBelowAreRejectedNamingTheKnob) {
  const Scenario s = ShortCrossDomainReuse();
  for (const char* name : {"copy_budget_per_source_bytes", "copy_budget_per_trunk_bytes"}) {
    for (const char* value : {"0", "-1"}) {
      RunOptions options;
      options.overrides = {{name, value}};
      absl::StatusOr<RunResult> run = RunScenario(s, options);
      EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
      EXPECT_THAT(run.status().message(), HasSubstr(name));
      EXPECT_EQ(ScenarioNotes(s, options).status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace heatsink::sim
