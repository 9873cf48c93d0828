// Flow groups (sim/network.h, "Flow groups"): a FlowSpec with count k is k
// flows of `bytes` each that travel together. These tests hold a group to the
// k single flows it stands for -- the same completion time, the same rates
// for the flows it shares with, the same counters and NIC loads -- and check
// its limits and its failure (one `done`, k flows failed).
#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/network.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::ExactKnobs;
using testing::kGBps;
using testing::NetworkHarness;
using testing::TwoDomains;

struct GroupRun {
  std::vector<TimeNs> group_done_ns;  // when each of the k (or the group) ended
  TimeNs other_done_ns = -1;          // the flow the group shares a1's NIC with
  TimeNs cross_done_ns = -1;          // a cross-domain flow that shares the trunk
  TimeNs inbound_done_ns = -1;        // a flow into a2 beside the group
  NetworkCounters counters;
  NicLoad a1_load;
};

// k flows of 1 MB from a1 to a2 (single, or one group), then, 300 ns later, a
// 2 MB flow from a1 to a3 and a 1 MB flow from a1 to b1 that share a1's NIC
// with them, and a 1 MB flow from a3 to a2 that shares a2's NIC with them
// (what it gets is what a1's NIC leaves of a2's). Counters are read at
// 400 ns (mid-flight) into `mid`.
GroupRun RunWith(int64_t k, bool grouped, NetworkCounters* mid) {
  NetworkHarness h(TwoDomains(kGBps, kGBps / 2));
  GroupRun run;
  auto record = [&](absl::Status s) {
    EXPECT_TRUE(s.ok()) << s;
    run.group_done_ns.push_back(h.engine().NowNs());
  };
  FlowSpec spec;
  spec.src_host = h.H("a1");
  spec.dst_host = h.H("a2");
  spec.bytes = 1'000'000;
  if (grouped) {
    spec.count = k;
    EXPECT_TRUE(h.net().StartFlow(spec, record).ok());
  } else {
    for (int64_t i = 0; i < k; ++i) EXPECT_TRUE(h.net().StartFlow(spec, record).ok());
  }
  h.RunUntil(300);
  h.Start("other", "a1", "a3", 2'000'000);
  h.Start("cross", "a1", "b1", 1'000'000);
  h.Start("inbound", "a3", "a2", 1'000'000);
  h.RunUntil(400);
  run.a1_load = h.net().NicFlows(h.H("a1"), 0);
  *mid = h.net().Counters();
  h.Run();
  run.other_done_ns = h.outcome("other").t_ns;
  run.cross_done_ns = h.outcome("cross").t_ns;
  run.inbound_done_ns = h.outcome("inbound").t_ns;
  run.counters = h.net().Counters();
  return run;
}

TEST(FlowGroup, MovesExactlyAsItsSingleFlowsDo) {
  constexpr int64_t kFlows = 7;
  NetworkCounters single_mid;
  NetworkCounters group_mid;
  const GroupRun single = RunWith(kFlows, /*grouped=*/false, &single_mid);
  const GroupRun group = RunWith(kFlows, /*grouped=*/true, &group_mid);

  // The k single flows all land at one instant; the group lands then, once.
  ASSERT_EQ(single.group_done_ns.size(), static_cast<size_t>(kFlows));
  for (TimeNs t : single.group_done_ns) EXPECT_EQ(t, single.group_done_ns.front());
  ASSERT_EQ(group.group_done_ns.size(), 1u);
  EXPECT_EQ(group.group_done_ns.front(), single.group_done_ns.front());
  // 9 flows share a1's 1 GB/s NIC from 300 ns: the group's weight is k, so
  // its neighbours finish when they would beside k single flows.
  EXPECT_EQ(group.other_done_ns, single.other_done_ns);
  EXPECT_EQ(group.cross_done_ns, single.cross_done_ns);
  EXPECT_EQ(group.inbound_done_ns, single.inbound_done_ns);
  EXPECT_GT(group.other_done_ns, group.group_done_ns.front());

  EXPECT_EQ(group.a1_load.send_flows, kFlows + 2);
  EXPECT_EQ(group.a1_load.send_flows, single.a1_load.send_flows);
  auto expect_same = [](const NetworkCounters& got, const NetworkCounters& want) {
    EXPECT_EQ(got.bytes_by_distance, want.bytes_by_distance);
    EXPECT_EQ(got.host_bytes_sent, want.host_bytes_sent);
    EXPECT_EQ(got.host_bytes_received, want.host_bytes_received);
    EXPECT_EQ(got.flows_started, want.flows_started);
    EXPECT_EQ(got.flows_completed, want.flows_completed);
  };
  expect_same(group_mid, single_mid);  // partial progress, mid-flight
  expect_same(group.counters, single.counters);
  EXPECT_EQ(group.counters.flows_started, static_cast<uint64_t>(kFlows + 3));
  EXPECT_EQ(group.counters.host_bytes_received[1], static_cast<uint64_t>(kFlows + 1) * 1'000'000);
}

TEST(FlowGroup, CountIsValidatedAndCountsAgainstFlowsMax) {
  NetworkKnobs knobs = ExactKnobs();
  knobs.flows_max = 10;
  NetworkHarness h(TwoDomains(kGBps, kGBps), knobs);
  int calls = 0;
  auto done = [&](absl::Status) { ++calls; };
  FlowSpec spec{0, 1, 1'000, -1, -1};
  spec.count = 0;
  absl::StatusOr<FlowId> bad = h.net().StartFlow(spec, done);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("flows_max=10"), std::string::npos) << bad.status();
  spec.count = 11;
  EXPECT_EQ(h.net().StartFlow(spec, done).status().code(), absl::StatusCode::kInvalidArgument);
  spec.count = 8;
  ASSERT_TRUE(h.net().StartFlow(spec, done).ok());
  EXPECT_EQ(h.net().flows_alive(), 8);
  spec.count = 3;
  absl::StatusOr<FlowId> over = h.net().StartFlow(spec, done);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("3 more asked"), std::string::npos) << over.status();
  spec.count = 2;
  ASSERT_TRUE(h.net().StartFlow(spec, done).ok());
  EXPECT_EQ(h.net().flows_alive(), 10);
  h.Run();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(h.net().flows_alive(), 0);
}

TEST(FlowGroup, AFailedGroupCallsDoneOnceAndCountsEveryFlow) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  std::vector<absl::StatusCode> codes;
  FlowSpec spec;
  spec.src_host = h.H("a1");
  spec.dst_host = h.H("b1");
  spec.bytes = 1'000'000;
  spec.count = 5;
  ASSERT_TRUE(h.net().StartFlow(spec, [&](absl::Status s) { codes.push_back(s.code()); }).ok());
  h.RunUntil(1'000);
  ASSERT_TRUE(h.net().PartitionTrunk("A", "B").ok());
  h.Run();
  ASSERT_EQ(codes.size(), 1u);
  EXPECT_EQ(codes.front(), absl::StatusCode::kUnavailable);
  const NetworkCounters c = h.net().Counters();
  EXPECT_EQ(c.flows_failed, 5u);
  EXPECT_EQ(c.flows_completed, 0u);
  // 1,000 ns at 1/5 of the 1 GB/s trunk each: 200 bytes per flow moved.
  EXPECT_EQ(c.host_bytes_sent[0], 5u * 200u);
  EXPECT_EQ(h.net().flows_alive(), 0);
}

}  // namespace
}  // namespace heatsink::sim
