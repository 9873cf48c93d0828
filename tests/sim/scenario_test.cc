// Covers the scenario loader (sim/scenario.h): documented defaults, host
// `count` expansion and full names, default trunks, knob name and type
// checks, one test per validation error class with its exact message
// (unknown field, wrong type, out of range, unknown domain/host/segment
// reference, duplicate name, missing field, malformed JSON with line:column,
// duplicate key, nesting too deep, limits), scripted-op timing rules, and that
// every scenario shipped in scenarios/ loads against the real knob registries.
#include "sim/scenario.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "core/master/master_knobs.h"
#include "core/replication/replication_knobs.h"
#include "core/tiering/tiering_knobs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/engine.h"
#include "sim/network_topology.h"
#include "sim/runner.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;

// Two domains, two hosts in "a" (one entry with count 2), one in "b".
constexpr absl::string_view kBase = R"({
  "name": "base",
  "seed": 7,
  "duration_s": 30,
  "topology": {
    "domains": [
      {"name": "a", "hosts": [
        {"name": "ha", "count": 2, "nic_send_gbps": 25,
         "segments": [{"name": "seg", "capacity_bytes": "1GiB"}],
         "clients": [{"name": "c"}],
         "prefill_instances": [{"name": "p"}]}]},
      {"name": "b", "hosts": [
        {"name": "hb", "nic_send_gbps": 100,
         "segments": [{"name": "seg", "capacity_bytes": "1GiB"}],
         "clients": [{"name": "c"}],
         "decode_instances": [{"name": "d"}]}]}
    ]
  },
  "knobs": {"mode": "enforce", "threshold": 0.5, "replicas": 3}
  WORKLOADS
})";

ScenarioLoadOptions TestOptions() {
  ScenarioLoadOptions o;
  o.knobs = {{"mode", KnobType::kString},
             {"threshold", KnobType::kDouble},
             {"replicas", KnobType::kInt},
             {"domain_aware", KnobType::kBool}};
  return o;
}

absl::StatusOr<Scenario> Load(absl::string_view text,
                              const ScenarioLoadOptions& options = TestOptions()) {
  return ParseScenario(text, "s.json", "/data/scen", options);
}

// The base scenario with `workloads` spliced in (a leading ",\n" is added)
// and the `from` -> `to` replacements applied.
std::string Base(absl::string_view workloads = "",
                 std::vector<std::pair<std::string, std::string>> edits = {}) {
  std::string text = absl::StrReplaceAll(
      kBase, {{"WORKLOADS", workloads.empty() ? "" : absl::StrCat(",\n  ", workloads)}});
  for (const auto& [from, to] : edits) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  }
  return text;
}

std::string ErrorOf(absl::string_view text, const ScenarioLoadOptions& options = TestOptions()) {
  absl::StatusOr<Scenario> s = Load(text, options);
  EXPECT_FALSE(s.ok());
  if (s.ok()) return "";
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << s.status();
  return std::string(s.status().message());
}

TEST(Scenario, LoadsWithDocumentedDefaults) {
  absl::StatusOr<Scenario> s = Load(Base());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->name, "base");
  EXPECT_EQ(s->seed, 7u);
  EXPECT_EQ(s->duration_ns, 30 * kNsPerSec);
  EXPECT_EQ(s->time_step_ns, kNsPerSec);
  EXPECT_EQ(s->outputs.csv_interval_ns, kNsPerSec);
  EXPECT_FALSE(s->outputs.log_reads);
  ASSERT_EQ(s->topology.domains.size(), 2u);
  const ScenarioDomain& a = s->topology.domains[0];
  ASSERT_EQ(a.hosts.size(), 2u);
  EXPECT_EQ(a.hosts[0].name, "ha-0");
  EXPECT_EQ(a.hosts[1].name, "ha-1");
  EXPECT_EQ(a.hosts[1].domain, "a");
  EXPECT_EQ(a.hosts[1].segments[0].full_name, "ha-1/seg");
  EXPECT_EQ(a.hosts[1].segments[0].capacity_bytes, int64_t{1} << 30);
  EXPECT_EQ(a.hosts[1].prefill_instances[0].full_name, "ha-1/p");
  EXPECT_EQ(a.hosts[1].prefill_instances[0].client, "ha-1/c");
  EXPECT_EQ(a.hosts[0].nic_send_bytes_per_s, 3'125'000'000);   // 25 Gbps
  EXPECT_EQ(a.hosts[0].nic_receive_bytes_per_s, 12'500'000'000);  // default 100 Gbps
  ASSERT_EQ(a.hosts[0].numa_nodes.size(), 1u);
  EXPECT_EQ(a.hosts[0].numa_nodes[0].capacity_bytes, int64_t{64} << 30);
  ASSERT_EQ(s->topology.trunks.size(), 1u);  // generated from default_trunk
  EXPECT_EQ(s->topology.trunks[0].domain_a, "a");
  EXPECT_EQ(s->topology.trunks[0].domain_b, "b");
  EXPECT_EQ(s->topology.trunks[0].latency_ns, 20'000);
  EXPECT_EQ(s->topology.trunks[0].oversubscription_percent, 100);
  ASSERT_EQ(s->knobs.size(), 3u);
  EXPECT_EQ(s->knobs[0].name, "mode");
  EXPECT_EQ(s->knobs[0].value, "enforce");
  EXPECT_EQ(s->knobs[1].value, "0.5");
  EXPECT_EQ(s->knobs[2].value, "3");
  EXPECT_EQ(s->knobs[2].where, "s.json:19:62: $.knobs.replicas");
  EXPECT_NE(s->FindClient("hb/c"), nullptr);
  EXPECT_EQ(s->FindClient("hb/x"), nullptr);
  EXPECT_EQ(s->HostOf("ha-1/seg")->name, "ha-1");
}

TEST(Scenario, ParsesEveryWorkloadType) {
  absl::StatusOr<Scenario> s = Load(Base(R"("workloads": [
    {"type": "trace", "path": "traces/t.jsonl", "replay_speed": 20, "request_limit": 100,
     "prefill": {"policy": "weights", "weights": {"a": 3}}, "decode": {"policy": "hash"},
     "kv_bytes_per_token": "1KiB", "prefill_ns_per_token": 500},
    {"type": "zipf", "name": "hot", "objects": 10, "rate_per_s": 200, "skew": 1.2,
     "reader_domains": ["b"], "readers_per_domain": 4, "object_size_bytes": "4MiB"},
    {"type": "cross_domain_reuse", "writer_domain": "a", "reader_domain": "b", "objects": 5,
     "reads_per_object": 3, "rate_per_s": 10},
    {"type": "scripted", "tenant": "t1", "ops": [
      {"op": "put", "client": "ha-0/c", "key": "k", "size_bytes": "1MiB"},
      {"op": "advance_time", "by_ms": 1.5},
      {"op": "batch_get", "client": "hb/c", "keys": ["k", "j"]},
      {"op": "set_knob", "name": "replicas", "value": 1, "at_ms": 10},
      {"op": "kill_worker", "host": "ha-1"}]}
  ])"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->workloads.size(), 4u);
  const TraceWorkload& t = s->workloads[0].trace;
  EXPECT_EQ(s->workloads[0].name, "trace-0");
  EXPECT_EQ(t.resolved_path, "/data/scen/traces/t.jsonl");
  EXPECT_EQ(t.replay_speed, 20);
  EXPECT_EQ(t.request_limit, 100);
  EXPECT_EQ(t.prefill_policy, InstancePolicy::kWeights);
  ASSERT_EQ(t.prefill_weights.size(), 1u);
  EXPECT_EQ(t.decode_policy, InstancePolicy::kHash);
  EXPECT_EQ(t.kv_bytes_per_token, 1024);
  EXPECT_EQ(t.tokens_per_block, 512);
  const ZipfWorkload& z = s->workloads[1].zipf;
  EXPECT_EQ(z.reader_domains, std::vector<Domain>{"b"});
  EXPECT_EQ(z.writer_domain, "b");
  EXPECT_EQ(z.object_size_bytes, 4 << 20);
  const ScriptedWorkload& sc = s->workloads[3].scripted;
  ASSERT_EQ(sc.ops.size(), 5u);
  EXPECT_EQ(sc.ops[0].tenant, "t1");
  EXPECT_EQ(sc.ops[2].t_ns, 1'500'000);
  EXPECT_EQ(sc.ops[3].t_ns, 10 * kNsPerMs);
  EXPECT_EQ(sc.ops[3].knob_value, "1");
  EXPECT_EQ(sc.ops[4].t_ns, 10 * kNsPerMs);
  EXPECT_EQ(sc.ops[4].host, "ha-1");
}

TEST(Scenario, BatchPutNeedsDistinctKeysAndASize) {
  absl::StatusOr<Scenario> s = Load(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "batch_put", "client": "ha-0/c", "keys": ["k", "j"], "size_bytes": "1MiB"}]}])"));
  ASSERT_TRUE(s.ok()) << s.status();
  const ScriptOp& op = s->workloads[0].scripted.ops.at(0);
  EXPECT_EQ(op.kind, ScriptOpKind::kBatchPut);
  EXPECT_EQ(op.keys, (std::vector<std::string>{"k", "j"}));
  EXPECT_EQ(op.size_bytes, 1 << 20);
  EXPECT_EQ(op.client, "ha-0/c");
  EXPECT_THAT(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "batch_put", "client": "ha-0/c", "keys": ["k", "j"]}]}])")),
              HasSubstr("$.workloads[0].ops[0]: missing required field \"size_bytes\""));
  EXPECT_THAT(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "batch_put", "client": "ha-0/c", "keys": ["k", "k"], "size_bytes": 1}]}])")),
              HasSubstr("$.workloads[0].ops[0].keys[1]: duplicate key \"k\" in the batch"));
  EXPECT_THAT(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "batch_put", "client": "ha-0/c", "keys": [], "size_bytes": 1}]}])")),
              HasSubstr("a batch needs at least one key"));
}

// ---- one test per error class ------------------------------------------

TEST(ScenarioErrors, UnknownField) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"nic_send_gbps\": 100", "\"nic_sned_gbps\": 100"}})),
            "s.json:13:24: $.topology.domains[1].hosts[0].nic_sned_gbps: unknown field "
            "\"nic_sned_gbps\" (known fields: clients, count, decode_instances, "
            "local_copy_gbps, name, nic_count, nic_numa_node, nic_receive_gbps, nic_send_gbps, "
            "numa_distances, numa_nodes, prefill_instances, segments)");
  EXPECT_THAT(ErrorOf(Base("\"colour\": 1")), HasSubstr("s.json:21:3: $.colour: unknown field"));
}

TEST(ScenarioErrors, WrongType) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"nic_send_gbps\": 100", "\"nic_send_gbps\": \"100Gbps\""}})),
            "s.json:13:41: $.topology.domains[1].hosts[0].nic_send_gbps: expected a number, "
            "got string");
  EXPECT_EQ(ErrorOf(Base("", {{"\"seed\": 7", "\"seed\": 7.5"}})),
            "s.json:3:11: $.seed: expected an integer, got 7.5");
  EXPECT_EQ(ErrorOf(Base("\"workloads\": {}")),
            "s.json:21:16: $.workloads: expected an array, got object");
}

TEST(ScenarioErrors, OutOfRange) {
  EXPECT_EQ(ErrorOf(Base("\"faults\": {\"copy_failure_probability\": 1.5}")),
            "s.json:21:42: $.faults.copy_failure_probability: must be in [0, 1], got 1.5");
  EXPECT_EQ(ErrorOf(Base("", {{"\"capacity_bytes\": \"1GiB\"", "\"capacity_bytes\": -5"}})),
            "s.json:9:57: $.topology.domains[0].hosts[0].segments[0].capacity_bytes: must be "
            "at least 1, got -5");
  EXPECT_EQ(ErrorOf(Base("", {{"\"duration_s\": 30", "\"duration_s\": 0"}})),
            "s.json:4:17: $.duration_s: must be in [1, 2592000000000000] ns, got 0 (0 ns)");
  EXPECT_THAT(ErrorOf(Base("", {{"\"capacity_bytes\": \"1GiB\"", "\"capacity_bytes\": \"65GiB\""}})),
              HasSubstr("segments on NUMA node 0 need more than the node's capacity"));
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "zipf", "objects": 4, "rate_per_s": 0}])")),
            "s.json:21:62: $.workloads[0].rate_per_s: must be greater than 0");
  // An integer above int64 is named as too large (it used to read "must be
  // at least 0"); below int64 it is too small.
  EXPECT_EQ(ErrorOf(Base("", {{"\"seed\": 7", "\"seed\": 18446744073709551615"}})),
            "s.json:3:11: $.seed: must be at most 9223372036854775807, got "
            "18446744073709551615");
  EXPECT_EQ(ErrorOf(Base("", {{"\"seed\": 7", "\"seed\": -18446744073709551615"}})),
            "s.json:3:11: $.seed: must be at least 0, got -18446744073709551615");
}

TEST(ScenarioErrors, UnknownDomainReference) {
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "zipf", "objects": 4, "rate_per_s": 1,
      "reader_domains": ["a", "zz"]}])")),
            "s.json:22:31: $.workloads[0].reader_domains[1]: unknown domain \"zz\"");
  EXPECT_EQ(ErrorOf(Base("", {{"\"domains\": [", "\"trunks\": [{\"between\": [\"a\", \"c\"]}],\n"
                                                "    \"domains\": ["}})),
            "s.json:6:34: $.topology.trunks[0].between[1]: unknown domain \"c\"");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"worker_crashes": [{"host": "ha", "at_s": 1}]})")),
            "s.json:21:42: $.faults.worker_crashes[0].host: unknown host \"ha\"");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "mount", "segment": "hb/nope"}]}])")),
            "s.json:22:34: $.workloads[0].ops[0].segment: unknown segment \"hb/nope\" (write "
            "\"<host>/<segment>\")");
}

TEST(ScenarioErrors, DuplicateName) {
  EXPECT_EQ(ErrorOf(Base("", {{"{\"name\": \"b\"", "{\"name\": \"a\""}})),
            "s.json:12:16: $.topology.domains[1].name: duplicate domain name \"a\"");
  EXPECT_EQ(ErrorOf(Base("", {{"\"name\": \"hb\"", "\"name\": \"ha-1\""}})),
            "s.json:13:18: $.topology.domains[1].hosts[0].name: duplicate host name \"ha-1\"");
  EXPECT_EQ(ErrorOf(Base("", {{"\"clients\": [{\"name\": \"c\"}]",
                               "\"clients\": [{\"name\": \"c\"}, {\"name\": \"c\"}]"}})),
            "s.json:10:46: $.topology.domains[0].hosts[0].clients[1].name: duplicate client "
            "name \"c\"");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "scripted", "name": "w", "ops": []},
      {"type": "scripted", "name": "w", "ops": []}])")),
            "s.json:22:36: $.workloads[1].name: duplicate workload name \"w\"");
}

TEST(ScenarioErrors, MissingRequiredField) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"name\": \"base\",", ""}})),
            "s.json:1:1: $: missing required field \"name\"");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "zipf", "rate_per_s": 1}])")),
            "s.json:21:17: $.workloads[0]: missing required field \"objects\"");
}

TEST(ScenarioErrors, MalformedJsonHasLineAndColumn) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"seed\": 7,", "\"seed\": 7"}})),
            "s.json:4:3: expected ',' or '}' in object, got '\"'");
}

TEST(ScenarioErrors, DuplicateKey) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"seed\": 7,", "\"seed\": 7, \"seed\": 8,"}})),
            "s.json:3:14: duplicate key \"seed\"");
}

TEST(ScenarioErrors, TooDeep) {
  ScenarioLoadOptions options = TestOptions();
  options.limits.json.depth_max = 4;
  absl::StatusOr<Scenario> s = Load(Base(), options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.status().message(), "s.json:7:30: nesting deeper than 4 levels");
}

TEST(ScenarioErrors, ListLimitsAreResourceExhausted) {
  ScenarioLoadOptions options = TestOptions();
  options.limits.hosts_max = 2;
  absl::StatusOr<Scenario> s = Load(Base(), options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.status().message(),
            "s.json:13:9: $.topology.domains[1].hosts[0]: more than 2 hosts in the topology");
}

TEST(ScenarioErrors, KnobNamesAndTypes) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"replicas\": 3", "\"replica\": 3"}})),
            "s.json:19:50: $.knobs.replica: unknown knob \"replica\"");
  EXPECT_EQ(ErrorOf(Base("", {{"\"replicas\": 3", "\"replicas\": 2.5"}})),
            "s.json:19:62: $.knobs.replicas: expected an integer for knob \"replicas\", got 2.5");
  EXPECT_EQ(ErrorOf(Base("", {{"\"mode\": \"enforce\"", "\"mode\": 1"}})),
            "s.json:19:21: $.knobs.mode: expected a string for knob \"mode\", got number");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "set_knob", "name": "domain_aware", "value": "yes"}]}])")),
            "s.json:22:59: $.workloads[0].ops[0].value: expected a boolean for knob "
            "\"domain_aware\", got string");
  // Without registries any scalar passes, in text form.
  ScenarioLoadOptions open;
  open.check_knob_names = false;
  absl::StatusOr<Scenario> s = Load(Base("", {{"\"replicas\": 3", "\"anything\": true"}}), open);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->knobs[2].value, "true");
}

TEST(ScenarioErrors, ScriptTimingAndFaultWindows) {
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "advance_time", "by_ms": 100},
      {"op": "kill_worker", "host": "hb", "at_ms": 50}]}])")),
            "s.json:23:52: $.workloads[0].ops[1].at_ms: goes back in time: the script is already "
            "at 100000000 ns");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "scripted", "ops": [
      {"op": "kill_worker", "host": "hb", "at_ms": 30000}]}])")),
            "s.json:22:7: $.workloads[0].ops[0]: op at 30000000000 ns is not before the end of "
            "the run (duration 30000000000 ns)");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"worker_crashes": [
      {"host": "hb", "at_s": 1, "restart_at_s": 5}, {"host": "hb", "at_s": 3}]})")),
            "s.json:22:53: $.faults.worker_crashes[1]: the worker on host \"hb\" is already "
            "down at 3000000000 ns (an earlier fault overlaps)");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"trunk_faults": [{"between": ["a", "b"],
      "kind": "partition", "from_s": 2, "to_s": 1}]})")),
            "s.json:22:49: $.faults.trunk_faults[0].to_s: must be later than from_s");
}

TEST(Scenario, MasterCrashesRestartOneSecondLaterByDefaultInTimeOrder) {
  absl::StatusOr<Scenario> s = Load(Base(R"("faults": {"master_crashes": [
      {"at_s": 20, "restart_at_s": 21.5}, {"at_s": 12.5}]})"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->faults.master_crashes.size(), 2u);
  EXPECT_EQ(s->faults.master_crashes[0].at_ns, 12'500'000'000);
  EXPECT_EQ(s->faults.master_crashes[0].restart_at_ns, 13'500'000'000);
  EXPECT_EQ(s->faults.master_crashes[1].at_ns, 20'000'000'000);
  EXPECT_EQ(s->faults.master_crashes[1].restart_at_ns, 21'500'000'000);
  absl::StatusOr<Scenario> none = Load(Base());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->faults.master_crashes.empty());
}

TEST(ScenarioErrors, MasterCrashesNameTheirJsonPath) {
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": [
      {"at_s": 5, "restart_at_s": 8}, {"at_s": 7}]})")),
            "s.json:22:39: $.faults.master_crashes[1]: the master is already down at "
            "7000000000 ns (an earlier crash overlaps)");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": [{"at_s": 5, "restart_at_s": 5}]})")),
            "s.json:21:61: $.faults.master_crashes[0].restart_at_s: must be later than at_s");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": [{"at_s": 29.5}]})")),
            "s.json:21:42: $.faults.master_crashes[0].at_s: the master must restart before the "
            "end of the run (30000000000 ns); without restart_at_s it restarts 1 s later");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": [{"restart_at_s": 5}]})")),
            "s.json:21:33: $.faults.master_crashes[0]: missing required field \"at_s\"");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": [{"at_s": 1, "host": "hb"}]})")),
            "s.json:21:45: $.faults.master_crashes[0].host: unknown field \"host\" (known "
            "fields: at_s, restart_at_s)");
  EXPECT_EQ(ErrorOf(Base(R"("faults": {"master_crashes": {"at_s": 1}})")),
            "s.json:21:32: $.faults.master_crashes: expected an array, got object");
}

TEST(ScenarioErrors, TopologyRules) {
  EXPECT_EQ(ErrorOf(Base("", {{"\"domains\": [", "\"default_trunk\": null,\n    \"domains\": ["}})),
            "s.json:5:15: $.topology: domain \"b\" is not connected to \"a\" by any trunk");
  EXPECT_EQ(ErrorOf(Base("", {{"\"decode_instances\": [{\"name\": \"d\"}]",
                               "\"decode_instances\": [{\"name\": \"d\", \"client\": \"x\"}]"}})),
            "s.json:16:55: $.topology.domains[1].hosts[0].decode_instances[0].client: unknown "
            "client \"x\" on this host");
  EXPECT_EQ(ErrorOf(Base(R"("workloads": [{"type": "trace", "path": "t.jsonl",
      "decode": {"policy": "same_domain"}}])")),
            "s.json:22:17: $.workloads[0].decode: policy \"same_domain\": domain \"a\" has "
            "prefill but no decode instances");
}

// numa_distances: one row per node in id order, checked as the runtime checks
// an hwloc topology; without it, 10 local and 20 elsewhere.
TEST(Scenario, NumaDistances) {
  auto with = [](absl::string_view numa) {
    return Base("", {{"{\"name\": \"hb\", \"nic_send_gbps\": 100,",
                      absl::StrCat("{\"name\": \"hb\", \"nic_send_gbps\": 100, ", numa, ",")}});
  };
  absl::StatusOr<Scenario> s =
      Load(with(R"("numa_nodes": [{"id": 3}, {"id": 1}], "numa_distances": [[10, 12], [12, 10]])"));
  ASSERT_TRUE(s.ok()) << s.status();
  const ScenarioHost& hb = s->topology.domains[1].hosts[0];
  EXPECT_EQ(hb.numa_distances, (std::vector<std::vector<int>>{{10, 12}, {12, 10}}));
  EXPECT_EQ(HostTopology(hb).distances, hb.numa_distances);
  EXPECT_EQ(HostTopology(hb).nic_node, 1);  // the lowest id
  EXPECT_THAT(hb.numa_where, HasSubstr("$.topology.domains[1].hosts[0].numa_nodes"));
  const ScenarioHost& ha = s->topology.domains[0].hosts[0];
  EXPECT_EQ(HostTopology(ha).distances, (std::vector<std::vector<int>>{{10}}));
  EXPECT_THAT(ha.numa_where, HasSubstr("$.topology.domains[0].hosts[0]"));

  EXPECT_THAT(
      ErrorOf(with(R"("numa_nodes": [{"id": 0}, {"id": 1}], "numa_distances": [[10, 20]])")),
      HasSubstr("$.topology.domains[1].hosts[0].numa_distances: 1 rows for 2 NUMA node(s)"));
  EXPECT_THAT(ErrorOf(with(R"("numa_nodes": [{"id": 0}, {"id": 1}],
                              "numa_distances": [[10, 20], [20, 10, 30]])")),
              HasSubstr("$.topology.domains[1].hosts[0].numa_distances[1]: 3 entries for 2 NUMA "
                        "node(s)"));
  EXPECT_THAT(ErrorOf(with(R"("numa_nodes": [{"id": 0}, {"id": 1}],
                              "numa_distances": [[10, 5], [20, 10]])")),
              HasSubstr("$.topology.domains[1].hosts[0].numa_distances: topology: distance from "
                        "node 0 to node 1 is 5, below its local distance or not positive"));
}

TEST(Scenario, FileErrors) {
  absl::StatusOr<Scenario> s = LoadScenarioFile("/nonexistent/x.json", TestOptions());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
}

// ---- shipped scenarios ------------------------------------------------

using testing_paths::RepoRoot;

// Every registry the simulator accepts (sim/runner.h).
ScenarioLoadOptions RealKnobs() { return SimulatorLoadOptions(); }

std::vector<std::filesystem::path> ShippedScenarios() {
  std::vector<std::filesystem::path> out;
  for (const char* dir : {"scenarios", "scenarios/admission", "scenarios/study"}) {
    for (const auto& e : std::filesystem::directory_iterator(RepoRoot() / dir)) {
      if (e.path().extension() == ".json") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ShippedScenarios, EveryFileLoads) {
  const std::vector<std::filesystem::path> files = ShippedScenarios();
  ASSERT_GE(files.size(), 20u);  // 6 examples + 11 admission cases + 3 studies
  const ScenarioLoadOptions options = RealKnobs();
  for (const auto& path : files) {
    absl::StatusOr<Scenario> s = LoadScenarioFile(path.string(), options);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->name, path.stem().string()) << "file name and scenario name differ";
    EXPECT_FALSE(s->workloads.empty()) << path;
    for (const Workload& w : s->workloads) {
      if (w.type == WorkloadType::kTrace) {
        EXPECT_TRUE(std::filesystem::exists(w.trace.resolved_path)) << w.trace.resolved_path;
      }
    }
  }
}

TEST(ShippedScenarios, DocumentedCompleteExampleLoads) {
  const std::filesystem::path doc = RepoRoot() / "docs" / "scenario-format.md";
  std::ifstream in(doc);
  ASSERT_TRUE(in) << doc;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const size_t section = text.find("## Complete example");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = text.find("```json\n", section);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = text.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  absl::StatusOr<Scenario> s = ParseScenario(text.substr(begin + 8, end - begin - 8),
                                             "scenario-format.md", (RepoRoot() / "docs").string(),
                                             RealKnobs());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->workloads.size(), 4u);
  EXPECT_TRUE(std::filesystem::exists(s->workloads[0].trace.resolved_path));
  EXPECT_EQ(s->faults.trunk_faults.size(), 2u);
  EXPECT_EQ(s->checks.size(), 1u);
}

TEST(ShippedScenarios, ExpectedExamplesExist) {
  for (const char* name :
       {"hot-key-fanout", "cross-domain-reuse", "cold-start-warmup", "eviction-recreate",
        "numa-promotion", "pd-conversation-replay", "study/agentic", "study/hot-shift",
        "study/one-shot-flood"}) {
    EXPECT_TRUE(std::filesystem::exists(RepoRoot() / "scenarios" / absl::StrCat(name, ".json")))
        << name;
  }
}

}  // namespace
}  // namespace heatsink::sim
