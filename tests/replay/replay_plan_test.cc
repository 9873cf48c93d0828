// Tests of heatsink-replay's plan (tools/replay/replay_plan.h): the processes
// a scenario becomes (stores with their domain, segments and fixed client ids,
// the master's --set knobs and its mode, late joins), what it replays of the
// faults and operator ops (store crashes and restarts, set_knob of the mode),
// and every refusal, each naming the JSON field the runtime cannot honour,
// before anything starts.
#include "tools/replay/replay_plan.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "sim/runner.h"

namespace heatsink::replay {
namespace {

// Two domains; domain b joins at 1 s. $HOSTS, $KNOBS, $WORKLOADS, $FAULTS
// are replaced by each test.
constexpr char kBase[] = R"({
  "name": "plan", "duration_s": 10,
  "topology": {"domains": [
    {"name": "a", "hosts": [{"name": "a", "count": 2,
      "segments": [{"name": "m0", "capacity_bytes": "64MiB"}, {"name": "m1", "capacity_bytes": "64MiB"}],
      "clients": [{"name": "c"}]}]},
    {"name": "b", "join_at_s": 1, "hosts": [$HOSTS]}]},
  "knobs": {$KNOBS},
  "workloads": [$WORKLOADS],
  "faults": {$FAULTS}
})";

constexpr char kHostB[] =
    R"({"name": "b", "segments": [{"name": "m", "capacity_bytes": "32MiB"}], "clients": [{"name": "c"}]})";

sim::Scenario Parse(const std::string& hosts, const std::string& knobs,
                    const std::string& workloads = "", const std::string& faults = "") {
  const std::string text = absl::StrReplaceAll(
      kBase, {{"$HOSTS", hosts}, {"$KNOBS", knobs}, {"$WORKLOADS", workloads}, {"$FAULTS", faults}});
  absl::StatusOr<sim::Scenario> s =
      sim::ParseScenario(text, "plan.json", "", sim::SimulatorLoadOptions());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : sim::Scenario();
}

ReplayLimits Roomy() {
  ReplayLimits limits;
  limits.memory_available_bytes = int64_t{1} << 40;
  return limits;
}

void ExpectRefused(const absl::StatusOr<ReplayPlan>& plan, const std::string& field) {
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find(field), std::string::npos) << plan.status();
}

TEST(ReplayPlan, OneStorePerHostWithSegmentsDomainAndFixedIds) {
  const sim::Scenario s = Parse(
      kHostB,
      R"("dynamic_replication_mode": "enforce", "replica_selection_policy": "spread",
         "worker_fetch_interval_ms": 50, "replica_selection_seed": 9, "master_host": "a-0",
         "read_retry_ms": 5)",
      R"({"type": "zipf", "name": "z", "objects": 4, "rate_per_s": 10, "reader_domains": ["b"]})");
  absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, Roomy());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->stores.size(), 3u);
  EXPECT_EQ(plan->stores[0].host, "a-0");
  EXPECT_EQ(plan->stores[0].domain, "a");
  EXPECT_EQ(plan->stores[0].segments, 2);
  EXPECT_EQ(plan->stores[0].segment_mib, 64);
  EXPECT_EQ(plan->stores[0].client_id, ClientId(1));
  // The simulator's segment ids: 1, 2 on a-0, 3, 4 on a-1, 5 on b.
  EXPECT_EQ(plan->stores[0].first_segment_id, 1u);
  EXPECT_EQ(plan->stores[1].first_segment_id, 3u);
  EXPECT_EQ(plan->stores[2].first_segment_id, 5u);
  EXPECT_EQ(HostIndexOfSegment(*plan, SegmentId(4)), 1);
  EXPECT_EQ(HostIndexOfSegment(*plan, SegmentId(5)), 2);
  EXPECT_EQ(HostIndexOfSegment(*plan, SegmentId(6)), -1);
  EXPECT_EQ(plan->stores[2].host, "b");
  EXPECT_EQ(plan->stores[2].domain, "b");
  EXPECT_EQ(plan->stores[2].segment_mib, 32);
  EXPECT_EQ(plan->stores[2].join_at_ns, kNsPerSec);
  EXPECT_EQ(plan->stores[2].client_id, ClientId(3));
  EXPECT_EQ(plan->segment_bytes_total, (4 * 64 + 32) * (int64_t{1} << 20));
  ASSERT_EQ(plan->clients.size(), 3u);
  EXPECT_EQ(plan->clients.at("b/c").domain, "b");
  EXPECT_EQ(plan->clients.at("a-0/c").client_id, ClientId(1'000'000));
  // Master and replication knobs go to the master (the mode through its
  // config file, so SIGHUP can change it); the selection policy also to the
  // readers, driver knobs to the stores and readers.
  EXPECT_EQ(plan->master_sets, (std::vector<std::string>{"replica_selection_policy=spread"}));
  EXPECT_EQ(plan->dynamic_replication_mode, DynamicReplicationMode::kEnforce);
  EXPECT_EQ(plan->replica_selection_policy, ReplicaSelectionPolicy::kSpread);
  EXPECT_EQ(plan->fetch_interval_ms, 50);
  EXPECT_EQ(plan->replica_selection_seed, 9u);
  EXPECT_EQ(plan->read_retry_ms, 5);
  EXPECT_EQ(plan->read_retries_max, 1'000);
  EXPECT_EQ(plan->ignored_knobs, std::vector<std::string>{"master_host"});
}

TEST(ReplayPlan, FaultsAreRefusedByField) {
  ExpectRefused(
      MakeReplayPlan(
          Parse(kHostB, "", "",
                R"("trunk_faults": [{"between": ["a", "b"], "kind": "partition", "from_s": 2}])"),
          Roomy()),
      "plan.json: $.faults.trunk_faults");
  ExpectRefused(MakeReplayPlan(Parse(kHostB, "", "", R"("copy_failure_probability": 0.1)"),
                               Roomy()),
                "$.faults.copy_failure_probability");
  ExpectRefused(MakeReplayPlan(Parse(kHostB, "", "",
                                     R"("segment_unmounts": [{"segment": "a-0/m0", "at_s": 2}])"),
                               Roomy()),
                "$.faults.segment_unmounts");
  ExpectRefused(
      MakeReplayPlan(Parse(kHostB, "", "", R"("control_messages": {"drop_probability": 0.1})"),
                     Roomy()),
      "$.faults.control_messages");
  ExpectRefused(
      MakeReplayPlan(Parse(kHostB, "", "", R"("master_crashes": [{"at_s": 2}])"), Roomy()),
      "$.faults.master_crashes");
}

// Store crashes and restarts (faults and scripted) and the mode switch are
// replayed; so is a kill or restart of a host without segments, which the
// simulator accepts and does nothing for.
TEST(ReplayPlan, StoreCrashesRestartsAndTheModeSwitchAreAccepted) {
  const sim::Scenario s =
      Parse(absl::StrCat(kHostB, R"(, {"name": "bare", "clients": [{"name": "c"}]})"),
            R"("dynamic_replication_mode": "observe")",
            R"({"type": "scripted", "name": "s", "ops": [
           {"op": "put", "client": "a-0/c", "key": "k", "size_bytes": 1024},
           {"op": "set_knob", "name": "dynamic_replication_mode", "value": "enforce",
            "at_ms": 1000},
           {"op": "kill_worker", "host": "a-1", "at_ms": 2000},
           {"op": "restart_worker", "host": "a-1", "at_ms": 3000},
           {"op": "kill_worker", "host": "bare", "at_ms": 3000},
           {"op": "restart_worker", "host": "bare", "at_ms": 3500},
           {"op": "set_knob", "name": "dynamic_replication_mode", "value": "off",
            "at_ms": 4000}]})",
            R"("worker_crashes": [{"host": "a-0", "at_s": 2, "restart_at_s": 4},
                            {"host": "b", "at_s": 5}])");
  const absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, Roomy());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->dynamic_replication_mode, DynamicReplicationMode::kObserve);
  EXPECT_TRUE(plan->master_sets.empty());
  EXPECT_EQ(plan->stores.size(), 3u) << "the host without segments has no store";
}

TEST(ReplayPlan, SetKnobOfAnotherKnobIsRefusedAtItsPosition) {
  const sim::Scenario s = Parse(kHostB, "",
                                R"({"type": "scripted", "name": "s", "ops": [
           {"op": "set_knob", "name": "dynamic_replication_mode", "value": "enforce"},
           {"op": "set_knob", "name": "dynamic_replication_admission_qps_threshold", "value": 3,
            "at_ms": 1000}]})");
  const absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, Roomy());
  ExpectRefused(plan, "$.workloads[0].ops[1]");
  ExpectRefused(plan, "set_knob dynamic_replication_admission_qps_threshold");
  ExpectRefused(plan, "only dynamic_replication_mode can change during a run");
}

TEST(ReplayPlan, ScriptedOpsWithoutRuntimeMeaningAreRefusedAtTheirPosition) {
  for (const std::string op :
       {R"({"op": "mount", "segment": "a-0/m0"})", R"({"op": "unmount", "segment": "a-0/m0"})",
        R"({"op": "fail_copy", "count": 1})",
        R"({"op": "delay_copies", "host": "a-1", "by_ms": 5})",
        R"({"op": "copy_start", "host": "a-1", "key": "k"})",
        R"({"op": "drain", "segment": "a-0/m0"})", R"({"op": "undrain", "segment": "a-0/m0"})",
        R"({"op": "propose", "key": "k", "proposal_id": 1})",
        R"({"op": "warmup", "domain": "b"})"}) {
    const sim::Scenario s = Parse(kHostB, "",
                                  absl::StrCat(R"({"type": "scripted", "name": "s", "ops": [
           {"op": "put", "client": "a-0/c", "key": "k", "size_bytes": 1024},
           {"op": "kill_worker", "host": "a-1"}, )",
                                               op, "]}"));
    const absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, Roomy());
    ExpectRefused(plan, "$.workloads[0].ops[2]");
    ExpectRefused(plan,
                  "kill_worker, restart_worker and set_knob of dynamic_replication_mode are "
                  "replayed");
  }
}

TEST(ReplayPlan, ModelsOfTheMachineAreRefused) {
  ExpectRefused(MakeReplayPlan(Parse(kHostB, R"("decay": 0.5)"), Roomy()), "$.knobs.decay");
  ExpectRefused(
      MakeReplayPlan(
          Parse(R"({"name": "b", "numa_nodes": [{"id": 0}, {"id": 1}],
                    "segments": [{"name": "m", "capacity_bytes": "32MiB"}]})",
                ""),
          Roomy()),
      "$.topology.domains[1].hosts.numa_nodes");
  ExpectRefused(
      MakeReplayPlan(Parse(R"({"name": "b", "segments": [{"name": "m", "capacity_bytes": "32MiB"},
                                                        {"name": "n", "capacity_bytes": "16MiB"}]})",
                           ""),
                     Roomy()),
      "$.topology.domains[1].hosts.segments");
}

TEST(ReplayPlan, BoundsOnHostsMemoryAndRunTime) {
  const sim::Scenario s = Parse(kHostB, "");
  ReplayLimits limits = Roomy();
  limits.hosts_max = 2;
  ExpectRefused(MakeReplayPlan(s, limits), "--hosts-max 2");
  limits = Roomy();
  limits.time_scale = 10;
  limits.run_time_max_ns = 60 * kNsPerSec;
  ExpectRefused(MakeReplayPlan(s, limits), "$.duration_s: 10 s x time scale 10");
  limits.time_scale = 5;
  EXPECT_TRUE(MakeReplayPlan(s, limits).ok());
}

// The stores commit their segments on write: segments larger than the
// machine's memory are replayed when the objects put fit, counted from the
// operation stream (each key once, at its largest size).
TEST(ReplayPlan, MemoryBoundsTheObjectsPutNotTheSegments) {
  // 10 objects of 4 MiB by one writer, 2 by another: 12 keys, 48 MiB; the
  // segments are 288 MiB.
  const sim::Scenario s =
      Parse(kHostB, "",
            R"({"type": "zipf", "name": "z", "objects": 10, "object_size_bytes": "4MiB",
          "rate_per_s": 10, "reader_domains": ["b"]},
         {"type": "zipf", "name": "y", "objects": 2, "object_size_bytes": "4MiB",
          "rate_per_s": 10, "reader_domains": ["a"], "put_batch_keys": 2})");
  ReplayLimits limits = Roomy();
  limits.memory_available_bytes = 100 << 20;
  absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, limits);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->segment_bytes_total, 288 << 20);
  EXPECT_EQ(plan->put_bytes_distinct, 48 << 20);
  EXPECT_EQ(plan->object_bytes_max, 4 << 20);
  EXPECT_EQ(ScenarioPutFootprint(s, 1).value().distinct_bytes, 48 << 20);
  limits.memory_available_bytes = 40 << 20;
  ExpectRefused(MakeReplayPlan(s, limits),
                "$.workloads: the objects put come to 48 MiB (each key once, one replica), more "
                "than this machine has available (40 MiB");
}

TEST(ReplayPlan, ATimeScaleStretchesTheReplicationPeriodsAndKeepsTheHitCount) {
  const sim::Scenario s = Parse(kHostB, R"("dynamic_replication_heat_window_seconds": 2,
                                           "dynamic_replication_admission_qps_threshold": 5,
                                           "dynamic_replication_admission_cooldown_ms": 1000,
                                           "client_live_ttl_sec": 4, "worker_heartbeat_interval_ms": 200,
                                           "dynamic_replication_warmup_bytes_per_second_max": 3000)");
  ReplayLimits limits = Roomy();
  limits.time_scale = 3;
  absl::StatusOr<ReplayPlan> plan = MakeReplayPlan(s, limits);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<std::string>& t = plan->time_scaled_knobs;
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[0], "dynamic_replication_heat_window_seconds=6");
  EXPECT_EQ(t[1].substr(0, t[1].find('=')), "dynamic_replication_admission_qps_threshold");
  EXPECT_NEAR(std::stod(t[1].substr(t[1].find('=') + 1)), 5.0 / 3, 1e-12);
  EXPECT_NE(std::find(t.begin(), t.end(), "dynamic_replication_admission_cooldown_ms=3000"), t.end());
  EXPECT_EQ(plan->master_sets.back(), t.back()) << "the scaled knobs come last and win";
  EXPECT_EQ(plan->fetch_interval_ms, 300);
  // The master's TTLs and periods and the stores' heartbeats stretch too (a
  // dead store is found at the same simulated time); a rate is divided.
  const auto has = [&](const std::string& set) {
    return std::find(t.begin(), t.end(), set) != t.end();
  };
  EXPECT_TRUE(has("client_live_ttl_sec=12"));
  EXPECT_TRUE(has("sweep_interval_ms=3000"));
  EXPECT_TRUE(has("default_kv_lease_ttl_ms=30000"));
  EXPECT_TRUE(has("dynamic_replication_warmup_bytes_per_second_max=1000"));
  EXPECT_EQ(plan->heartbeat_interval_ms, 600);
  // 2 s x 1.25 is not whole seconds.
  limits.time_scale = 1.25;
  ExpectRefused(MakeReplayPlan(s, limits), "$.knobs.dynamic_replication_heat_window_seconds");
  limits.time_scale = 1;
  plan = MakeReplayPlan(s, limits);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->time_scaled_knobs.empty());
}

TEST(ReplayPlan, ReadsMemAvailable) {
  const std::string path =
      (std::filesystem::temp_directory_path() / absl::StrCat("meminfo_", getpid())).string();
  std::ofstream(path) << "MemTotal:       24683736 kB\nMemAvailable:    1024 kB\n";
  absl::StatusOr<int64_t> bytes = ReadMemAvailableBytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, 1024 * 1024);
  std::ofstream(path) << "MemTotal: 1 kB\n";
  EXPECT_EQ(ReadMemAvailableBytes(path).status().code(), absl::StatusCode::kUnavailable);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace heatsink::replay
