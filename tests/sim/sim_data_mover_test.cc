// Covers sim/sim_data_mover: a CopyRange becomes a flow between the hosts
// owning the two segments and completes with OK at the modelled time; unknown
// segments give NOT_FOUND, a partitioned trunk or a failed segment gives
// UNAVAILABLE, injected failures follow the faults Rng; `done` is never called
// inside StartCopy.
#include "sim/sim_data_mover.h"

#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::kGBps;
using testing::NetworkHarness;
using testing::TwoDomains;

struct MoverHarness {
  explicit MoverHarness(NetworkKnobs knobs = testing::ExactKnobs())
      : net(TwoDomains(kGBps, kGBps), knobs),
        mover(&net.engine(), &net.net(), [this](SegmentId s) -> std::optional<HostId> {
          auto it = owners.find(s.value);
          if (it == owners.end()) return std::nullopt;
          return it->second;
        }) {}

  // Starts a copy through the core interface; records (time, code).
  void Copy(uint64_t src, uint64_t dst, uint64_t bytes) {
    DataMover& dm = mover;
    const size_t index = results.size();
    results.emplace_back(-1, absl::StatusCode::kUnknown);
    dm.StartCopy(CopyRange{SegmentId(src), 0, SegmentId(dst), 0, bytes},
                 [this, index](absl::Status s) {
                   results[index] = {net.engine().NowNs(), s.code()};
                 });
  }

  std::map<uint64_t, HostId> owners = {{1, "a1"}, {2, "a2"}, {3, "b1"}, {4, "a3"}};
  NetworkHarness net;
  SimDataMover mover;
  std::vector<std::pair<TimeNs, absl::StatusCode>> results;
};

TEST(SimDataMover, CompletesCopiesAsNetworkFlows) {
  MoverHarness h;
  h.Copy(1, 2, 500'000'000);  // a1 -> a2
  h.Copy(1, 3, 500'000'000);  // a1 -> b1: shares a1's NIC
  EXPECT_EQ(h.results[0].first, -1);  // nothing inside StartCopy
  EXPECT_EQ(h.mover.copies_in_flight(), 2);
  h.net.Run();
  EXPECT_EQ(h.results[0], std::make_pair(TimeNs{1'000'000'000}, absl::StatusCode::kOk));
  EXPECT_EQ(h.results[1], std::make_pair(TimeNs{1'000'000'000}, absl::StatusCode::kOk));
  EXPECT_EQ(h.mover.copies_succeeded(), 2u);
  EXPECT_EQ(h.mover.bytes_copied(), 1'000'000'000u);
  EXPECT_EQ(h.mover.copies_in_flight(), 0);
  EXPECT_EQ(h.net.net().Counters().bytes_by_distance[static_cast<int>(Distance::kCrossDomain)],
            500'000'000u);
}

TEST(SimDataMover, UnknownSegmentIsNotFoundLater) {
  MoverHarness h;
  h.Copy(1, 99, 10);
  EXPECT_EQ(h.results[0].first, -1);
  h.net.Run();
  EXPECT_EQ(h.results[0].second, absl::StatusCode::kNotFound);
  EXPECT_EQ(h.mover.copies_failed(), 1u);
}

TEST(SimDataMover, PartitionAndSegmentFailureGiveUnavailable) {
  MoverHarness h;
  h.Copy(1, 3, kGBps);  // cross-domain
  h.Copy(2, 4, kGBps);  // a2 -> a3
  h.Copy(4, 1, kGBps);  // a3 -> a1
  h.net.RunUntil(1'000);
  ASSERT_TRUE(h.net.net().PartitionTrunk("A", "B").ok());
  EXPECT_EQ(h.mover.FailCopiesOfSegment(SegmentId(2)), 1);
  EXPECT_EQ(h.mover.FailCopiesOfSegment(SegmentId(2)), 0);  // already failing
  h.Copy(3, 2, 10);  // refused at start while partitioned
  h.net.Run();
  EXPECT_EQ(h.results[0], std::make_pair(TimeNs{1'000}, absl::StatusCode::kUnavailable));
  EXPECT_EQ(h.results[1], std::make_pair(TimeNs{1'000}, absl::StatusCode::kUnavailable));
  EXPECT_EQ(h.results[2].second, absl::StatusCode::kOk);
  EXPECT_EQ(h.results[3], std::make_pair(TimeNs{1'000}, absl::StatusCode::kUnavailable));
  EXPECT_EQ(h.mover.copies_failed(), 3u);
  EXPECT_EQ(h.mover.copies_succeeded(), 1u);
}

std::vector<absl::StatusCode> InjectedRun(uint64_t numerator, uint64_t denominator,
                                          uint64_t seed) {
  MoverHarness h;
  Rng faults(seed);
  h.mover.SetFailureInjection(numerator, denominator, &faults);
  for (int i = 0; i < 200; ++i) h.Copy(1, 2, 1'000);
  h.net.Run();
  std::vector<absl::StatusCode> codes;
  for (const auto& [t, code] : h.results) codes.push_back(code);
  // A doomed copy still moves its bytes.
  EXPECT_EQ(h.net.net().Counters().host_bytes_sent[h.net.H("a1")], 200'000u);
  return codes;
}

TEST(SimDataMover, InjectedFailuresFollowTheFaultsRng) {
  auto count = [](const std::vector<absl::StatusCode>& codes, absl::StatusCode code) {
    return std::count(codes.begin(), codes.end(), code);
  };
  EXPECT_EQ(count(InjectedRun(0, 1, 3), absl::StatusCode::kOk), 200);
  EXPECT_EQ(count(InjectedRun(1, 1, 3), absl::StatusCode::kUnavailable), 200);
  const auto half = InjectedRun(1, 2, 3);
  EXPECT_GT(count(half, absl::StatusCode::kUnavailable), 60);
  EXPECT_GT(count(half, absl::StatusCode::kOk), 60);
  EXPECT_EQ(half, InjectedRun(1, 2, 3));
  EXPECT_NE(half, InjectedRun(1, 2, 4));
}

}  // namespace
}  // namespace heatsink::sim
