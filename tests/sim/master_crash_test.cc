// Covers the master_crash fault (sim/internal/simulation_crash.cc and recovery_audit.h,
// docs/master-crash.md): the shipped scenario scenarios/master-crash.json
// runs with its recovery invariants; every object put before the crash is
// back at its version once the recovery ends; the dynamic copy in flight at
// the crash left no replica and its target range stays taken until the put
// release timeout; used bytes equal the replicas' ranges; reads during the
// outage are retried with backoff and none answers NOT_FOUND; control calls
// to a master that is down fail; a run is deterministic; and the swarm draws
// master crashes in some seeds, which pass.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "core/master/master_service.h"
#include "core/replication/decision.h"
#include "core/replication/replicated_master.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/runner.h"
#include "sim/swarm.h"
#include "sim/swarm_generator.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using testing_paths::RepoRoot;

constexpr uint64_t kMiB = uint64_t{1} << 20;

Scenario LoadMasterCrash() {
  absl::StatusOr<Scenario> s =
      LoadScenarioForRun((RepoRoot() / "scenarios/master-crash.json").string());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario();
}

int64_t Metric(const RunResult& run, const std::string& name) {
  const auto it = run.metrics.find(name);
  return it == run.metrics.end() ? -1 : it->second;
}

// Watches the master across the crash: the objects and versions before it,
// the target of the dynamic copy admitted before it, and the state at the
// first event after the restart at which the master no longer recovers.
class CrashWatcher final : public RunObserver {
 public:
  void OnDecision(const DecisionRecord& r) override {
    if (!crashed_ && r.outcome == DecisionOutcome::kAccepted && r.target_segment.has_value()) {
      copy_target_before_crash_ = *r.target_segment;
    }
  }
  void OnMasterCrash(TimeNs now_ns) override {
    crashed_ = true;
    crash_ns_ = now_ns;
  }
  void OnMasterRestart(TimeNs now_ns) override { restart_ns_ = now_ns; }
  absl::Status AfterEvent(const RunWorld& world) override {
    if (world.master == nullptr) {
      ++events_while_down_;
      return absl::OkStatus();
    }
    const MasterService& m = world.master->master();
    if (!crashed_) {
      versions_before_.clear();
      for (const char* key : {"hot", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}) {
        absl::StatusOr<ObjectView> v = m.GetObjectView(ObjectName{"default", key});
        if (v.ok() && !v->put_in_progress) versions_before_[key] = v->version;
      }
      return absl::OkStatus();
    }
    if (recovered_ns_.has_value() || m.Recovering()) return absl::OkStatus();
    recovered_ns_ = world.now_ns;
    for (const auto& [key, version] : versions_before_) {
      absl::StatusOr<ObjectView> v = m.GetObjectView(ObjectName{"default", key});
      if (!v.ok()) {
        lost_.push_back(key);
        continue;
      }
      versions_after_[key] = v->version;
      for (const ReplicaDescriptor& r : v->replicas) {
        if (r.status != ReplicaStatus::kComplete) continue;
        replica_bytes_[r.segment_id] += r.size_bytes;
        if (key == std::string("hot") && copy_target_before_crash_.has_value() &&
            r.segment_id == *copy_target_before_crash_) {
          hot_on_copy_target_ = true;
        }
      }
    }
    for (const SegmentView& s : m.ListSegments()) used_bytes_[s.location.id] = s.used_bytes;
    pending_after_ = world.master->replication().PendingActions().size();
    return absl::OkStatus();
  }

  bool crashed_ = false;
  TimeNs crash_ns_ = 0;
  TimeNs restart_ns_ = 0;
  int64_t events_while_down_ = 0;
  std::optional<SegmentId> copy_target_before_crash_;
  std::map<std::string, Version> versions_before_;
  // At the end of the recovery:
  std::optional<TimeNs> recovered_ns_;
  std::vector<std::string> lost_;
  std::map<std::string, Version> versions_after_;
  std::map<SegmentId, uint64_t> replica_bytes_;
  std::map<SegmentId, uint64_t> used_bytes_;
  bool hot_on_copy_target_ = false;
  size_t pending_after_ = 0;
};

TEST(MasterCrash, ShippedScenarioRecoversEveryObjectAtItsVersion) {
  const Scenario s = LoadMasterCrash();
  CrashWatcher watcher;
  RunOptions options;
  options.observer = &watcher;
  absl::StatusOr<RunResult> run = RunScenario(s, options);
  // The run checks recovery.objects_readable, recovery.used_bytes and
  // recovery.copy_discarded itself: a violation fails it.
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(watcher.crash_ns_, SecToNs(3));
  EXPECT_EQ(watcher.restart_ns_, 3'500'000'000);
  EXPECT_GT(watcher.events_while_down_, 0);
  ASSERT_TRUE(watcher.recovered_ns_.has_value());
  // The four stores report within a heartbeat (1 s) of the restart.
  EXPECT_LT(*watcher.recovered_ns_, watcher.restart_ns_ + SecToNs(1) + 100'000'000);
  ASSERT_EQ(watcher.versions_before_.size(), 8u);
  EXPECT_THAT(watcher.lost_, ::testing::IsEmpty());
  EXPECT_EQ(watcher.versions_after_, watcher.versions_before_);
  EXPECT_EQ(watcher.pending_after_, 0u);
  // The copy of "hot" to domain b was in flight at the crash (its source
  // held it with delay_copies): no replica came of it.
  EXPECT_EQ(Metric(*run, "sim_master_crash_copies_in_flight_total"), 1);
  ASSERT_TRUE(watcher.copy_target_before_crash_.has_value());
  EXPECT_FALSE(watcher.hot_on_copy_target_);
  // Used bytes: each segment's replicas, plus on the copy's target the 4 MiB
  // its store reported incomplete, taken until the put release timeout.
  for (const auto& [segment, used] : watcher.used_bytes_) {
    const uint64_t held = segment == *watcher.copy_target_before_crash_ ? 4 * kMiB : 0;
    EXPECT_EQ(used, watcher.replica_bytes_[segment] + held) << "segment " << segment.value;
  }
  // Reads through the outage were retried, none gave up, none missed.
  EXPECT_GT(Metric(*run, "sim_read_retries_master_unavailable_total"), 0);
  EXPECT_EQ(Metric(*run, "sim_reads_gave_up_master_unavailable_total"), 0);
  EXPECT_EQ(Metric(*run, "sim_read_misses_total"), 0);
  EXPECT_EQ(Metric(*run, "sim_read_misses_of_stored_objects_total"), 0);
  EXPECT_EQ(Metric(*run, "sim_reads_failed_total"), 0);
  EXPECT_EQ(run->reads, 22);
  EXPECT_GT(Metric(*run, "sim_control_calls_master_down_total"), 0);
  // The new master admits the hot key again; k8, put after the recovery,
  // is read.
  EXPECT_EQ(run->decisions_by_outcome.at("accepted"), 2);
  EXPECT_EQ(Metric(*run, "sim_puts_total"), 9);
  for (const CheckOutcome& c : EvaluateChecks(s, *run)) {
    EXPECT_TRUE(c.passed) << c.name;
  }
}

TEST(MasterCrash, SameSeedSameRun) {
  const Scenario s = LoadMasterCrash();
  RunOptions options;
  absl::StatusOr<RunResult> a = RunScenario(s, options);
  absl::StatusOr<RunResult> b = RunScenario(s, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->metrics, b->metrics);
  EXPECT_EQ(a->read_latencies_ns, b->read_latencies_ns);
  EXPECT_EQ(a->decisions_by_outcome, b->decisions_by_outcome);
  EXPECT_EQ(a->events_simulated, b->events_simulated);
}

// A crash with the default restart (1 s later) and a write during the outage:
// the put fails (its PutStart finds no master), later puts and reads work.
TEST(MasterCrash, ControlCallsFailWhileTheMasterIsDown) {
  Scenario s = LoadMasterCrash();
  s.faults.master_crashes = {MasterCrash{.at_ns = SecToNs(3), .restart_at_ns = SecToNs(4)}};
  ScriptOp put;
  put.t_ns = 3'200'000'000;
  put.kind = ScriptOpKind::kPut;
  put.client = "a0/c";
  put.tenant = "default";
  put.keys = {"during-outage"};
  put.size_bytes = static_cast<int64_t>(kMiB);
  ASSERT_FALSE(s.workloads.empty());
  std::vector<ScriptOp>& ops = s.workloads[0].scripted.ops;
  const auto at =
      std::find_if(ops.begin(), ops.end(), [&](const ScriptOp& op) { return op.t_ns > put.t_ns; });
  ops.insert(at, put);
  absl::StatusOr<RunResult> run = RunScenario(s, RunOptions());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(Metric(*run, "sim_puts_failed_total"), 1);
  EXPECT_EQ(Metric(*run, "sim_puts_total"), 9);
  EXPECT_EQ(Metric(*run, "sim_read_misses_total"), 0);
  EXPECT_EQ(Metric(*run, "sim_master_restarts_total"), 1);
}

TEST(MasterCrash, SwarmDrawsMasterCrashesAndTheirSeedsPass) {
  std::vector<uint64_t> crash_seeds;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    if (absl::StrContains(GenerateSwarmScenario(seed).json, "\"master_crashes\"")) {
      crash_seeds.push_back(seed);
    }
  }
  // A fifth of the seeds, give or take.
  EXPECT_GE(crash_seeds.size(), 4u);
  EXPECT_LE(crash_seeds.size(), 24u);
  int64_t crashes = 0;
  for (size_t i = 0; i < crash_seeds.size() && i < 4; ++i) {
    const SwarmSeedResult r = RunSwarmSeed(crash_seeds[i], SwarmCheckerOptions{});
    EXPECT_TRUE(r.passed) << FormatSwarmFailure(r, "", "heatsink-sim");
    crashes += r.master_crashes;
  }
  EXPECT_GE(crashes, 4);
}

}  // namespace
}  // namespace heatsink::sim
