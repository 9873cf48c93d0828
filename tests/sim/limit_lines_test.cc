// Limit lines (sim/limit_lines.h): the run's first-touch / repeat split, the
// base (avoidable) bytes, the online line (reads from the third on), the
// clairvoyant line (all repeats, greedy within a memory budget), the replica
// cap, and the lines' memory. Then the same figures from whole simulator
// runs: an off run's split equals its base, enforce removes part of it, and
// a bad budget in a scenario is rejected with its JSON path.
#include "sim/limit_lines.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "gtest/gtest.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

constexpr DurationNs kSec = kNsPerSec;

ObjectName Obj(const std::string& key) { return ObjectName{"", key}; }

// One read of `key` from `domain` at second `t_s`; cross / base as given.
void Read(LimitLineRecorder& rec, const std::string& key, int32_t domain, int64_t t_s,
          uint64_t bytes, bool cross, bool base, int32_t originals = 1, Version version = 1) {
  const uint32_t pair = rec.PairFor(
      Obj(key), version,
      LimitReadTarget{.domain = domain, .cross_domain = cross, .base_cross_domain = base,
                      .ordinary_replicas = originals});
  if (pair != LimitLineRecorder::kNoPair) rec.OnRead(pair, t_s * kSec, bytes, cross, base);
}

// Cross-domain reads (base and actual) of several objects, replayed in time
// order (ties in the order given).
struct TimedRead {
  std::string key;
  int32_t domain = 0;
  int64_t t_s = 0;
  uint64_t bytes = 0;
};
void ReadAll(LimitLineRecorder& rec, std::vector<TimedRead> reads, int32_t originals = 1) {
  std::stable_sort(reads.begin(), reads.end(),
                   [](const TimedRead& a, const TimedRead& b) { return a.t_s < b.t_s; });
  for (const TimedRead& r : reads) Read(rec, r.key, r.domain, r.t_s, r.bytes, true, true, originals);
}

LimitLineOptions Options(bool domain_aware = true, int64_t cap = 2) {
  return LimitLineOptions{.duration_ns = 100 * kSec,
                          .max_memory_replicas = cap,
                          .domain_aware = domain_aware,
                          .clairvoyant_budget_bytes = std::nullopt};
}

TEST(LimitLinesTest, OffRunSplitsFirstTouchAndRepeatPerDomain) {
  LimitLineRecorder rec;
  // Object a: four reads from domain 1, two from domain 2, all cross-domain.
  for (int t : {1, 2, 3, 4}) Read(rec, "a", 1, t, 100, true, true);
  for (int t : {5, 6}) Read(rec, "a", 2, t, 100, true, true);
  // A read inside the object's own domain records nothing.
  Read(rec, "a", 0, 7, 100, false, false);
  const LimitLines l = rec.Compute(Options());
  EXPECT_EQ(l.cross_domain_bytes, 600u);
  EXPECT_EQ(l.first_touch_bytes, 200u);  // one per (object, domain)
  EXPECT_EQ(l.repeat_bytes, 400u);
  EXPECT_EQ(l.unavoidable_bytes, 200u);
  EXPECT_EQ(l.avoidable_bytes, 400u);
  EXPECT_EQ(l.avoidable_removed_bytes, 0u);
  EXPECT_EQ(l.pairs, 2);
  // Online: domain 1 loses reads 3 and 4; domain 2 (two reads) nothing.
  EXPECT_EQ(l.online.removed_bytes, 200u);
  EXPECT_EQ(l.online.replicas, 1);
  // Clairvoyant: every repeat.
  EXPECT_EQ(l.clairvoyant.removed_bytes, 400u);
  EXPECT_EQ(l.clairvoyant.replicas, 2);
}

TEST(LimitLinesTest, ReadsServedInDomainAreRemovedAvoidableBytes) {
  LimitLineRecorder rec;
  // Enforce: the first two reads cross, then a dynamic replica in domain 1
  // serves the rest (base cross-domain, not cross-domain).
  Read(rec, "a", 1, 1, 100, true, true);
  Read(rec, "a", 1, 2, 100, true, true);
  Read(rec, "a", 1, 3, 100, false, true);
  Read(rec, "a", 1, 4, 100, false, true);
  Read(rec, "a", 1, 5, 100, false, true);
  const LimitLines l = rec.Compute(Options());
  EXPECT_EQ(l.first_touch_bytes, 100u);
  EXPECT_EQ(l.repeat_bytes, 100u);
  EXPECT_EQ(l.avoidable_bytes, 400u);
  EXPECT_EQ(l.avoidable_removed_bytes, 300u);
  EXPECT_EQ(l.online.removed_bytes, 300u);  // the run matched the online line
  EXPECT_EQ(l.clairvoyant.removed_bytes, 400u);
}

TEST(LimitLinesTest, ANewVersionIsANewObject) {
  LimitLineRecorder rec;
  Read(rec, "a", 1, 1, 100, true, true, 1, /*version=*/1);
  Read(rec, "a", 1, 2, 100, true, true, 1, /*version=*/2);
  const LimitLines l = rec.Compute(Options());
  EXPECT_EQ(l.first_touch_bytes, 200u);
  EXPECT_EQ(l.repeat_bytes, 0u);
  EXPECT_EQ(l.pairs, 2);
}

TEST(LimitLinesTest, LineMemoryIsHeldFromTheSecondToTheLastRead) {
  LimitLineRecorder rec;
  // a: reads at 10, 20, 60 s (1000 bytes); b: reads at 30, 40, 50 s (500 bytes).
  Read(rec, "a", 1, 10, 1000, true, true);
  Read(rec, "a", 1, 20, 1000, true, true);
  Read(rec, "b", 1, 30, 500, true, true);
  Read(rec, "b", 1, 40, 500, true, true);
  Read(rec, "b", 1, 50, 500, true, true);
  Read(rec, "a", 1, 60, 1000, true, true);
  const LimitLines l = rec.Compute(Options());
  // a held [20, 60], b [40, 50]: both at once in [40, 50].
  EXPECT_EQ(l.online.memory_peak_bytes, 1500u);
  EXPECT_EQ(l.clairvoyant.memory_peak_bytes, 1500u);
  // (1000 * 40 s + 500 * 10 s) / 100 s.
  EXPECT_EQ(l.online.memory_mean_bytes, 450u);
  EXPECT_EQ(l.clairvoyant.memory_mean_bytes, 450u);
}

TEST(LimitLinesTest, ClairvoyantBudgetTakesTheBestBytesPerByteFirst) {
  LimitLineRecorder rec;
  // big: 1000 bytes read 3 times (2000 avoidable: 2 per byte);
  // small: 100 bytes read 6 times (500 avoidable: 5 per byte).
  // Both alive over [2, 7] s, and the budget holds only one of them at once.
  std::vector<TimedRead> reads;
  for (int t : {1, 2, 7}) reads.push_back({"big", 1, t, 1000});
  for (int t : {1, 2, 3, 4, 5, 6}) reads.push_back({"small", 1, t, 100});
  ReadAll(rec, reads);
  LimitLineOptions opt = Options();
  opt.clairvoyant_budget_bytes = 1000;
  const LimitLines l = rec.Compute(opt);
  EXPECT_EQ(l.clairvoyant.replicas, 1);
  EXPECT_EQ(l.clairvoyant.over_budget, 1);
  EXPECT_EQ(l.clairvoyant.removed_bytes, 500u);  // small first: 5 per byte beats 2
  EXPECT_LE(l.clairvoyant.memory_peak_bytes, 1000u);
  ASSERT_TRUE(l.clairvoyant_budget_bytes.has_value());
  // Unlimited: both.
  const LimitLines all = rec.Compute(Options());
  EXPECT_EQ(all.clairvoyant.removed_bytes, 2500u);
  EXPECT_EQ(all.clairvoyant.over_budget, 0);
}

TEST(LimitLinesTest, ABudgetIsPerInstantNotPerRun) {
  LimitLineRecorder rec;
  // Two replicas that never live at the same time both fit a one-replica budget.
  for (int t : {1, 2, 3}) Read(rec, "a", 1, t, 1000, true, true);
  for (int t : {10, 11, 12}) Read(rec, "b", 1, t, 1000, true, true);
  LimitLineOptions opt = Options();
  opt.clairvoyant_budget_bytes = 1000;
  const LimitLines l = rec.Compute(opt);
  EXPECT_EQ(l.clairvoyant.replicas, 2);
  EXPECT_EQ(l.clairvoyant.removed_bytes, 4000u);
}

TEST(LimitLinesTest, StageOneCapCountsOriginalsAndOverlappingReplicas) {
  LimitLineRecorder rec;
  // Not domain-aware, cap 2, one original: one dynamic replica at a time.
  std::vector<TimedRead> reads;
  for (int t : {1, 2, 3, 9}) reads.push_back({"a", 1, t, 100});    // held [2, 9]
  for (int t : {4, 5, 6}) reads.push_back({"a", 2, t, 100});       // [5, 6]: overlaps
  for (int t : {10, 11, 12}) reads.push_back({"a", 3, t, 100});    // [11, 12]: after
  ReadAll(rec, reads);
  const LimitLines l = rec.Compute(Options(/*domain_aware=*/false, /*cap=*/2));
  EXPECT_EQ(l.online.replicas, 2);
  EXPECT_EQ(l.online.capped, 1);
  EXPECT_EQ(l.online.removed_bytes, 300u);  // domain 1: 2 reads, domain 3: 1 read
  // Domain-aware: the cap counts the target domain only, so all three fit.
  const LimitLines aware = rec.Compute(Options(/*domain_aware=*/true, /*cap=*/2));
  EXPECT_EQ(aware.online.replicas, 3);
  EXPECT_EQ(aware.online.capped, 0);
  // Cap 1 with one original: no dynamic replica at all in stage 1.
  const LimitLines none = rec.Compute(Options(/*domain_aware=*/false, /*cap=*/1));
  EXPECT_EQ(none.online.replicas, 0);
  EXPECT_EQ(none.clairvoyant.replicas, 0);
  EXPECT_EQ(none.clairvoyant.capped, 3);
}

TEST(LimitLinesTest, NoReadsGiveEmptyLines) {
  LimitLineRecorder rec;
  const LimitLines l = rec.Compute(Options());
  EXPECT_EQ(l.cross_domain_bytes, 0u);
  EXPECT_EQ(l.online.removed_bytes, 0u);
  EXPECT_EQ(l.clairvoyant.memory_peak_bytes, 0u);
}

// Whole runs: the scenario of the RFC's cross-domain target.
absl::StatusOr<RunResult> RunCrossDomain(const std::string& mode) {
  HS_ASSIGN_OR_RETURN(Scenario scenario,
                      LoadScenarioForRun((testing_paths::RepoRoot() /
                                          "scenarios/cross-domain-reuse.json")
                                             .string()));
  RunOptions options;
  options.overrides.push_back(KnobOverride{"dynamic_replication_mode", mode});
  return RunScenario(scenario, options);
}

TEST(LimitLinesRunTest, OffSplitsItsCrossDomainBytesAndEnforceRemovesRepeats) {
  absl::StatusOr<RunResult> off = RunCrossDomain("off");
  ASSERT_TRUE(off.ok()) << off.status();
  const LimitLines& o = off->limits;
  // 200 objects of 8 MiB, 20 reads each from one domain.
  constexpr uint64_t kObject = 8ull << 20;
  EXPECT_EQ(o.cross_domain_bytes, off->bytes_read.cross_domain);
  EXPECT_EQ(o.first_touch_bytes, 200 * kObject);
  EXPECT_EQ(o.repeat_bytes, 200 * 19 * kObject);
  // Without dynamic replicas the base is the run's own split.
  EXPECT_EQ(o.avoidable_bytes, o.repeat_bytes);
  EXPECT_EQ(o.avoidable_removed_bytes, 0u);
  EXPECT_EQ(o.online.removed_bytes, 200 * 18 * kObject);
  EXPECT_EQ(o.clairvoyant.removed_bytes, o.avoidable_bytes);

  absl::StatusOr<RunResult> enforce = RunCrossDomain("enforce");
  ASSERT_TRUE(enforce.ok()) << enforce.status();
  const LimitLines& e = enforce->limits;
  EXPECT_EQ(e.avoidable_bytes, o.avoidable_bytes);  // same reads
  EXPECT_LT(e.repeat_bytes, o.repeat_bytes);
  EXPECT_EQ(e.avoidable_removed_bytes, e.avoidable_bytes - e.repeat_bytes);
  // No policy without prediction beats the online line on its own reads.
  EXPECT_LE(e.avoidable_removed_bytes, e.online.removed_bytes);
}

TEST(LimitLinesRunTest, ABadClairvoyantBudgetNamesItsJsonPath) {
  for (const std::string budget : {"-1", "\"lots\""}) {
    const std::string json = absl::StrCat(
        R"({"name": "b", "duration_s": 1,
            "topology": {"domains": [{"name": "d", "hosts": [{"name": "h",
              "segments": [{"name": "m", "capacity_bytes": "1GiB"}]}]}]},
            "outputs": {"clairvoyant_budget_bytes": )",
        budget, "}}");
    absl::StatusOr<Scenario> s = ParseScenario(json, "budget.json", "", ScenarioLoadOptions());
    ASSERT_FALSE(s.ok()) << budget;
    EXPECT_TRUE(absl::StrContains(s.status().message(), "outputs.clairvoyant_budget_bytes"))
        << s.status();
  }
  absl::StatusOr<Scenario> ok = ParseScenario(
      R"({"name": "b", "duration_s": 1,
          "topology": {"domains": [{"name": "d", "hosts": [{"name": "h",
            "segments": [{"name": "m", "capacity_bytes": "1GiB"}]}]}]},
          "outputs": {"clairvoyant_budget_bytes": "2GiB"}})",
      "budget.json", "", ScenarioLoadOptions());
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->outputs.clairvoyant_budget_bytes, int64_t{2} << 30);
}

}  // namespace
}  // namespace heatsink::sim
