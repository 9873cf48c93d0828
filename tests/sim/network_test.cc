// Covers sim/network beyond rate sharing: topology and knob validation,
// routing over several trunks, partition of a trunk (cross-domain flows fail
// with UNAVAILABLE, local flows speed up, new flows and control messages are
// refused until healed), failing flows one by one or by host, limits and bad
// arguments (done never called), accounting by distance class and host
// (including partial progress), per-interval samples of host bytes, and
// control-message latency by distance with
// seeded, bounded jitter.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/network_sampler.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::ExactKnobs;
using testing::kGBps;
using testing::NetworkHarness;
using testing::TwoDomains;

TEST(NetworkTopology, RejectsBadTopologies) {
  EXPECT_TRUE(TwoDomains(kGBps, kGBps).Validate().ok());
  NetworkTopology dup_host = TwoDomains(kGBps, kGBps);
  dup_host.domains[1].hosts[0].name = "a1";
  EXPECT_EQ(dup_host.Validate().message(), "domains[1].hosts[0]: duplicate host 'a1'");
  NetworkTopology unknown = TwoDomains(kGBps, kGBps);
  unknown.trunks[0].domain_b = "Z";
  EXPECT_EQ(unknown.Validate().message(), "trunks[0]: unknown domain 'Z'");
  NetworkTopology island = TwoDomains(kGBps, kGBps);
  island.trunks.clear();
  EXPECT_EQ(island.Validate().message(), "domain 'B' is not reachable from 'A' over trunks");
  NetworkTopology undersubscribed = TwoDomains(kGBps, kGBps, 0, 50);
  EXPECT_EQ(undersubscribed.Validate().code(), absl::StatusCode::kInvalidArgument);
  NetworkTopology no_nic = TwoDomains(kGBps, kGBps);
  no_nic.domains[0].hosts[2].nics.clear();
  EXPECT_EQ(no_nic.Validate().message(), "domains[0].hosts[2]: needs 1..16 nics, has 0");
  NetworkTopology twice = TwoDomains(kGBps, kGBps);
  twice.trunks.push_back(TrunkSpec{"B", "A", kGBps, 0, 100});
  EXPECT_EQ(twice.Validate().code(), absl::StatusCode::kInvalidArgument);

  Engine engine;
  Rng rng(1);
  EXPECT_EQ(Network::Create(&engine, &rng, island, NetworkKnobs()).status().code(),
            absl::StatusCode::kInvalidArgument);
  NetworkKnobs bad;
  bad.flows_max = 0;
  EXPECT_EQ(Network::Create(&engine, &rng, TwoDomains(kGBps, kGBps), bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NetworkKnobs, RegistryNamesEveryKnob) {
  NetworkKnobs k;
  const auto& r = NetworkKnobs::Registry();
  ASSERT_TRUE(r.Set(k, "transfer_overhead_ns", "123").ok());
  ASSERT_TRUE(r.Set(k, "selective_update", "false").ok());
  EXPECT_EQ(k.transfer_overhead_ns, 123);
  EXPECT_FALSE(k.selective_update);
  EXPECT_EQ(r.Dump(k).size(), 10u);
}

TEST(Routes, PicksTheLowestLatencyPathOverSeveralTrunks) {
  NetworkTopology t;
  for (const char* d : {"A", "B", "C"}) t.domains.push_back(DomainSpec{d, {testing::Host(d, kGBps)}});
  t.trunks.push_back(TrunkSpec{"A", "B", kGBps, 10'000, 100});
  t.trunks.push_back(TrunkSpec{"C", "B", kGBps, 10'000, 100});
  t.trunks.push_back(TrunkSpec{"A", "C", kGBps, 50'000, 100});  // slower direct path
  ASSERT_TRUE(t.Validate().ok());
  const auto routes = ComputeRoutes(t);
  const Route& a_to_c = routes[0][2];
  ASSERT_EQ(a_to_c.hops.size(), 2u);
  EXPECT_EQ(a_to_c.latency_ns, 20'000);
  EXPECT_EQ(a_to_c.hops[0].trunk, 0);
  EXPECT_TRUE(a_to_c.hops[0].a_to_b);
  EXPECT_EQ(a_to_c.hops[1].trunk, 1);
  EXPECT_FALSE(a_to_c.hops[1].a_to_b);  // C-B trunk travelled from B to C
  EXPECT_TRUE(routes[1][1].hops.empty());

  // A flow from A to C pays both trunk latencies and crosses both trunks:
  // partitioning the B-C trunk fails it.
  NetworkHarness h(t);
  h.Start("ac", "A", "C", 0);
  h.Run();
  EXPECT_EQ(h.outcome("ac").t_ns, 20'000);
  ASSERT_TRUE(h.net().PartitionTrunk("B", "C").ok());
  FlowSpec spec{h.H("A"), h.H("C"), 10, -1, -1};
  EXPECT_EQ(h.net().StartFlow(spec, [](absl::Status) {}).status().code(),
            absl::StatusCode::kUnavailable);
  spec.dst_host = h.H("B");
  EXPECT_TRUE(h.net().StartFlow(spec, [](absl::Status) {}).ok());
}

TEST(Partition, FailsCrossDomainFlowsAndFreesTheirShare) {
  NetworkHarness h(TwoDomains(kGBps, kGBps, /*trunk_latency_ns=*/1'000'000));
  const FlowId local = h.Start("local", "a1", "a2", kGBps);
  h.Start("cross", "a1", "b1", kGBps);  // moving from 1 ms (trunk latency)
  h.RunUntil(500'000'000);
  EXPECT_EQ(h.Rate(local), kGBps / 2);
  h.Start("setup", "a2", "b2", kGBps);  // still in setup at the partition
  ASSERT_TRUE(h.net().PartitionTrunk("A", "B").ok());
  EXPECT_EQ(h.net().flows_alive(), 1);
  EXPECT_EQ(h.Rate(local), kGBps);
  EXPECT_EQ(h.outcome("cross").t_ns, -1);  // delivered as an event, not inline
  h.RunUntil(500'000'000);
  EXPECT_EQ(h.outcome("cross").code, absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.outcome("cross").t_ns, 500'000'000);
  EXPECT_EQ(h.outcome("setup").code, absl::StatusCode::kUnavailable);

  // Refused while partitioned, in both directions; local traffic is not.
  FlowSpec back{h.H("b1"), h.H("a3"), 1, -1, -1};
  bool called = false;
  EXPECT_EQ(h.net().StartFlow(back, [&](absl::Status) { called = true; }).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.net().ControlLatencyNs(h.H("a1"), h.H("b1")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(h.net().ControlLatencyNs(h.H("a1"), h.H("a2")).ok());

  // local moved 1e6 B alone, then 2.495e8 B at half rate; 7.495e8 B remain
  // at the full 1 GB/s from the partition on.
  h.Run();
  EXPECT_EQ(h.outcome("local").t_ns, 1'249'500'000);
  EXPECT_EQ(h.outcome("local").code, absl::StatusCode::kOk);
  EXPECT_FALSE(called);

  ASSERT_TRUE(h.net().HealTrunk("A", "B").ok());
  h.Start("after", "b1", "a3", 1'000);
  h.Run();
  EXPECT_EQ(h.outcome("after").code, absl::StatusCode::kOk);
  EXPECT_EQ(h.net().PartitionTrunk("A", "Q").code(), absl::StatusCode::kNotFound);
  const NetworkCounters c = h.net().Counters();
  EXPECT_EQ(c.flows_failed, 2u);
  EXPECT_EQ(c.flows_completed, 2u);
}

TEST(FailFlows, ByIdAndByHost) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  const FlowId f1 = h.Start("f1", "a1", "a2", kGBps);
  h.Start("f2", "a3", "a1", kGBps);
  h.Start("f3", "a3", "a4", kGBps);
  const FlowId f4 = h.Start("f4", "b1", "b2", kGBps);
  h.RunUntil(100);
  EXPECT_EQ(h.net().FailFlowsOfHost(h.H("a1"), absl::AbortedError("worker crashed")), 2);
  EXPECT_FALSE(h.net().FailFlow(f1, absl::AbortedError("again")));
  EXPECT_TRUE(h.net().FailFlow(f4, absl::UnavailableError("injected")));
  h.Run();
  EXPECT_EQ(h.outcome("f1").code, absl::StatusCode::kAborted);
  EXPECT_EQ(h.outcome("f2").code, absl::StatusCode::kAborted);
  EXPECT_EQ(h.outcome("f1").t_ns, 100);
  EXPECT_EQ(h.outcome("f4").code, absl::StatusCode::kUnavailable);
  // f3 shared a3's NIC with f2: half rate for 100 ns, then full.
  EXPECT_EQ(h.outcome("f3").code, absl::StatusCode::kOk);
  EXPECT_EQ(h.outcome("f3").t_ns, 1'000'000'050);
}

TEST(FailFlows, AHandleNamesOneFlowEvenAfterItsSlotIsReused) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  const FlowId first = h.Start("first", "a1", "a2", 1'000);
  h.Run();
  ASSERT_EQ(h.outcome("first").code, absl::StatusCode::kOk);
  // The ended flow's slot is the only free one: the next flow takes it.
  const FlowId second = h.Start("second", "a1", "a2", kGBps);
  EXPECT_NE(second, first);
  EXPECT_GT(second, first);  // handles sort in start order
  EXPECT_FALSE(h.net().GetFlow(first).has_value());
  EXPECT_FALSE(h.net().FailFlow(first, absl::AbortedError("stale handle")));
  ASSERT_TRUE(h.net().GetFlow(second).has_value());
  EXPECT_EQ(h.net().GetFlow(second)->id, second);
  EXPECT_FALSE(h.net().FailFlow(0, absl::AbortedError("never issued")));
  EXPECT_FALSE(h.net().FailFlow(second + 1, absl::AbortedError("never issued")));
  h.Run();
  EXPECT_EQ(h.outcome("second").code, absl::StatusCode::kOk);
}

TEST(StartFlow, RejectsBadArgumentsAndLimitsWithoutCallingDone) {
  NetworkKnobs knobs = ExactKnobs();
  knobs.flows_max = 2;
  knobs.flow_bytes_max = 1'000;
  NetworkHarness h(TwoDomains(kGBps, kGBps), knobs);
  int calls = 0;
  auto done = [&](absl::Status) { ++calls; };
  EXPECT_EQ(h.net().StartFlow(FlowSpec{-1, 0, 1, -1, -1}, done).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.net().StartFlow(FlowSpec{0, 1, -1, -1, -1}, done).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.net().StartFlow(FlowSpec{0, 1, 1'001, -1, -1}, done).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.net().StartFlow(FlowSpec{0, 1, 1, 3, -1}, done).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(h.net().StartFlow(FlowSpec{0, 1, 1'000, -1, -1}, done).ok());
  ASSERT_TRUE(h.net().StartFlow(FlowSpec{0, 2, 1'000, -1, -1}, done).ok());
  EXPECT_EQ(h.net().StartFlow(FlowSpec{0, 3, 1, -1, -1}, done).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(calls, 0);
  h.Run();
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(h.net().StartFlow(FlowSpec{0, 3, 1, -1, -1}, done).ok());  // room again
}

TEST(Accounting, BytesByDistanceAndHostIncludingPartialProgress) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  h.Start("local_copy", "a1", "a1", 1'000'000);  // host's 20 GB/s copy bandwidth
  h.Start("same_domain", "a1", "a2", 2'000'000);
  h.Start("cross", "a3", "b1", 3'000'000);
  h.Run();
  EXPECT_EQ(h.outcome("local_copy").t_ns, 50'000);
  NetworkCounters c = h.net().Counters();
  EXPECT_EQ(c.bytes_by_distance[static_cast<int>(Distance::kSameHost)], 1'000'000u);
  EXPECT_EQ(c.bytes_by_distance[static_cast<int>(Distance::kSameDomain)], 2'000'000u);
  EXPECT_EQ(c.bytes_by_distance[static_cast<int>(Distance::kCrossDomain)], 3'000'000u);
  EXPECT_EQ(c.host_bytes_sent[h.H("a1")], 3'000'000u);
  EXPECT_EQ(c.host_bytes_sent[h.H("a3")], 3'000'000u);
  EXPECT_EQ(c.host_bytes_received[h.H("a1")], 1'000'000u);
  EXPECT_EQ(c.host_bytes_received[h.H("b1")], 3'000'000u);
  EXPECT_EQ(c.flows_started, 3u);
  EXPECT_EQ(c.flows_completed, 3u);

  // Mid-flow: exactly rate * elapsed whole bytes, without disturbing the flow.
  h.Start("long", "a2", "a4", kGBps);
  h.RunUntil(h.engine().NowNs() + 250'000'003);
  c = h.net().Counters();
  EXPECT_EQ(c.host_bytes_sent[h.H("a2")], 250'000'003u);
  EXPECT_EQ(c.host_bytes_received[h.H("a4")], 250'000'003u);
  EXPECT_EQ(h.net().NicFlows(h.H("a2"), 0).send_flows, 1);
  EXPECT_EQ(h.net().NicFlows(h.H("a4"), 0).receive_flows, 1);
  h.Run();
  EXPECT_EQ(h.net().Counters().host_bytes_sent[h.H("a2")], 1'000'000'000u);
}

TEST(Accounting, SamplerSplitsHostBytesByInterval) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  NetworkSampler sampler(&h.engine(), &h.net(), /*interval_ns=*/100'000'000, /*samples_max=*/4);
  sampler.Start();
  h.Start("f", "a1", "b1", 250'000'000);  // 1 GB/s for 250 ms
  h.RunUntil(1'000'000'000);
  ASSERT_EQ(sampler.samples().size(), 4u);
  EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted);
  const int a1 = h.H("a1");
  const int b1 = h.H("b1");
  const std::vector<uint64_t> expected = {100'000'000, 100'000'000, 50'000'000, 0};
  for (size_t i = 0; i < 4; ++i) {
    const NetworkSample& s = sampler.samples()[i];
    EXPECT_EQ(s.t_ns, static_cast<TimeNs>(i + 1) * 100'000'000);
    EXPECT_EQ(s.host_bytes_sent[a1], expected[i]) << i;
    EXPECT_EQ(s.host_bytes_received[b1], expected[i]) << i;
    EXPECT_EQ(s.bytes_by_distance[static_cast<int>(Distance::kCrossDomain)], expected[i]);
    EXPECT_EQ(s.host_bytes_sent[b1], 0u);
  }
  EXPECT_EQ(sampler.samples()[1].flows_alive, 1);
  EXPECT_EQ(sampler.samples()[2].flows_alive, 0);
}

TEST(ControlLatency, ByDistanceClassWithBoundedSeededJitter) {
  NetworkKnobs knobs;  // 5 us / 50 us / 100 us, 10% jitter
  NetworkHarness h(TwoDomains(kGBps, kGBps, /*trunk_latency_ns=*/20'000), knobs, /*seed=*/9);
  NetworkHarness same_seed(TwoDomains(kGBps, kGBps, 20'000), knobs, 9);
  NetworkHarness other_seed(TwoDomains(kGBps, kGBps, 20'000), knobs, 10);
  struct Case {
    const char* src;
    const char* dst;
    DurationNs base;
  };
  bool other_differs = false;
  for (const Case& c : {Case{"a1", "a1", 5'000}, Case{"a1", "a2", 50'000},
                        Case{"b2", "a4", 120'000}}) {
    std::set<DurationNs> seen;
    for (int i = 0; i < 2'000; ++i) {
      const DurationNs d = h.net().ControlLatencyNs(h.H(c.src), h.H(c.dst)).value();
      ASSERT_GE(d, c.base);
      ASSERT_LE(d, c.base + c.base / 10);
      seen.insert(d);
      EXPECT_EQ(d, same_seed.net().ControlLatencyNs(h.H(c.src), h.H(c.dst)).value());
      other_differs |= d != other_seed.net().ControlLatencyNs(h.H(c.src), h.H(c.dst)).value();
    }
    // Spread over the range, not stuck at one end.
    EXPECT_LT(*seen.begin(), c.base + c.base / 100);
    EXPECT_GT(*seen.rbegin(), c.base + c.base / 10 - c.base / 100);
  }
  EXPECT_TRUE(other_differs);
  const NetworkCounters counters = h.net().Counters();
  EXPECT_EQ(counters.control_messages_by_distance, (std::array<uint64_t, 3>{2'000, 2'000, 2'000}));
}

TEST(ControlLatency, SendControlDeliversAfterTheLatency) {
  NetworkHarness h(TwoDomains(kGBps, kGBps, 20'000));  // exact knobs: no jitter
  std::vector<std::pair<std::string, TimeNs>> delivered;
  auto note = [&](std::string what) {
    return [&delivered, &h, what] { delivered.emplace_back(what, h.engine().NowNs()); };
  };
  ASSERT_TRUE(h.net().SendControl(h.H("a1"), h.H("b1"), note("cross")).ok());
  ASSERT_TRUE(h.net().SendControl(h.H("a1"), h.H("a2"), note("domain")).ok());
  ASSERT_TRUE(h.net().SendControl(h.H("a1"), h.H("a1"), note("host")).ok());
  h.Run();
  EXPECT_EQ(delivered, (std::vector<std::pair<std::string, TimeNs>>{
                           {"host", 5'000}, {"domain", 50'000}, {"cross", 120'000}}));
}

}  // namespace
}  // namespace heatsink::sim

namespace heatsink::sim {
namespace {

TEST(FlowSlots, AQuietNetworkAfterABurstStillRunsFlowsExactly) {
  // More flows than the slots kept once nothing moves: after the burst the
  // slab is given back, and later flows are timed as on a fresh network.
  testing::NetworkHarness h(testing::TwoDomains(testing::kGBps, testing::kGBps));
  std::vector<FlowId> burst;
  for (int i = 0; i < 20'000; ++i) {
    burst.push_back(h.Start(absl::StrCat("b", i), "a1", "a2", 1'000));
  }
  h.Run();
  EXPECT_EQ(h.net().flows_alive(), 0);
  EXPECT_EQ(h.outcome("b19999").code, absl::StatusCode::kOk);
  const TimeNs quiet = h.engine().NowNs();
  const FlowId next = h.Start("after", "a1", "a2", testing::kGBps);
  EXPECT_FALSE(h.net().GetFlow(burst.front()).has_value());
  EXPECT_TRUE(h.net().GetFlow(next).has_value());
  h.Run();
  EXPECT_EQ(h.outcome("after").t_ns, quiet + 1'000'000'000);
  EXPECT_EQ(h.net().Counters().flows_completed, 20'001u);
}

}  // namespace
}  // namespace heatsink::sim
