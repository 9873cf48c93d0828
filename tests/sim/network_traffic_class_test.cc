// Covers the network's traffic classes (sim/network.h, "Traffic classes")
// against hand-computed rates and times: under strict priority a background
// flow gets only what foreground flows leave (1 B/s while they fill the
// resource) and speeds up when they end; weighted sharing gives a background
// flow `background_weight` of a foreground flow's share; equal sharing is
// the model without classes; with no background flow the three give the
// same outcomes; bad knob values are rejected with the knob named.
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::ExactKnobs;
using testing::kGBps;
using testing::NetworkHarness;
using testing::TwoDomains;
constexpr TrafficClass kBg = TrafficClass::kBackground;

NetworkKnobs Sharing(NetworkKnobs::BackgroundSharing mode, double weight = 0.1) {
  NetworkKnobs k = ExactKnobs();
  k.background_sharing = mode;
  k.background_weight = weight;
  return k;
}

TEST(TrafficClass, StrictGivesBackgroundOnlyWhatForegroundLeaves) {
  NetworkHarness h(TwoDomains(kGBps, kGBps), Sharing(NetworkKnobs::BackgroundSharing::kStrict));
  const FlowId bg = h.Start("bg", "a1", "a2", kGBps, 0, kBg);
  const FlowId fg = h.Start("fg", "a1", "a3", kGBps);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(fg), kGBps);  // as if the copy were not there
  EXPECT_EQ(h.Rate(bg), 1);      // the floor every flow keeps
  h.Run();
  EXPECT_EQ(h.outcome("fg").t_ns, 1'000'000'000);
  // 1 byte moved in the first second, then 1e9 - 1 bytes at 1 GB/s.
  EXPECT_EQ(h.outcome("bg").t_ns, 1'999'999'999);
  EXPECT_EQ(h.outcome("bg").code, absl::StatusCode::kOk);
}

TEST(TrafficClass, StrictBackgroundTakesWhatABottleneckedForegroundFlowLeaves) {
  // a1's NIC carries a foreground flow held to 1 GB/s by the trunk and a
  // background flow inside domain A: the copy gets the other 9 GB/s.
  NetworkHarness h(TwoDomains(10 * kGBps, kGBps),
                   Sharing(NetworkKnobs::BackgroundSharing::kStrict));
  const FlowId fg = h.Start("fg", "a1", "b1", kGBps);
  const FlowId bg = h.Start("bg", "a1", "a2", 9 * kGBps, 0, kBg);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(fg), kGBps);
  EXPECT_EQ(h.Rate(bg), 9 * kGBps);
  // Two background flows split what is left, max-min fair between them.
  const FlowId bg2 = h.Start("bg2", "a1", "a3", kGBps, 0, kBg);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(fg), kGBps);
  EXPECT_EQ(h.Rate(bg), 9 * kGBps / 2);
  EXPECT_EQ(h.Rate(bg2), 9 * kGBps / 2);
}

TEST(TrafficClass, WeightedGivesBackgroundItsWeight) {
  NetworkHarness h(TwoDomains(kGBps, kGBps),
                   Sharing(NetworkKnobs::BackgroundSharing::kWeighted, 0.25));
  const FlowId fg = h.Start("fg", "a1", "a2", 800'000'000);
  const FlowId bg = h.Start("bg", "a1", "a3", kGBps, 0, kBg);
  h.RunUntil(0);
  // Units 2^20 and 2^18: 1e9 * 4/5 and 1e9 * 1/5.
  EXPECT_EQ(h.Rate(fg), 800'000'000);
  EXPECT_EQ(h.Rate(bg), 200'000'000);
  h.Run();
  EXPECT_EQ(h.outcome("fg").t_ns, 1'000'000'000);
  // 2e8 bytes in the first second, 8e8 at 1 GB/s after.
  EXPECT_EQ(h.outcome("bg").t_ns, 1'800'000'000);
}

TEST(TrafficClass, EqualSharingTreatsBackgroundAsForeground) {
  NetworkHarness h(TwoDomains(kGBps, kGBps), Sharing(NetworkKnobs::BackgroundSharing::kEqual));
  const FlowId fg = h.Start("fg", "a1", "a2", kGBps);
  const FlowId bg = h.Start("bg", "a1", "a3", kGBps, 0, kBg);
  h.RunUntil(0);
  EXPECT_EQ(h.Rate(fg), kGBps / 2);
  EXPECT_EQ(h.Rate(bg), kGBps / 2);
}

TEST(TrafficClass, WithoutBackgroundFlowsEveryModeGivesTheSameOutcomes) {
  // Flows of several routes starting at different times over a trunk with
  // 3:1 oversubscription: rates that do not divide evenly.
  std::map<std::string, std::pair<TimeNs, int64_t>> first;
  for (auto mode :
       {NetworkKnobs::BackgroundSharing::kEqual, NetworkKnobs::BackgroundSharing::kStrict,
        NetworkKnobs::BackgroundSharing::kWeighted}) {
    NetworkHarness h(TwoDomains(3 * kGBps, 7 * kGBps, 0, 300), Sharing(mode, 0.3));
    const char* src[] = {"a1", "a2", "a3", "a4", "b1", "b2"};
    const char* dst[] = {"b1", "b2", "a1", "a2", "a3", "a4"};
    std::map<std::string, FlowId> ids;
    for (int i = 0; i < 24; ++i) {
      const std::string label = absl::StrCat("f", i);
      h.RunUntil(i * 7'000'003);
      ids[label] =
          h.Start(label, src[i % 6], dst[(i * 5 + 1) % 6 == i % 6 ? (i + 1) % 6 : (i * 5 + 1) % 6],
                  100'000'000 + i * 12'345'677);
    }
    h.Run();
    std::map<std::string, std::pair<TimeNs, int64_t>> got;
    for (const auto& [label, o] : h.outcomes()) got[label] = {o.t_ns, static_cast<int64_t>(o.code)};
    ASSERT_EQ(got.size(), 24u);
    if (first.empty()) {
      first = got;
    } else {
      EXPECT_EQ(got, first);
    }
  }
}

TEST(TrafficClass, RejectsBadKnobsNamingThem) {
  for (double w : {0.0, -0.5, 1.5}) {
    NetworkKnobs k;
    k.background_weight = w;
    const absl::Status st = k.Validate();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << w;
    EXPECT_NE(st.message().find("background_weight"), absl::string_view::npos) << st;
  }
  NetworkKnobs k;
  const absl::Status st = NetworkKnobs::Registry().Set(k, "background_sharing", "fast");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("background_sharing"), absl::string_view::npos) << st;
  ASSERT_TRUE(NetworkKnobs::Registry().Set(k, "background_sharing", "weighted").ok());
  EXPECT_EQ(k.background_sharing, NetworkKnobs::BackgroundSharing::kWeighted);
  EXPECT_EQ(NetworkKnobs::Registry().Find("background_sharing")->get(k), "weighted");
}

}  // namespace
}  // namespace heatsink::sim
