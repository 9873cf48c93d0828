// Covers SegmentDirectoryResolver: endpoints come from the listed segment
// descriptors, a miss refreshes the table (so remounts and unmounts are seen),
// refreshes are rate-limited, and a failing lister's error is returned.
#include "runtime/store/segment_directory_resolver.h"

#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace heatsink::runtime {
namespace {

SegmentView Segment(uint64_t id, const std::string& endpoint) {
  SegmentView view;
  view.location.id = SegmentId(id);
  view.location.transport_endpoint = endpoint;
  return view;
}

TEST(SegmentDirectoryResolver, ResolvesRefreshesAndRateLimits) {
  std::vector<SegmentView> listed = {Segment(1, "127.0.0.1:1001"), Segment(2, "")};
  int calls = 0;
  SegmentDirectoryResolver resolver(
      [&]() -> absl::StatusOr<std::vector<SegmentView>> {
        ++calls;
        return listed;
      },
      /*refresh_interval_ms=*/50);
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

  // Segment 1 moved and segment 3 appeared: the next due refresh sees both.
  listed = {Segment(1, "127.0.0.1:2001"), Segment(3, "127.0.0.1:3001")};
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  EXPECT_EQ(*resolver.Resolve(SegmentId(3)), "127.0.0.1:3001");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(*resolver.Resolve(SegmentId(1)), "127.0.0.1:2001");
  EXPECT_EQ(resolver.refreshes(), 2);
}

TEST(SegmentDirectoryResolver, ListerErrorsAreReturned) {
  SegmentDirectoryResolver resolver(
      []() -> absl::StatusOr<std::vector<SegmentView>> {
        return absl::UnavailableError("master down");
      },
      0);
  EXPECT_EQ(resolver.Resolve(SegmentId(1)).status(), absl::UnavailableError("master down"));
}

}  // namespace
}  // namespace heatsink::runtime
