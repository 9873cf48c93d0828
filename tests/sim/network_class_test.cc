// Covers the route classes of sim/network: many flows over one route ending
// in the right order at exact times, flows joining a class at different
// moments (one class clock, different targets) across rate changes caused by
// another class, a flow failing inside a class (first or not), equal flows
// tying at one nanosecond (start order, before the re-solve they request),
// and the one completion timer a class keeps whatever its size.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::ExactKnobs;
using testing::NetworkHarness;
using testing::TwoDomains;

constexpr int64_t kNic = 1'200'000'000;  // divisible by 1..4 flows
constexpr int64_t kMB = 1'000'000;

TEST(RouteClass, FlowsOfOneRouteEndInOrderAtExactTimes) {
  // Four flows a1 -> a2 of 300, 600, 900, 1200 MB: 300 MB/s each until the
  // first ends at 1 s, then 400 MB/s (300 MB left each: +0.75 s), 600 MB/s
  // (+0.5 s), 1.2 GB/s (+0.25 s).
  NetworkHarness h(TwoDomains(kNic, kNic));
  std::vector<FlowId> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(h.Start(absl::StrCat("f", i), "a1", "a2", (i + 1) * 300 * kMB));
  h.RunUntil(0);
  for (FlowId id : ids) EXPECT_EQ(h.Rate(id), 300 * kMB);
  EXPECT_EQ(h.net().GetFlow(ids[3])->completion_ns, 4'000'000'000);  // at today's rate
  h.RunUntil(1'000'000'000);
  EXPECT_EQ(h.Rate(ids[1]), 400 * kMB);
  EXPECT_EQ(h.net().GetFlow(ids[1])->remaining_bytes, 300 * kMB);
  h.Run();
  EXPECT_EQ(h.outcome("f0").t_ns, 1'000'000'000);
  EXPECT_EQ(h.outcome("f1").t_ns, 1'750'000'000);
  EXPECT_EQ(h.outcome("f2").t_ns, 2'250'000'000);
  EXPECT_EQ(h.outcome("f3").t_ns, 2'500'000'000);
}

TEST(RouteClass, ThousandsOfFlowsOnOneRouteKeepOneTimer) {
  // 3000 flows a1 -> a2 of k * 1 MB (k = 1..3000), started together: the
  // class keeps one completion timer, and flow k ends when the processor-
  // sharing clock reaches k MB, in size order.
  NetworkHarness h(TwoDomains(kNic, kNic));
  constexpr int kFlows = 3000;
  std::vector<std::string> order;
  for (int k = 1; k <= kFlows; ++k) {
    FlowSpec spec{h.H("a1"), h.H("a2"), k * kMB, -1, -1, 0};
    ASSERT_TRUE(h.net()
                    .StartFlow(spec, [&order, &h, k](absl::Status s) {
                      EXPECT_TRUE(s.ok());
                      order.push_back(absl::StrCat(k, "@", h.engine().NowNs()));
                    })
                    .ok());
  }
  h.RunUntil(0);
  EXPECT_EQ(h.engine().pending(), 1);  // one class timer, not 3000
  // Reference: the same processor sharing computed flow by flow.
  std::vector<std::string> expected;
  unsigned __int128 done_work = 0;  // per flow, bytes * 1e9
  TimeNs now = 0;
  for (int k = 1; k <= kFlows; ++k) {
    const int64_t rate = kNic / (kFlows - k + 1);
    const unsigned __int128 left = static_cast<unsigned __int128>(k * kMB) * 1'000'000'000 - done_work;
    const auto wait = static_cast<TimeNs>((left + rate - 1) / rate);
    now += wait;
    done_work += static_cast<unsigned __int128>(rate) * static_cast<unsigned __int128>(wait);
    expected.push_back(absl::StrCat(k, "@", now));
  }
  h.Run();
  EXPECT_EQ(order, expected);
}

TEST(RouteClass, FlowsJoiningLaterAndAnotherClassChangingTheRate) {
  // x1 (600 MB, a1 -> a2) alone at 1.2 GB/s; at 0.25 s x2 (450 MB) joins its
  // class (x1 has 300 MB left): 600 MB/s each. At 0.5 s y1 (600 MB, a1 -> a3,
  // another class on a1's NIC) joins: 400 MB/s each, x1 has 150 MB left and
  // ends at 0.875 s; x2 (150 MB left) and y1 (450 MB left) at 600 MB/s: x2
  // ends at 1.125 s, y1 alone then ends at 1.375 s.
  NetworkHarness h(TwoDomains(kNic, kNic));
  const FlowId x1 = h.Start("x1", "a1", "a2", 600 * kMB);
  h.RunUntil(250'000'000);
  const FlowId x2 = h.Start("x2", "a1", "a2", 450 * kMB);
  h.RunUntil(250'000'000);
  EXPECT_EQ(h.Rate(x1), 600 * kMB);
  EXPECT_EQ(h.net().GetFlow(x1)->remaining_bytes, 300 * kMB);
  EXPECT_EQ(h.net().GetFlow(x2)->remaining_bytes, 450 * kMB);
  h.RunUntil(500'000'000);
  const FlowId y1 = h.Start("y1", "a1", "a3", 600 * kMB);
  h.RunUntil(500'000'000);
  EXPECT_EQ(h.Rate(x2), 400 * kMB);
  EXPECT_EQ(h.Rate(y1), 400 * kMB);
  h.Run();
  EXPECT_EQ(h.outcome("x1").t_ns, 875'000'000);
  EXPECT_EQ(h.outcome("x2").t_ns, 1'125'000'000);
  EXPECT_EQ(h.outcome("y1").t_ns, 1'375'000'000);
}

TEST(RouteClass, FailingFlowsInsideAClass) {
  // Three flows a1 -> a2 of 300, 600, 900 MB at 400 MB/s. At 0.5 s the
  // middle one fails (the others: 100 and 400 MB left, now 600 MB/s): the
  // first ends at 0.5 + 1/6 s. Then the last one alone; at 0.75 s it is
  // failed too, as the class's first (and only) flow: no completion remains.
  NetworkHarness h(TwoDomains(kNic, kNic));
  h.Start("f300", "a1", "a2", 300 * kMB);
  const FlowId f600 = h.Start("f600", "a1", "a2", 600 * kMB);
  const FlowId f900 = h.Start("f900", "a1", "a2", 900 * kMB);
  h.RunUntil(500'000'000);
  ASSERT_TRUE(h.net().FailFlow(f600, absl::AbortedError("gone")));
  EXPECT_EQ(h.Rate(f900), 600 * kMB);
  h.RunUntil(750'000'000);
  EXPECT_EQ(h.outcome("f600").code, absl::StatusCode::kAborted);
  EXPECT_EQ(h.outcome("f600").t_ns, 500'000'000);
  EXPECT_EQ(h.outcome("f300").t_ns, 666'666'667);  // ceil(1e17 / 6e8) after 0.5 s
  EXPECT_EQ(h.Rate(f900), kNic);
  ASSERT_TRUE(h.net().FailFlow(f900, absl::AbortedError("gone")));
  h.Run();
  EXPECT_EQ(h.outcome("f900").code, absl::StatusCode::kAborted);
  EXPECT_EQ(h.net().flows_alive(), 0);
  EXPECT_EQ(h.engine().pending(), 0);
  const NetworkCounters c = h.net().Counters();
  EXPECT_EQ(c.flows_failed, 2u);
  EXPECT_EQ(c.flows_completed, 1u);
}

TEST(RouteClass, EqualFlowsTieInStartOrderBeforeTheirReSolve) {
  // Five equal flows on one route end at the same nanosecond: in the order
  // they were started, all before the one re-solve their ends request.
  NetworkHarness h(TwoDomains(kNic, kNic), ExactKnobs());
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) {
    FlowSpec spec{h.H("a1"), h.H("a2"), 240 * kMB, -1, -1, 0};
    ASSERT_TRUE(h.net().StartFlow(spec, [&order, i](absl::Status) { order.push_back(i); }).ok());
  }
  h.RunUntil(0);
  const uint64_t updates = h.net().rate_updates();
  h.Run();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(h.engine().NowNs(), 1'000'000'000);
  EXPECT_EQ(h.net().rate_updates(), updates + 1);
  EXPECT_EQ(h.net().last_update_flows_recomputed(), 0);
}

}  // namespace
}  // namespace heatsink::sim
