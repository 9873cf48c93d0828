// Covers SegmentHeadPool, the store's segments as the ADR-0019 head pool:
//   - the segments are handed out in order and their chunks are committed as
//     fixed heads region by region (the first --memory bytes on the serving
//     node, then each foreign region), and the options are checked with
//     messages naming the flag;
//   - a served read raises the score of every chunk it covers, once, and
//     counts its bytes local or remote by the node of their block, before
//     the first exchange and since the last;
//   - copies carry chunk scores out (merged, coarser above the piece limit)
//     and raise the chunks they land in, never lowering one;
//   - an exchange keeps every segment address: the bytes a reader finds at an
//     address never change, while the core (and, with real binding, the
//     kernel) now has the hot block on the serving node;
//   - on real memory: the blocks are bound (node 0 here; every node of a
//     multi-node QEMU guest of tools/numa-qemu-test.sh), and the promotion
//     threads move the hot block's pages onto the serving node.
#include "runtime/numa/segment_head_pool.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/numa/topology.h"
#include "tests/runtime_numa/machine_nodes.h"
#include "tests/runtime_numa/tiering_fixture.h"

namespace heatsink::runtime {
namespace {

using testing::BlocksPerRegion;
using testing::ExpectAllOn;
using testing::MemoryNodes;
using testing::SteadyEnv;

constexpr SegmentId kSeg0(7 * 256 + 1);
constexpr SegmentId kSeg1(7 * 256 + 2);

// Regions of `sizes` on `nodes` (logical unless bound), region 0 preferred.
NumaPlacement Placement(const std::vector<uint64_t>& sizes, const std::vector<int>& nodes) {
  NumaPlacement placement;
  placement.serving_node = nodes[0];
  for (size_t i = 0; i < sizes.size(); ++i) {
    RegionPlacement r;
    r.region = static_cast<int>(i);
    r.node = nodes[i];
    r.bytes = sizes[i];
    r.preferred = i == 0;
    placement.regions.push_back(r);
  }
  return placement;
}

// 2 MiB blocks of 256 KiB heads: a 4 MiB preferred region and two 2 MiB
// foreign ones, as two 4 MiB segments.
SegmentHeadPoolOptions LogicalOptions() {
  SegmentHeadPoolOptions options;
  options.knobs.memory_bytes = 4 * kMiB;
  options.knobs.sub_memory_bytes = {2 * kMiB, 2 * kMiB};
  options.knobs.no_inversion_wait_ms = 20;
  options.placement = Placement({4 * kMiB, 2 * kMiB, 2 * kMiB}, {0, 1, 2});
  options.segment_ids = {kSeg0, kSeg1};
  return options;
}

// Fills every segment byte with a pattern of its segment and offset.
void FillSegments(std::vector<std::unique_ptr<SegmentBuffer>>& buffers) {
  for (size_t s = 0; s < buffers.size(); ++s) {
    for (uint64_t off = 0; off < buffers[s]->size_bytes(); off += 8) {
      const uint64_t v = s << 40 | off;
      std::memcpy(buffers[s]->data() + off, &v, sizeof(v));
    }
  }
}

void ExpectSegmentsIntact(std::vector<std::unique_ptr<SegmentBuffer>>& buffers) {
  for (size_t s = 0; s < buffers.size(); ++s) {
    for (uint64_t off = 0; off < buffers[s]->size_bytes(); off += 8) {
      uint64_t v = 0;
      std::memcpy(&v, buffers[s]->data() + off, sizeof(v));
      ASSERT_EQ(v, s << 40 | off) << "segment " << s << " offset " << off;
    }
  }
}

std::vector<std::unique_ptr<SegmentBuffer>> AllocateAll(SegmentHeadPool& pool) {
  std::vector<std::unique_ptr<SegmentBuffer>> buffers;
  for (size_t i = 0; i < pool.options().segment_ids.size(); ++i) {
    absl::StatusOr<std::unique_ptr<SegmentBuffer>> b = pool.Allocate(pool.segment_bytes());
    EXPECT_TRUE(b.ok()) << b.status();
    if (b.ok()) buffers.push_back(*std::move(b));
  }
  return buffers;
}

TEST(SegmentHeadPool, ChunksFillTheSegmentsRegionByRegion) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->segment_bytes(), 4 * kMiB);
  EXPECT_EQ((*pool)->manager().key_count(), 32);  // 8 MiB of 256 KiB chunks
  EXPECT_TRUE((*pool)->manager().CheckInvariants().ok());

  EXPECT_EQ((*pool)->Allocate(2 * kMiB).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<std::unique_ptr<SegmentBuffer>> buffers = AllocateAll(**pool);
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[1]->data(), buffers[0]->data() + 4 * kMiB);
  EXPECT_EQ((*pool)->Allocate(4 * kMiB).status().code(), absl::StatusCode::kResourceExhausted);

  // Segment 0 is the preferred region; segment 1 is the two foreign ones.
  for (uint64_t off : {uint64_t{0}, 2 * kMiB - 1, 2 * kMiB, 4 * kMiB - 1}) {
    EXPECT_EQ(*(*pool)->ChunkNode(kSeg0, off), 0) << off;
  }
  EXPECT_EQ(*(*pool)->ChunkNode(kSeg1, 0), 1);
  EXPECT_EQ(*(*pool)->ChunkNode(kSeg1, 2 * kMiB - 1), 1);
  EXPECT_EQ(*(*pool)->ChunkNode(kSeg1, 2 * kMiB), 2);
  EXPECT_EQ((*pool)->ChunkNode(SegmentId(99), 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*pool)->ChunkNode(kSeg0, 4 * kMiB).status().code(), absl::StatusCode::kOutOfRange);
  // Logical nodes: nothing is bound, so there is nothing to verify.
  EXPECT_EQ((*pool)->VerifyPlacement().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(SegmentHeadPool, ServedReadsRaiseTheScoresOfTheChunksTheyCover) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = p.options().knobs.ram_head_bytes;
  auto score = [&](SegmentId id, uint64_t chunk) {
    absl::StatusOr<double> s = p.manager().Score(SegmentHeadPool::ChunkKey(id, chunk));
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *s : -1.0;
  };
  // Straddles chunks 0 and 1: each gets the increment once.
  p.OnSegmentRead(kSeg0, head - 100, 200);
  EXPECT_EQ(score(kSeg0, 0), 1.0);
  EXPECT_EQ(score(kSeg0, 1), 1.0);
  EXPECT_EQ(score(kSeg0, 2), 0.0);
  // Exactly one chunk, three times.
  for (int i = 0; i < 3; ++i) p.OnSegmentRead(kSeg1, 5 * head, head);
  EXPECT_EQ(score(kSeg1, 4), 0.0);
  EXPECT_EQ(score(kSeg1, 5), 3.0);
  EXPECT_EQ(score(kSeg1, 6), 0.0);
  // A whole segment: every chunk once.
  p.OnSegmentRead(kSeg1, 0, p.segment_bytes());
  EXPECT_EQ(score(kSeg1, 0), 1.0);
  EXPECT_EQ(score(kSeg1, 5), 4.0);
  EXPECT_EQ(score(kSeg1, 15), 1.0);
  // Unknown segments, empty and out-of-range reads count nothing.
  p.OnSegmentRead(SegmentId(99), 0, head);
  p.OnSegmentRead(kSeg0, 0, 0);
  p.OnSegmentRead(kSeg0, p.segment_bytes() - 1, 2);
  const SegmentHeadPoolStats stats = p.stats();
  EXPECT_EQ(stats.reads, 5);
  EXPECT_EQ(stats.chunk_reads, 2 + 3 + 16);
  EXPECT_EQ(stats.reads_ignored, 3);
  // Segment 0 is local, segment 1 foreign.
  const TieringStats tiering = p.manager().stats();
  EXPECT_EQ(tiering.reads_local, 2);
  EXPECT_EQ(tiering.reads_foreign, 3 + 16);
}

TEST(SegmentHeadPool, ExchangeKeepsEveryAddressAndMovesTheHotBlockHome) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  std::vector<std::unique_ptr<SegmentBuffer>> buffers = AllocateAll(p);
  FillSegments(buffers);
  // The last foreign block (segment 1, second half) becomes the hottest;
  // every preferred block has been read once per chunk.
  p.OnSegmentRead(kSeg0, 0, p.segment_bytes());
  for (int i = 0; i < 5; ++i) p.OnSegmentRead(kSeg1, 2 * kMiB, 2 * kMiB);
  const PromotionResult result = p.manager().PromotionStep();
  ASSERT_EQ(result.outcome, PromotionOutcome::kExchanged) << PromotionOutcomeName(result.outcome);
  EXPECT_EQ(*p.ChunkNode(kSeg1, 2 * kMiB), 0);
  EXPECT_EQ(*p.ChunkNode(kSeg1, 4 * kMiB - 1), 0);
  EXPECT_EQ(*p.ChunkNode(kSeg1, 0), 1);  // untouched
  int moved_out = 0;
  for (uint64_t off = 0; off < 4 * kMiB; off += 2 * kMiB) {
    if (*p.ChunkNode(kSeg0, off) == 2) ++moved_out;
  }
  EXPECT_EQ(moved_out, 1);  // one cold preferred block took the foreign place
  // No byte changed its address, and the core reads the same bytes there.
  ExpectSegmentsIntact(buffers);
  const uint64_t head = p.options().knobs.ram_head_bytes;
  absl::StatusOr<ReadToken> token =
      p.manager().OpenRead(SegmentHeadPool::ChunkKey(kSeg1, 2 * kMiB / head + 3));
  ASSERT_TRUE(token.ok());
  std::vector<uint8_t> through_core(head);
  ASSERT_TRUE(p.manager().ReadBytes(*token, 0, absl::MakeSpan(through_core)).ok());
  p.manager().AbandonRead(std::move(*token));
  EXPECT_EQ(std::memcmp(through_core.data(), buffers[1]->data() + 2 * kMiB + 3 * head, head), 0);
  EXPECT_TRUE(p.manager().CheckInvariants().ok());
  // Scores followed their chunks.
  EXPECT_EQ(*p.manager().Score(SegmentHeadPool::ChunkKey(kSeg1, 2 * kMiB / head)), 5.0);
  EXPECT_EQ(p.manager().PromotionStep().outcome, PromotionOutcome::kNoInversion);
}

TEST(SegmentHeadPool, ServedBytesCountLocalOrRemoteBeforeAndSinceExchanges) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = p.options().knobs.ram_head_bytes;
  const int64_t seg = static_cast<int64_t>(p.segment_bytes());
  // Segment 0 is on the serving node, segment 1 on nodes 1 and 2.
  p.OnSegmentRead(kSeg0, head - 100, 200);
  p.OnSegmentRead(kSeg0, 0, p.segment_bytes());
  for (int i = 0; i < 5; ++i) p.OnSegmentRead(kSeg1, 2 * kMiB, 2 * kMiB);
  SegmentHeadPoolStats stats = p.stats();
  const ServedHeadBytes before{200 + seg, 5 * 2 * static_cast<int64_t>(kMiB)};
  EXPECT_EQ(stats.served.local_bytes, before.local_bytes);
  EXPECT_EQ(stats.served.remote_bytes, before.remote_bytes);
  EXPECT_DOUBLE_EQ(stats.served.remote_share(),
                   static_cast<double>(before.remote_bytes) / before.total_bytes());
  EXPECT_EQ(stats.exchanges, 0);
  EXPECT_EQ(stats.served_before_exchange.total_bytes(), before.total_bytes());
  EXPECT_EQ(stats.served_since_exchange.total_bytes(), before.total_bytes());

  // The hot foreign block moves home; what is read of it from then on is local.
  ASSERT_EQ(p.manager().PromotionStep().outcome, PromotionOutcome::kExchanged);
  p.OnSegmentRead(kSeg1, 2 * kMiB, head);
  p.OnSegmentRead(kSeg1, 0, head);  // still foreign
  stats = p.stats();
  EXPECT_EQ(stats.exchanges, 1);
  EXPECT_EQ(stats.served_before_exchange.local_bytes, before.local_bytes);
  EXPECT_EQ(stats.served_before_exchange.remote_bytes, before.remote_bytes);
  EXPECT_EQ(stats.served_since_exchange.local_bytes, static_cast<int64_t>(head));
  EXPECT_EQ(stats.served_since_exchange.remote_bytes, static_cast<int64_t>(head));
  EXPECT_DOUBLE_EQ(stats.served_since_exchange.remote_share(), 0.5);
  EXPECT_EQ(stats.served.total_bytes(), before.total_bytes() + 2 * static_cast<int64_t>(head));
  EXPECT_EQ(ServedHeadBytes{}.remote_share(), 0.0);
}

TEST(SegmentHeadPool, CopyScoresCarryEachChunksScoreWithEqualNeighboursMerged) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = p.options().knobs.ram_head_bytes;
  for (int i = 0; i < 2; ++i) p.OnSegmentRead(kSeg0, head, 2 * head);  // chunks 1 and 2
  for (int i = 0; i < 3; ++i) p.OnSegmentRead(kSeg0, 4 * head, 1);     // chunk 4
  // 10 bytes of chunk 0, chunks 1 to 4, 10 bytes of chunk 5.
  const std::vector<ScorePiece> expected = {
      {10, 0.0}, {2 * head, 2.0}, {head, 0.0}, {head, 3.0}, {10, 0.0}};
  EXPECT_EQ(p.CopyScores(kSeg0, head - 10, 4 * head + 20), expected);
  // Nothing to carry: every score 0, an unknown segment, a bad or empty range.
  EXPECT_TRUE(p.CopyScores(kSeg1, 0, p.segment_bytes()).empty());
  EXPECT_TRUE(p.CopyScores(SegmentId(99), 0, head).empty());
  EXPECT_TRUE(p.CopyScores(kSeg0, p.segment_bytes() - 1, 2).empty());
  EXPECT_TRUE(p.CopyScores(kSeg0, head, 0).empty());
  EXPECT_EQ(p.stats().copies_scored_out, 1);
  // Taking scores for a copy counts no read.
  EXPECT_EQ(p.stats().reads, 5);
}

TEST(SegmentHeadPool, CopyScoresAboveThePieceLimitAreCarriedCoarserNeverColder) {
  SteadyEnv env;
  SegmentHeadPoolOptions options;
  options.knobs.block_bytes = 64 * kKiB;
  options.knobs.ram_head_bytes = 8 * kKiB;
  options.knobs.memory_bytes = 8 * kMiB;
  options.knobs.sub_memory_bytes = {8 * kMiB};
  options.placement = Placement({8 * kMiB, 8 * kMiB}, {0, 1});
  options.segment_ids = {kSeg0};
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, options);
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = 8 * kKiB;
  const uint64_t chunks = p.segment_bytes() / head;
  ASSERT_EQ(chunks, 2 * kCopyScorePiecesMax);
  // Every other chunk read once: 2048 alternating pieces, carried as 1024
  // pairs, each with the larger score of its pair.
  for (uint64_t c = 0; c < chunks; c += 2) p.OnSegmentRead(kSeg0, c * head, head);
  const std::vector<ScorePiece> pieces = p.CopyScores(kSeg0, 0, p.segment_bytes());
  ASSERT_EQ(pieces.size(), kCopyScorePiecesMax);
  for (const ScorePiece& piece : pieces) EXPECT_EQ(piece, (ScorePiece{2 * head, 1.0}));
}

TEST(SegmentHeadPool, InheritedScoresRaiseEveryCoveredChunkToItsLargestOverlap) {
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, LogicalOptions());
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = p.options().knobs.ram_head_bytes;
  auto score = [&](uint64_t chunk) {
    return *p.manager().Score(SegmentHeadPool::ChunkKey(kSeg1, chunk));
  };
  for (int i = 0; i < 5; ++i) p.OnSegmentRead(kSeg1, 2 * head, 1);
  // [head/2, 2.5 head): the first piece covers chunks 0 and 1, the second
  // chunks 1 and 2, whose own 5 stays.
  const std::vector<ScorePiece> pieces = {{head, 1.0}, {head, 4.0}};
  p.InheritScores(kSeg1, head / 2, 2 * head, pieces);
  EXPECT_EQ(score(0), 1.0);
  EXPECT_EQ(score(1), 4.0);
  EXPECT_EQ(score(2), 5.0);
  EXPECT_EQ(score(3), 0.0);
  EXPECT_EQ(p.stats().copies_scored_in, 1);
  EXPECT_EQ(p.stats().chunk_scores_raised, 3);
  EXPECT_EQ(p.stats().chunk_reads, 5);  // inheritance counts no read
  // Ignored: pieces that do not add up, a bad score, an unknown segment, a
  // range outside the segment.
  p.InheritScores(kSeg1, 4 * head, 2 * head, {{head, 7.0}});
  p.InheritScores(kSeg1, 4 * head, head, {{head, std::nan("")}});
  p.InheritScores(SegmentId(99), 0, head, {{head, 7.0}});
  p.InheritScores(kSeg1, p.segment_bytes() - head / 2, head, {{head, 7.0}});
  EXPECT_EQ(score(4), 0.0);
  EXPECT_EQ(p.stats().copies_scores_ignored, 4);
  EXPECT_EQ(p.stats().copies_scored_in, 1);
  EXPECT_TRUE(p.manager().CheckInvariants().ok());
}

TEST(SegmentHeadPool, CopyScoreInheritanceScalesWhatACopyCarries) {
  SteadyEnv env;
  SegmentHeadPoolOptions options = LogicalOptions();
  options.knobs.copy_score_inheritance = 0.25;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, options);
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  const uint64_t head = p.options().knobs.ram_head_bytes;
  p.InheritScores(kSeg1, 0, 2 * head, {{head, 8.0}, {head, 2.0}});
  EXPECT_EQ(*p.manager().Score(SegmentHeadPool::ChunkKey(kSeg1, 0)), 2.0);
  EXPECT_EQ(*p.manager().Score(SegmentHeadPool::ChunkKey(kSeg1, 1)), 0.5);
  EXPECT_EQ(p.stats().chunk_scores_raised, 2);
}

TEST(SegmentHeadPoolOptions, BadConfigurationsNameTheFlag) {
  auto message = [](const SegmentHeadPoolOptions& o) {
    return std::string(o.Validate().message());
  };
  SegmentHeadPoolOptions o = LogicalOptions();
  EXPECT_TRUE(o.Validate().ok());

  o.knobs.small_memory_bytes = 2 * kMiB;
  EXPECT_NE(message(o).find("--small-memory"), std::string::npos) << message(o);
  o = LogicalOptions();
  o.knobs.sub_memory_bytes = {3 * kMiB, 1 * kMiB};
  o.placement = Placement({4 * kMiB, 3 * kMiB, 1 * kMiB}, {0, 1, 2});
  EXPECT_NE(message(o).find("sub_memory[0]"), std::string::npos) << message(o);
  o = LogicalOptions();
  o.segment_ids = {kSeg0, kSeg1, SegmentId(3)};
  EXPECT_NE(message(o).find("do not split into 3 segments"), std::string::npos) << message(o);
  o = LogicalOptions();
  o.segment_ids.clear();
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  o = LogicalOptions();
  o.placement = Placement({4 * kMiB, 2 * kMiB}, {0, 1});
  EXPECT_NE(message(o).find("placement does not match"), std::string::npos) << message(o);
  o = LogicalOptions();
  o.knobs.memory_bytes = (kSegmentHeadPoolBlocksMax + 2) * o.knobs.block_bytes;
  o.placement = Placement({o.knobs.memory_bytes, 2 * kMiB, 2 * kMiB}, {0, 1, 2});
  EXPECT_NE(message(o).find("raise --block"), std::string::npos) << message(o);
  o = LogicalOptions();
  o.knobs.block_bytes = 1 * kMiB;
  o.memory.huge_pages = true;
  EXPECT_NE(message(o).find("multiple of 2M"), std::string::npos) << message(o);
}

// Makes the last foreign block hot through served reads, runs the promotion
// threads until they exchange, and checks that the hot block's pages (same
// addresses) now sit on the serving node and every byte kept its address.
void RunBoundExchange(const Topology& topology, const NumaPlacement& placement,
                      const TieringKnobs& knobs) {
  SteadyEnv env;
  LinuxThreadBinder binder(&topology);
  SegmentHeadPoolOptions options;
  options.knobs = knobs;
  options.placement = placement;
  options.segment_ids = {kSeg0};
  options.binder = &binder;
  absl::StatusOr<std::unique_ptr<SegmentHeadPool>> pool =
      SegmentHeadPool::Create(&env.env, options);
  ASSERT_TRUE(pool.ok()) << pool.status();
  SegmentHeadPool& p = **pool;
  ASSERT_TRUE(p.VerifyPlacement().ok()) << p.VerifyPlacement();
  std::vector<std::unique_ptr<SegmentBuffer>> buffers = AllocateAll(p);
  FillSegments(buffers);

  const uint64_t block = knobs.block_bytes;
  const uint64_t hot = p.segment_bytes() - block;  // the last foreign block
  const int serving = placement.serving_node;
  const int foreign = placement.regions.back().node;
  absl::StatusOr<std::vector<int>> pages = p.PageNodes(kSeg0, hot, block);
  ASSERT_TRUE(pages.ok()) << pages.status();
  ExpectAllOn(*pages, foreign);
  for (int i = 0; i < 4; ++i) p.OnSegmentRead(kSeg0, hot, block);
  p.OnSegmentRead(kSeg0, block, block);  // the second preferred block is warm, the first cold

  ASSERT_TRUE(p.Start().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (p.service_stats().exchanges == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  p.Stop();
  ASSERT_EQ(p.service_stats().exchanges, 1);
  EXPECT_EQ(*p.ChunkNode(kSeg0, hot), serving);
  pages = p.PageNodes(kSeg0, hot, block);
  ASSERT_TRUE(pages.ok());
  ExpectAllOn(*pages, serving);
  // The cold preferred block (the first, all scores 0) went abroad.
  EXPECT_EQ(*p.ChunkNode(kSeg0, 0), foreign);
  pages = p.PageNodes(kSeg0, 0, block);
  ASSERT_TRUE(pages.ok());
  ExpectAllOn(*pages, foreign);
  EXPECT_TRUE(p.VerifyPlacement().ok()) << p.VerifyPlacement();
  ExpectSegmentsIntact(buffers);
  EXPECT_TRUE(p.manager().CheckInvariants().ok());
  EXPECT_EQ(p.manager().stats().exchange_bytes, static_cast<int64_t>(2 * block));
  // The policy of the moved range names its new node.
  absl::StatusOr<MemPolicy> policy = AddressMemPolicy(buffers[0]->data() + hot);
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(policy->nodes, std::vector<int>{serving});
}

TieringKnobs TwoBlocksHomeOneAbroad(size_t foreign_regions) {
  return BlocksPerRegion(2, foreign_regions);
}

TEST(SegmentHeadPool, BoundOnNode0PromotesThroughServedReads) {
  const std::vector<int> nodes = MemoryNodes();
  ASSERT_FALSE(nodes.empty());
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  // Two logical regions on one real node: the real binding, exchange and
  // thread paths, whatever the machine.
  const TieringKnobs knobs = TwoBlocksHomeOneAbroad(1);
  NumaPlacement placement =
      Placement({knobs.memory_bytes, knobs.block_bytes}, {nodes.front(), nodes.front()});
  placement.head_nodes = {nodes.front()};
  RunBoundExchange(*topology, placement, knobs);
}

TEST(NumaMultiNode, StoreHeadPoolExchangeMovesPagesToTheServingNode) {
  const std::vector<int> nodes = MemoryNodes();
  if (nodes.size() < 2) {
    GTEST_SKIP() << "one NUMA node with memory here; tools/numa-qemu-test.sh runs this in a "
                    "multi-node guest";
  }
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  const TieringKnobs knobs = TwoBlocksHomeOneAbroad(nodes.size() - 1);
  absl::StatusOr<NumaPlacement> placement = PlanNumaPlacement(*topology, knobs, {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  ASSERT_NE(placement->regions.front().node, placement->regions.back().node);
  RunBoundExchange(*topology, *placement, knobs);
}

}  // namespace
}  // namespace heatsink::runtime
