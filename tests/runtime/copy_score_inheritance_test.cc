// Covers score inheritance over the real data plane: a replica copy between
// two stores whose segments are head pools (SegmentHeadPool, logical nodes)
// carries the source's decayed chunk scores in its WRITE (TCP) or RMA_COMMIT
// (UCX over loopback TCP), and the target raises every chunk the copy landed
// in to the largest source score of the bytes now in it -- with chunks of
// different sizes on the two stores and an unaligned range. A source without
// a head pool carries nothing; a lower inherited score never lowers the
// target's; a target with inheritance off keeps its scores. Also the wire
// form of the scores: the plain range when there are none, and the rules a
// target checks before it takes any.
#include <stdlib.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/env/steady_clock.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/numa/segment_head_pool.h"
#include "runtime/transport/data_plane.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/wire.h"
#include "tests/runtime/transport_test_util.h"
#include "tests/runtime_numa/tiering_fixture.h"

namespace heatsink::runtime {
namespace {

using ::heatsink::runtime::testing::Checksum;
using ::heatsink::runtime::testing::CopyAndWait;
using ::heatsink::runtime::testing::FillSegment;
using ::heatsink::runtime::testing::SteadyEnv;

constexpr SegmentId kSource(1 * 256 + 1);
constexpr SegmentId kTarget(2 * 256 + 1);
constexpr uint64_t kSegmentBytes = 8 * kMiB;

// UCX over loopback TCP, as the UCX mover tests run it.
class UcxLoopbackEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("UCX_TLS", "tcp,self", /*overwrite=*/0);
    setenv("UCX_NET_DEVICES", "lo", 0);
  }
};
const auto* const kUcxEnvironment = ::testing::AddGlobalTestEnvironment(new UcxLoopbackEnvironment);

// One store: its segment (a head pool of --ram-head `ram_head_bytes`, 4 MiB
// preferred + 4 MiB foreign on logical nodes, or plain heap memory with
// ram_head_bytes 0) and its data plane.
struct Store {
  Store(SegmentId id, uint64_t ram_head_bytes, const std::string& transport,
        EndpointResolver* resolver, bool inherit_copy_score = true) {
    SegmentAllocator* allocator = &plain;
    if (ram_head_bytes > 0) {
      SegmentHeadPoolOptions options;
      options.knobs.memory_bytes = 4 * kMiB;
      options.knobs.sub_memory_bytes = {4 * kMiB};
      options.knobs.ram_head_bytes = ram_head_bytes;
      options.placement.serving_node = 0;
      options.placement.regions = {
          RegionPlacement{.region = 0, .node = 0, .bytes = 4 * kMiB, .preferred = true},
          RegionPlacement{.region = 1, .node = 1, .bytes = 4 * kMiB, .preferred = false}};
      options.segment_ids = {id};
      options.inherit_copy_score = inherit_copy_score;
      absl::StatusOr<std::unique_ptr<SegmentHeadPool>> created =
          SegmentHeadPool::Create(&env.env, options);
      EXPECT_TRUE(created.ok()) << created.status();
      if (!created.ok()) return;
      pool = *std::move(created);
      allocator = pool.get();
    }
    memory = std::make_unique<SegmentMemory>(allocator, SegmentMemoryKnobs{});
    EXPECT_TRUE(memory->Create(id, kSegmentBytes).ok());
    if (pool != nullptr) {
      memory->set_read_observer(pool.get());
      memory->set_score_keeper(pool.get());
    }
    DataPlaneOptions plane_options;
    plane_options.transport = transport;
    plane_options.ucx_put_chunk_bytes = 256 << 10;
    absl::StatusOr<std::unique_ptr<DataPlane>> started =
        MakeDataPlane(env.env.clock, plane_options, memory.get(), resolver);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) plane = *std::move(started);
  }
  ~Store() {
    if (plane != nullptr) plane->Shutdown();
  }

  double Score(SegmentId id, uint64_t chunk) const {
    absl::StatusOr<double> s = pool->manager().Score(SegmentHeadPool::ChunkKey(id, chunk));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : -1.0;
  }
  // `times` served reads of chunk `chunk` (one logical read each).
  void Read(SegmentId id, uint64_t chunk, int times) {
    const uint64_t head = pool->options().knobs.ram_head_bytes;
    for (int i = 0; i < times; ++i) memory->NoteRead(id, chunk * head, head);
  }

  SteadyEnv env;
  AlignedSegmentAllocator plain;
  std::unique_ptr<SegmentHeadPool> pool;
  std::unique_ptr<SegmentMemory> memory;
  std::unique_ptr<DataPlane> plane;
};

class CopyScoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Store> MakeStore(SegmentId id, uint64_t ram_head_bytes,
                                   bool inherit_copy_score = true) {
    auto store =
        std::make_unique<Store>(id, ram_head_bytes, GetParam(), &resolver_, inherit_copy_score);
    if (store->plane != nullptr) {
      EXPECT_TRUE(resolver_.Set(id, store->plane->endpoint()).ok());
    }
    return store;
  }

  StaticEndpointResolver resolver_;
};

// The source has 256 KiB chunks, the target 512 KiB ones. The copy moves
// source chunks 4, 5 and 6 (bytes [1 MiB, 1.75 MiB)) to target bytes
// [1.5 MiB, 2.25 MiB): target chunk 3 holds source chunks 4 and 5, target
// chunk 4 the whole of source chunk 6 in its first half.
TEST_P(CopyScoreTest, TargetChunksTakeTheLargestSourceScoreOfTheirBytes) {
  std::unique_ptr<Store> a = MakeStore(kSource, 256 << 10);
  std::unique_ptr<Store> b = MakeStore(kTarget, 512 << 10);
  ASSERT_NE(a->plane, nullptr);
  ASSERT_NE(b->plane, nullptr);
  FillSegment(*a->memory, kSource, 5);
  a->Read(kSource, 4, 3);
  a->Read(kSource, 5, 1);
  a->Read(kSource, 6, 5);
  a->Read(kSource, 7, 11);  // outside the copy
  ASSERT_EQ(a->Score(kSource, 4), 3.0);

  const CopyRange range{kSource, 1 * kMiB, kTarget, 3 * (512 << 10), 3 * (256 << 10)};
  ASSERT_TRUE(CopyAndWait(a->plane->mover(), range).ok());
  EXPECT_EQ(Checksum(*b->memory, kTarget, range.target_offset, range.size_bytes),
            Checksum(*a->memory, kSource, range.source_offset, range.size_bytes));
  EXPECT_EQ(b->Score(kTarget, 2), 0.0);
  EXPECT_EQ(b->Score(kTarget, 3), 3.0);  // max(3, 1)
  EXPECT_EQ(b->Score(kTarget, 4), 5.0);
  EXPECT_EQ(b->Score(kTarget, 5), 0.0);
  EXPECT_EQ(b->plane->server().scored_copies(), 1u);
  EXPECT_EQ(a->pool->stats().copies_scored_out, 1);
  EXPECT_EQ(b->pool->stats().copies_scored_in, 1);
  EXPECT_EQ(b->pool->stats().chunk_scores_raised, 2);
  // Inheritance counts no read: the target's reads are untouched.
  EXPECT_EQ(b->pool->stats().chunk_reads, 0);
  // The source keeps its scores.
  EXPECT_EQ(a->Score(kSource, 6), 5.0);
  EXPECT_TRUE(b->pool->manager().CheckInvariants().ok());
}

// An unaligned range: a few bytes of source chunk 1 and of chunk 2 land in
// the middle of target chunk 0; only that chunk is raised, to the larger.
TEST_P(CopyScoreTest, AnUnalignedRangeRaisesTheChunksItTouches) {
  std::unique_ptr<Store> a = MakeStore(kSource, 256 << 10);
  std::unique_ptr<Store> b = MakeStore(kTarget, 256 << 10);
  ASSERT_NE(b->plane, nullptr);
  a->Read(kSource, 1, 2);
  a->Read(kSource, 2, 4);
  const uint64_t head = 256 << 10;
  ASSERT_TRUE(
      CopyAndWait(a->plane->mover(), CopyRange{kSource, 2 * head - 100, kTarget, 1000, 300}).ok());
  EXPECT_EQ(b->Score(kTarget, 0), 4.0);
  EXPECT_EQ(b->Score(kTarget, 1), 0.0);
}

TEST_P(CopyScoreTest, ASourceWithoutAHeadPoolCarriesNothing) {
  std::unique_ptr<Store> a = MakeStore(kSource, 0);
  std::unique_ptr<Store> b = MakeStore(kTarget, 256 << 10);
  ASSERT_NE(a->plane, nullptr);
  ASSERT_NE(b->plane, nullptr);
  b->Read(kTarget, 1, 2);
  ASSERT_TRUE(CopyAndWait(a->plane->mover(), CopyRange{kSource, 0, kTarget, 0, 1 * kMiB}).ok());
  for (uint64_t chunk = 0; chunk < 4; ++chunk) {
    EXPECT_EQ(b->Score(kTarget, chunk), chunk == 1 ? 2.0 : 0.0) << chunk;
  }
  EXPECT_EQ(b->plane->server().scored_copies(), 0u);
  EXPECT_EQ(b->pool->stats().copies_scored_in, 0);
}

TEST_P(CopyScoreTest, ALowerInheritedScoreNeverLowersTheTarget) {
  std::unique_ptr<Store> a = MakeStore(kSource, 256 << 10);
  std::unique_ptr<Store> b = MakeStore(kTarget, 256 << 10);
  ASSERT_NE(b->plane, nullptr);
  a->Read(kSource, 0, 2);
  a->Read(kSource, 1, 2);
  b->Read(kTarget, 0, 9);
  b->Read(kTarget, 1, 1);
  ASSERT_TRUE(
      CopyAndWait(a->plane->mover(), CopyRange{kSource, 0, kTarget, 0, 2 * (256 << 10)}).ok());
  EXPECT_EQ(b->Score(kTarget, 0), 9.0);
  EXPECT_EQ(b->Score(kTarget, 1), 2.0);
}

TEST_P(CopyScoreTest, ATargetWithInheritanceOffKeepsItsScores) {
  std::unique_ptr<Store> a = MakeStore(kSource, 256 << 10);
  std::unique_ptr<Store> b = MakeStore(kTarget, 256 << 10, /*inherit_copy_score=*/false);
  ASSERT_NE(b->plane, nullptr);
  a->Read(kSource, 0, 6);
  ASSERT_TRUE(CopyAndWait(a->plane->mover(), CopyRange{kSource, 0, kTarget, 0, 256 << 10}).ok());
  EXPECT_EQ(b->Score(kTarget, 0), 0.0);
  EXPECT_EQ(b->pool->stats().copies_scores_ignored, 1);
  EXPECT_EQ(b->pool->stats().copies_scored_in, 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, CopyScoreTest, ::testing::Values("tcp", "ucx"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(CopyScoreWire, WithoutScoresTheRangeIsUnchanged) {
  const wire::RangeRequest range{SegmentId(5), 6, 7};
  EXPECT_EQ(wire::EncodeScoredRange(range, {}), wire::EncodeRange(range));
  absl::StatusOr<wire::ScoredRange> decoded = wire::DecodeScoredRange(wire::EncodeRange(range));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->range.segment, SegmentId(5));
  EXPECT_TRUE(decoded->scores.empty());
}

TEST(CopyScoreWire, ScoresRoundTripExactly) {
  const std::vector<ScorePiece> scores = {{3, 0.1}, {1, 0.0}, {96, 1e300}};
  absl::StatusOr<wire::ScoredRange> decoded =
      wire::DecodeScoredRange(wire::EncodeScoredRange({SegmentId(5), 1000, 100}, scores));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->range.offset, 1000u);
  EXPECT_EQ(decoded->range.size, 100u);
  EXPECT_EQ(decoded->scores, scores);
  // A plain DecodeRange still refuses any trailer.
  EXPECT_FALSE(wire::DecodeRange(wire::EncodeScoredRange({SegmentId(5), 1000, 100}, scores)).ok());
}

TEST(CopyScoreWire, MalformedScoresAreRejected) {
  const wire::RangeRequest range{SegmentId(5), 0, 10};
  auto rejected = [&](const std::vector<ScorePiece>& scores) {
    return wire::DecodeScoredRange(wire::EncodeScoredRange(range, scores)).status().code() ==
           absl::StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(rejected({{4, 1.0}}));             // covers too little
  EXPECT_TRUE(rejected({{4, 1.0}, {7, 1.0}}));   // too much
  EXPECT_TRUE(rejected({{0, 1.0}, {10, 1.0}}));  // an empty piece
  EXPECT_TRUE(rejected({{10, -1.0}}));           // negative
  EXPECT_TRUE(rejected({{10, std::nan("")}}));   // not a number
  EXPECT_TRUE(rejected({{10, std::numeric_limits<double>::infinity()}}));
  EXPECT_FALSE(rejected({{10, 0.0}}));
  // A count of zero, too many pieces, or a truncated trailer.
  std::string zero = wire::EncodeRange(range);
  zero.append(4, '\0');
  EXPECT_FALSE(wire::DecodeScoredRange(zero).ok());
  std::string many = wire::EncodeRange({SegmentId(5), 0, kCopyScorePiecesMax + 1});
  const uint32_t count = kCopyScorePiecesMax + 1;
  for (int i = 0; i < 4; ++i) many.push_back(static_cast<char>(count >> (8 * i)));
  for (uint32_t i = 0; i < count; ++i) {
    for (uint64_t v : {uint64_t{1}, std::bit_cast<uint64_t>(1.0)}) {
      for (int b = 0; b < 8; ++b) many.push_back(static_cast<char>(v >> (8 * b)));
    }
  }
  EXPECT_FALSE(wire::DecodeScoredRange(many).ok());
  std::string truncated = wire::EncodeScoredRange(range, {{10, 1.0}});
  truncated.pop_back();
  EXPECT_FALSE(wire::DecodeScoredRange(truncated).ok());
}

// Only WRITE and RMA_COMMIT may carry scores: a READ with them is refused.
TEST(CopyScoreWire, AServerRefusesScoresOnARead) {
  SteadyClock clock;
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(kTarget, 1 << 20).ok());
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&clock, &memory, TcpTransportKnobs{});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<Socket> socket = ConnectTcp((*server)->endpoint(), 5000, 5000);
  ASSERT_TRUE(socket.ok()) << socket.status();
  ASSERT_TRUE(wire::SendFrame(*socket, wire::FrameType::kRead,
                              wire::EncodeScoredRange({kTarget, 0, 16}, {{16, 1.0}}))
                  .ok());
  EXPECT_EQ(wire::RecvStatus(*socket, nullptr).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*server)->reads_completed(), 0u);
}

}  // namespace
}  // namespace heatsink::runtime
