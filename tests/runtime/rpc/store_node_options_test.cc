// Covers StoreNodeOptions::Validate and the store's segment ids: the UCX
// mover's chunk size, a segment NUMA node (and mlock without one), the
// segment ids from the client id or a first id given, and the head pool's
// shape against the segments.
#include <cstdint>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/store/store_node.h"

namespace heatsink::runtime {
namespace {

TEST(StoreNodeOptionsTest, UcxOptionsAreValidated) {
  StoreNodeOptions options;
  options.client_id = ClientId(1);
  options.data_mover = StoreDataMover::kUcx;
  options.ucx_put_chunk_bytes = 0;
  const absl::Status st = options.Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  EXPECT_EQ(StoreDataMoverName(StoreDataMover::kUcx), "ucx");
  EXPECT_EQ(StoreDataMoverName(StoreDataMover::kTcp), "tcp");
}

TEST(StoreNodeOptionsTest, SegmentNodeOptionsAreValidated) {
  StoreNodeOptions options;
  options.client_id = ClientId(1);
  EXPECT_TRUE(options.Validate().ok());
  options.segment_node = -2;
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
  options.segment_node = MaxPossibleNode() + 1;
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
  options.segment_node = -1;
  options.segment_memory.mlock = true;
  const absl::Status st = options.Validate();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
  options.segment_node = 0;
  EXPECT_TRUE(options.Validate().ok());
}

TEST(StoreNodeOptionsTest, SegmentIdsComeFromTheClientIdOrTheFirstIdGiven) {
  StoreNodeOptions options;
  options.client_id = ClientId(3);
  options.segments = 2;
  EXPECT_EQ(options.SegmentIdAt(0), SegmentId(3 * 256 + 1));
  EXPECT_EQ(options.SegmentIdAt(1), StoreSegmentId(ClientId(3), 1));
  options.first_segment_id = 40;
  EXPECT_TRUE(options.Validate().ok());
  EXPECT_EQ(options.SegmentIdAt(0), SegmentId(40));
  EXPECT_EQ(options.SegmentIdAt(1), SegmentId(41));
  options.first_segment_id = (uint64_t{1} << 62) + 1;
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StoreNodeOptionsTest, HeadPoolOptionsAreValidated) {
  StoreNodeOptions options;
  options.client_id = ClientId(1);
  options.segments = 2;
  options.segment_bytes = 4 << 20;
  SegmentHeadPoolOptions pool;
  pool.knobs.memory_bytes = 8 << 20;
  RegionPlacement region;
  region.bytes = 8 << 20;
  region.preferred = true;
  pool.placement.regions = {region};
  options.head_pool = pool;
  EXPECT_TRUE(options.Validate().ok()) << options.Validate();
  // The pool places the segments; a segment node beside it is refused.
  options.segment_node = 0;
  EXPECT_NE(options.Validate().message().find("give one"), absl::string_view::npos);
  options.segment_node = -1;
  // Two segments of 4 MiB are the 8 MiB pool; 3 MiB segments are not.
  options.segment_bytes = 3 << 20;
  EXPECT_NE(options.Validate().message().find("not 3145728"), absl::string_view::npos)
      << options.Validate();
  options.segment_bytes = 4 << 20;
  options.segments = 3;
  EXPECT_NE(options.Validate().message().find("do not split into 3 segments"),
            absl::string_view::npos)
      << options.Validate();
}

}  // namespace
}  // namespace heatsink::runtime
