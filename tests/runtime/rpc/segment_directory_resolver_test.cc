// Covers SegmentDirectoryResolver: endpoints come from the listed segment
// descriptors, a miss refreshes the table (so remounts and unmounts are seen),
// refreshes are rate-limited on the Env clock to the nanosecond, a failing
// lister's error is returned (and rate-limited too), and a forgotten endpoint
// (it refused a connection) is looked up afresh, so a segment remounted on
// another port is found. A ManualClock moves time: nothing sleeps.
#include "runtime/store/segment_directory_resolver.h"

#include <string>
#include <vector>

#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "gtest/gtest.h"

namespace heatsink::runtime {
namespace {

constexpr int64_t kIntervalMs = 50;

SegmentView Segment(uint64_t id, const std::string& endpoint) {
  SegmentView view;
  view.location.id = SegmentId(id);
  view.location.transport_endpoint = endpoint;
  return view;
}

// A resolver over `listed` (read at each refresh) that counts its refreshes.
SegmentDirectoryResolver ListingResolver(ManualClock& clock, const std::vector<SegmentView>& listed,
                                         int& calls) {
  return SegmentDirectoryResolver(
      &clock,
      [&listed, &calls]() -> absl::StatusOr<std::vector<SegmentView>> {
        ++calls;
        return listed;
      },
      kIntervalMs);
}

TEST(SegmentDirectoryResolver, ResolvesRefreshesAndRateLimits) {
  ManualClock clock(SecToNs(7));
  std::vector<SegmentView> listed = {Segment(1, "127.0.0.1:1001"), Segment(2, "")};
  int calls = 0;
  SegmentDirectoryResolver resolver = ListingResolver(clock, listed, calls);
  ASSERT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1001");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1001");
  EXPECT_EQ(calls, 1);  // cached
  // Listed without an endpoint: not resolvable. Within the interval a miss
  // does not ask again.
  EXPECT_EQ(resolver.Resolve(SegmentId(2)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(resolver.Resolve(SegmentId(3)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);

  // Segment 1 moved and segment 3 appeared, but one nanosecond before the
  // interval ends the resolver still does not ask: segment 3 stays unknown.
  listed = {Segment(1, "127.0.0.1:2001"), Segment(3, "127.0.0.1:3001")};
  clock.AdvanceBy(MsToNs(kIntervalMs) - 1);
  EXPECT_EQ(resolver.Resolve(SegmentId(3)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);
  // At the end of the interval the next miss refreshes and sees both.
  clock.AdvanceBy(1);
  EXPECT_EQ(*resolver.Resolve(SegmentId(3)), "127.0.0.1:3001");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:2001");
  EXPECT_EQ(resolver.refreshes(), 2);

  // A refresh replaces the whole table: segment 1, unmounted, is gone after
  // the next refresh (its old endpoint is not kept).
  listed = {Segment(3, "127.0.0.1:3001")};
  clock.AdvanceBy(MsToNs(kIntervalMs));
  EXPECT_EQ(resolver.Resolve(SegmentId(4)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*resolver.Resolve(SegmentId(3)), "127.0.0.1:3001");
  EXPECT_EQ(calls, 3);
}

TEST(SegmentDirectoryResolver, AForgottenEndpointIsLookedUpAfresh) {
  ManualClock clock(SecToNs(7));
  std::vector<SegmentView> listed = {Segment(1, "127.0.0.1:1001"), Segment(2, "127.0.0.1:2001")};
  int calls = 0;
  SegmentDirectoryResolver resolver = ListingResolver(clock, listed, calls);
  ASSERT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1001");
  // Segment 1's store restarted under the same client id on another port.
  listed = {Segment(1, "127.0.0.1:1002"), Segment(2, "127.0.0.1:2001")};
  clock.AdvanceBy(MsToNs(kIntervalMs));
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1001") << "cached: not known stale yet";
  EXPECT_EQ(calls, 1);
  // Forgetting another endpoint than the cached one changes nothing.
  resolver.Forget(SegmentId(1), "127.0.0.1:9999");
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1001");
  EXPECT_EQ(calls, 1);
  resolver.Forget(SegmentId(1), "127.0.0.1:1001");
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:1002");
  EXPECT_EQ(calls, 2);
  // Within the interval a forgotten segment is not asked for again.
  resolver.Forget(SegmentId(1), "127.0.0.1:1002");
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(*resolver.Resolve(SegmentId(2)), "127.0.0.1:2001");
}

TEST(SegmentDirectoryResolver, ListerErrorsAreReturnedAndRateLimited) {
  ManualClock clock;
  int calls = 0;
  SegmentDirectoryResolver resolver(
      &clock,
      [&]() -> absl::StatusOr<std::vector<SegmentView>> {
        ++calls;
        return absl::UnavailableError("master down");
      },
      kIntervalMs);
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status(), absl::UnavailableError("master down"));
  EXPECT_EQ(calls, 1);
  // A failed refresh counts: the master is not asked again within the
  // interval.
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(calls, 1);
  clock.AdvanceBy(MsToNs(kIntervalMs));
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status(), absl::UnavailableError("master down"));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace heatsink::runtime
