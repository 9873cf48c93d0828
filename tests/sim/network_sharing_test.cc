// Covers max-min fair sharing in sim/network against hand-computed cases:
// two flows on one NIC, a trunk bottleneck next to a NIC-limited flow
// (with oversubscription), flows ending and the others' rates rising with
// exact ceil-divided completion times, the fixed per-transfer overhead and
// trunk latency, degradation of a trunk, multi-NIC hosts, and selective
// update: only the component sharing a resource with a change is re-solved
// (counted per event), with the same results as re-solving everything.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::ExactKnobs;
using testing::kGBps;
using testing::NetworkHarness;
using testing::TwoDomains;

TEST(MaxMinSharing, TwoFlowsOnOneNicEachGetHalf) {
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  const FlowId f1 = h.Start("f1", "a1", "a2", kGBps);
  const FlowId f2 = h.Start("f2", "a1", "a3", kGBps);
  h.RunUntil(0);  // activations (no overhead)
  EXPECT_EQ(h.Rate(f1), kGBps / 2);
  EXPECT_EQ(h.Rate(f2), kGBps / 2);
  EXPECT_EQ(h.net().NicFlows(h.H("a1"), 0).send_flows, 2);
  h.Run();
  EXPECT_EQ(h.outcome("f1").t_ns, 2'000'000'000);
  EXPECT_EQ(h.outcome("f2").t_ns, 2'000'000'000);
  EXPECT_EQ(h.outcome("f1").code, absl::StatusCode::kOk);
}

TEST(MaxMinSharing, TrunkBottleneckLeavesTheRestOfTheNicToLocalFlows) {
  // 3 GB/s trunk at 3:1 oversubscription = 1 GB/s usable; 10 GB/s NICs.
  NetworkHarness h(TwoDomains(10 * kGBps, 3 * kGBps, 0, 300));
  const FlowId cross1 = h.Start("cross1", "a1", "b1", kGBps);
  const FlowId cross2 = h.Start("cross2", "a2", "b2", kGBps);
  const FlowId local = h.Start("local", "a1", "a3", 19 * kGBps / 2);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(cross1), kGBps / 2);  // half of the trunk each
  EXPECT_EQ(h.Rate(cross2), kGBps / 2);
  EXPECT_EQ(h.Rate(local), 10 * kGBps - kGBps / 2);  // a1's NIC minus cross1
  h.Run();
  EXPECT_EQ(h.outcome("local").t_ns, 1'000'000'000);
  EXPECT_EQ(h.outcome("cross1").t_ns, 2'000'000'000);
  EXPECT_EQ(h.outcome("cross2").t_ns, 2'000'000'000);
}

TEST(MaxMinSharing, FlowsEndingRaiseTheOthersWithExactTimes) {
  // Three flows share a1's 1 GB/s NIC: floor(1e9 / 3) = 333333333 B/s each.
  // f1 (1e8 B) ends at ceil(1e17 / 333333333) = 300000001 ns; f2 then has
  // 99999999766666667 work units left at 5e8 B/s: +200000000 ns; f3 then has
  // 799999999766666667 left at 1e9 B/s: +800000000 ns.
  NetworkHarness h(TwoDomains(kGBps, kGBps));
  const FlowId f1 = h.Start("f1", "a1", "a2", 100'000'000);
  const FlowId f2 = h.Start("f2", "a1", "a3", 200'000'000);
  const FlowId f3 = h.Start("f3", "a1", "a4", 1'000'000'000);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(f1), 333'333'333);
  EXPECT_EQ(h.net().GetFlow(f1)->completion_ns, 300'000'001);
  h.RunUntil(400'000'000);
  EXPECT_FALSE(h.net().GetFlow(f1).has_value());
  EXPECT_EQ(h.Rate(f2), 500'000'000);
  EXPECT_EQ(h.Rate(f3), 500'000'000);
  h.Run();
  EXPECT_EQ(h.outcome("f1").t_ns, 300'000'001);
  EXPECT_EQ(h.outcome("f2").t_ns, 500'000'001);
  EXPECT_EQ(h.outcome("f3").t_ns, 1'300'000'001);
  const NetworkCounters c = h.net().Counters();
  EXPECT_EQ(c.bytes_by_distance[static_cast<int>(Distance::kSameDomain)], 1'300'000'000u);
}

TEST(MaxMinSharing, PerTransferOverheadAndTrunkLatencyDelayTheStart) {
  NetworkKnobs knobs = ExactKnobs();
  knobs.transfer_overhead_ns = 10'000;
  NetworkHarness h(TwoDomains(kGBps, kGBps, /*trunk_latency_ns=*/50'000), knobs);
  const FlowId local = h.Start("local", "a1", "a2", 1'000'000);
  h.Start("cross", "a3", "b1", 1'000'000);
  h.Start("empty", "a4", "a2", 0);
  h.RunUntil(9'999);
  EXPECT_FALSE(h.net().GetFlow(local)->moving);  // still in setup
  EXPECT_EQ(h.net().GetFlow(local)->rate_bytes_per_s, 0);
  h.Run();
  EXPECT_EQ(h.outcome("local").t_ns, 1'010'000);
  EXPECT_EQ(h.outcome("cross").t_ns, 1'060'000);
  EXPECT_EQ(h.outcome("empty").t_ns, 10'000);
  EXPECT_EQ(h.outcome("empty").code, absl::StatusCode::kOk);
}

// A source delay (the serving host reading the data out of its memory) adds
// to setup: the flow takes no share of the NIC until it has passed.
TEST(MaxMinSharing, SourceDelayAddsToSetupAndHoldsNoShare) {
  NetworkKnobs knobs = ExactKnobs();
  knobs.transfer_overhead_ns = 10'000;
  NetworkHarness h(TwoDomains(kGBps, kGBps), knobs);
  const FlowId delayed = h.Start("delayed", "a1", "a2", 1'000'000, /*source_delay_ns=*/500'000);
  const FlowId other = h.Start("other", "a1", "a3", 1'000'000);
  h.RunUntil(509'999);
  EXPECT_FALSE(h.net().GetFlow(delayed)->moving);
  EXPECT_EQ(h.Rate(other), kGBps);  // alone on a1's NIC meanwhile
  h.RunUntil(510'000);
  EXPECT_TRUE(h.net().GetFlow(delayed)->moving);
  EXPECT_EQ(h.Rate(other), kGBps / 2);
  h.Run();
  // other: 500,000 bytes alone, then 500,000 at half rate.
  EXPECT_EQ(h.outcome("other").t_ns, 1'510'000);
  // delayed: 500,000 bytes at half rate, then 500,000 alone.
  EXPECT_EQ(h.outcome("delayed").t_ns, 2'010'000);

  int calls = 0;
  auto done = [&](absl::Status) { ++calls; };
  FlowSpec bad{h.H("a1"), h.H("a2"), 1, -1, -1};
  bad.source_delay_ns = -1;
  EXPECT_EQ(h.net().StartFlow(bad, done).status().code(), absl::StatusCode::kInvalidArgument);
  bad.source_delay_ns = FlowSpec::kSourceDelayMaxNs + 1;
  EXPECT_EQ(h.net().StartFlow(bad, done).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(calls, 0);
}

TEST(MaxMinSharing, DegradedTrunkSlowsMovingFlowsAndAddsLatency) {
  NetworkHarness h(TwoDomains(10 * kGBps, kGBps));
  const FlowId f = h.Start("f", "a1", "b1", kGBps);
  h.RunUntil(500'000'000);  // half the bytes are across
  ASSERT_TRUE(h.net().DegradeTrunk("B", "A", 25, 1'000).ok());
  EXPECT_EQ(h.Rate(f), kGBps / 4);
  h.Start("late", "a2", "b2", 0);  // pays the extra latency in setup
  h.RunUntil(500'000'999);
  EXPECT_EQ(h.outcome("late").t_ns, -1);
  h.RunUntil(500'001'000);
  EXPECT_EQ(h.outcome("late").t_ns, 500'001'000);
  h.Run();
  // 5e8 bytes left at 2.5e8 B/s: two more seconds.
  EXPECT_EQ(h.outcome("f").t_ns, 2'500'000'000);
  EXPECT_EQ(h.net().DegradeTrunk("A", "B", 0, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.net().DegradeTrunk("A", "C", 50, 0).code(), absl::StatusCode::kNotFound);
}

TEST(MaxMinSharing, MultiNicHostSpreadsFlowsOverItsNics) {
  NetworkTopology t;
  t.domains.push_back(DomainSpec{"A", {testing::Host("big", kGBps, 2), testing::Host("x", kGBps),
                                       testing::Host("y", kGBps)}});
  NetworkHarness h(std::move(t));
  const FlowId f1 = h.Start("f1", "big", "x", kGBps);
  const FlowId f2 = h.Start("f2", "big", "y", kGBps);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(f1), kGBps);
  EXPECT_EQ(h.Rate(f2), kGBps);
  EXPECT_EQ(h.net().NicFlows(h.H("big"), 0).send_flows, 1);
  EXPECT_EQ(h.net().NicFlows(h.H("big"), 1).send_flows, 1);
  h.Run();
  EXPECT_EQ(h.outcome("f2").t_ns, 1'000'000'000);
  EXPECT_EQ(h.net().NicFlows(h.H("big"), 1).send_flows, 0);
}

// Runs a fixed sequence of flows and returns how many flows each rate update
// re-solved, in order. Each flow is started and set up at its own moment, so
// each activation is an update of its own.
std::vector<int64_t> RecomputationsPerEvent(bool selective, std::map<std::string, testing::Outcome>* out) {
  NetworkKnobs knobs = ExactKnobs();
  knobs.selective_update = selective;
  NetworkHarness h(TwoDomains(kGBps, kGBps), knobs);
  std::vector<int64_t> per_event;
  uint64_t updates_seen = 0;
  h.engine().SetAfterEventHook([&]() -> absl::Status {
    if (h.net().rate_updates() != updates_seen) {
      updates_seen = h.net().rate_updates();
      per_event.push_back(h.net().last_update_flows_recomputed());
    }
    return absl::OkStatus();
  });
  h.Start("f1", "a1", "a2", 100'000'000);  // shares a1's send NIC with f4
  h.RunUntil(0);
  h.Start("f2", "b1", "b2", kGBps);  // its own component
  h.RunUntil(0);
  h.Start("f3", "a3", "a4", kGBps);  // its own component (a3 send, a4 receive)
  h.RunUntil(0);
  h.Start("f4", "a1", "a3", kGBps);  // a1 send + a3 receive: joins f1 only
  h.RunUntil(0);
  h.RunUntil(200'000'000);  // f1 completes
  EXPECT_EQ(h.outcome("f1").t_ns, 200'000'000);
  h.Run();
  *out = h.outcomes();
  return per_event;
}

TEST(SelectiveUpdate, ReSolvesOnlyTheAffectedComponent) {
  std::map<std::string, testing::Outcome> selective_out, full_out;
  // Activations of f1, f2, f3 (one flow each), f4 joining f1, f1 ending (f4
  // alone), then f2 and f3 ending together at 1 s (one update, nothing left
  // beside them) and f4 at 1.1 s.
  EXPECT_EQ(RecomputationsPerEvent(true, &selective_out),
            (std::vector<int64_t>{1, 1, 1, 2, 1, 0, 0}));
  // Without selective update every moving flow is re-solved every time.
  EXPECT_EQ(RecomputationsPerEvent(false, &full_out), (std::vector<int64_t>{1, 2, 3, 4, 3, 1, 0}));
  // Same rates either way, so the same completion times.
  ASSERT_EQ(selective_out.size(), 4u);
  for (const auto& [label, outcome] : selective_out) {
    EXPECT_EQ(outcome.t_ns, full_out[label].t_ns) << label;
  }
  EXPECT_EQ(selective_out["f2"].t_ns, 1'000'000'000);
  EXPECT_EQ(selective_out["f3"].t_ns, 1'000'000'000);
  EXPECT_EQ(selective_out["f4"].t_ns, 1'100'000'000);
}

// Flows set up at the same instant share one re-solve, and flows ending at
// the same instant another; the rates and completion times are those of one
// re-solve per flow (checked against the fair shares by hand).
TEST(SelectiveUpdate, FlowsChangingAtTheSameInstantShareOneReSolve) {
  NetworkHarness h(TwoDomains(kGBps, kGBps), ExactKnobs());
  std::vector<FlowId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(h.Start(absl::StrCat("f", i), "a1", "a2", kGBps / 4));
  const FlowId other = h.Start("other", "b1", "b2", kGBps);
  const uint64_t before = h.net().rate_updates();
  h.RunUntil(0);
  EXPECT_EQ(h.net().rate_updates(), before + 1);
  EXPECT_EQ(h.net().last_update_flows_recomputed(), 5);
  for (const FlowId id : ids) EXPECT_EQ(h.Rate(id), kGBps / 4);
  EXPECT_EQ(h.Rate(other), kGBps);
  // The four equal flows end together at 1 s, with "other": one update.
  h.Run();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(h.outcome(absl::StrCat("f", i)).t_ns, 1'000'000'000);
  EXPECT_EQ(h.outcome("other").t_ns, 1'000'000'000);
  EXPECT_EQ(h.net().rate_updates(), before + 2);
}

// Random churn over three domains; returns every flow's end time.
std::map<std::string, testing::Outcome> RandomChurn(uint64_t seed, bool selective,
                                                    uint64_t* recomputed) {
  NetworkTopology t;
  for (const char* d : {"A", "B", "C"}) {
    DomainSpec domain{d, {}};
    for (int i = 0; i < 4; ++i) {
      domain.hosts.push_back(testing::Host(absl::StrCat(d, i), (1 + i) * kGBps, 1 + i % 2));
    }
    t.domains.push_back(domain);
  }
  t.trunks.push_back(TrunkSpec{"A", "B", 2 * kGBps, 20'000, 200});
  t.trunks.push_back(TrunkSpec{"B", "C", 3 * kGBps, 30'000, 100});
  NetworkKnobs knobs;
  knobs.selective_update = selective;
  NetworkHarness h(std::move(t), knobs);
  Rng rng(seed);
  for (int i = 0; i < 300; ++i) {
    const TimeNs at = static_cast<TimeNs>(rng.Uniform(50'000'000));
    const std::string src = absl::StrCat(std::string(1, "ABC"[rng.Uniform(3)]), rng.Uniform(4));
    // Mostly same-domain traffic, like reads served near their readers.
    const std::string dst = rng.Bernoulli(4, 5)
                                ? absl::StrCat(src.substr(0, 1), rng.Uniform(4))
                                : absl::StrCat(std::string(1, "ABC"[rng.Uniform(3)]), rng.Uniform(4));
    const int64_t bytes = static_cast<int64_t>(rng.Uniform(64'000'000));
    h.engine().ScheduleAt(at, [&h, i, src, dst, bytes] { h.Start(absl::StrCat("f", i), src, dst, bytes); });
  }
  h.Run();
  *recomputed = h.net().flows_recomputed_total();
  EXPECT_EQ(h.net().flows_alive(), 0);
  return h.outcomes();
}

TEST(SelectiveUpdate, MatchesFullRecomputationOnRandomChurn) {
  uint64_t selective_work = 0, full_work = 0, again_work = 0;
  const auto selective = RandomChurn(5, true, &selective_work);
  const auto full = RandomChurn(5, false, &full_work);
  const auto again = RandomChurn(5, true, &again_work);
  ASSERT_EQ(selective.size(), 300u);
  for (const auto& [label, outcome] : selective) {
    EXPECT_EQ(outcome.t_ns, full.at(label).t_ns) << label;
    EXPECT_EQ(outcome.t_ns, again.at(label).t_ns) << label;  // deterministic
    EXPECT_EQ(outcome.code, absl::StatusCode::kOk);
  }
  EXPECT_EQ(selective_work, again_work);
  EXPECT_LT(selective_work, full_work);
}

}  // namespace
}  // namespace heatsink::sim
