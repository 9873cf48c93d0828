// Covers reader-side replica selection. `first` (Mooncake): a local MEMORY
// replica wherever it sits in the list, else the first MEMORY replica in
// master order, so every remote reader of a hot object lands on one replica.
// `spread`: local first, then same domain before cross-domain, and among
// equal-cost replicas an even, deterministic spread over readers (and over
// keys for one reader), stable for a reader while the replica set holds.
#include "core/replication/replica_selection.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace heatsink {
namespace {

const ObjectName kObject{"tenant", "hot-object"};

ReadableReplica R(uint64_t segment, std::string host, std::string domain = "default") {
  return ReadableReplica{SegmentId(segment), std::move(host), std::move(domain), true};
}

ReaderIdentity Reader(uint64_t client, std::string host, std::string domain = "default") {
  return ReaderIdentity{ClientId(client), std::move(host), std::move(domain)};
}

TEST(ReplicaSelectionFirst, LocalMemoryReplicaWinsWhereverItSits) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2"), R(3, "h3")};
  EXPECT_EQ(
      SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, Reader(9, "h3"), kObject, replicas, 0),
      2u);
}

TEST(ReplicaSelectionFirst, RemoteReadersAllTakeTheFirstInMasterOrder) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2"), R(3, "h3")};
  for (uint64_t reader = 1; reader <= 50; ++reader) {
    EXPECT_EQ(
        SelectReplicaForRead(ReplicaSelectionPolicy::kFirst,
                             Reader(reader, absl::StrCat("reader-", reader)), kObject, replicas, 0),
        0u);
  }
}

TEST(ReplicaSelectionFirst, SkipsNonMemoryReplicasBeforeFallingBack) {
  std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2")};
  replicas[0].memory = false;
  EXPECT_EQ(
      SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, Reader(9, "h9"), kObject, replicas, 0),
      1u);
  replicas[1].memory = false;
  EXPECT_EQ(
      SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, Reader(9, "h9"), kObject, replicas, 0),
      0u);
  EXPECT_EQ(SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, Reader(9, "h9"), kObject, {}, 0),
            std::nullopt);
}

TEST(ReplicaSelectionFirst, ReaderWithoutHostHasNoLocalReplica) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "")};
  EXPECT_EQ(
      SelectReplicaForRead(ReplicaSelectionPolicy::kFirst, Reader(9, ""), kObject, replicas, 0),
      0u);
}

TEST(ReplicaSelectionSpread, LocalMemoryReplicaStillWinsFirst) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1", "a"), R(2, "h2", "b"), R(3, "h3", "b")};
  // The local replica is cross-domain in this contrived layout; local wins.
  EXPECT_EQ(SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(9, "h1", "b"), kObject,
                                 replicas, 0),
            0u);
}

TEST(ReplicaSelectionSpread, SameDomainBeforeCrossDomain) {
  const std::vector<ReadableReplica> replicas = {R(1, "a1", "a"), R(2, "a2", "a"), R(3, "b1", "b")};
  for (uint64_t reader = 1; reader <= 100; ++reader) {
    EXPECT_EQ(
        SelectReplicaForRead(ReplicaSelectionPolicy::kSpread,
                             Reader(reader, absl::StrCat("rb", reader), "b"), kObject, replicas, 7),
        2u)
        << reader;
  }
}

TEST(ReplicaSelectionSpread, SpreadsReadersEvenlyOverEqualCostReplicas) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2"), R(3, "h3"),
                                                 R(4, "far", "other")};
  std::map<size_t, int> load;
  constexpr int kReaders = 3'000;
  for (uint64_t reader = 1; reader <= kReaders; ++reader) {
    const auto i =
        SelectReplicaForRead(ReplicaSelectionPolicy::kSpread,
                             Reader(reader, absl::StrCat("r", reader)), kObject, replicas, 42);
    ASSERT_TRUE(i.has_value());
    ++load[*i];
  }
  EXPECT_EQ(load.count(3), 0u);  // the cross-domain replica is never used
  ASSERT_EQ(load.size(), 3u);
  for (const auto& [index, n] : load) {
    EXPECT_GT(n, kReaders / 3 * 8 / 10) << index;
    EXPECT_LT(n, kReaders / 3 * 12 / 10) << index;
  }
}

TEST(ReplicaSelectionSpread, SpreadsOneReadersKeysOverReplicas) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2")};
  std::map<size_t, int> load;
  for (int k = 0; k < 1'000; ++k) {
    const ObjectName object{"tenant", absl::StrCat("key-", k)};
    ++load[*SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(5, "r5"), object, replicas,
                                 1)];
  }
  ASSERT_EQ(load.size(), 2u);
  EXPECT_GT(load[0], 400);
  EXPECT_GT(load[1], 400);
}

TEST(ReplicaSelectionSpread, IsDeterministicAndStableUnderRemoval) {
  std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2"), R(3, "h3")};
  std::vector<uint64_t> before;
  for (uint64_t reader = 1; reader <= 300; ++reader) {
    const auto a = SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(reader, "rx"),
                                        kObject, replicas, 9);
    const auto b = SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(reader, "rx"),
                                        kObject, replicas, 9);
    ASSERT_EQ(a, b);
    before.push_back(replicas[*a].segment.value);
  }
  // Removing segment 2 moves only the readers that used it.
  replicas.erase(replicas.begin() + 1);
  int moved = 0;
  for (uint64_t reader = 1; reader <= 300; ++reader) {
    const auto i = SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(reader, "rx"),
                                        kObject, replicas, 9);
    const uint64_t now = replicas[*i].segment.value;
    if (before[reader - 1] != 2) {
      EXPECT_EQ(now, before[reader - 1]) << reader;
    } else {
      ++moved;
    }
  }
  EXPECT_GT(moved, 0);
}

TEST(ReplicaSelectionSpread, SeedChangesTheAssignment) {
  const std::vector<ReadableReplica> replicas = {R(1, "h1"), R(2, "h2"), R(3, "h3")};
  int differ = 0;
  for (uint64_t reader = 1; reader <= 100; ++reader) {
    if (SelectReplicaForRead(ReplicaSelectionPolicy::kSpread, Reader(reader, "rx"), kObject,
                             replicas, 1) != SelectReplicaForRead(ReplicaSelectionPolicy::kSpread,
                                                                  Reader(reader, "rx"), kObject,
                                                                  replicas, 2)) {
      ++differ;
    }
  }
  EXPECT_GT(differ, 20);
}

}  // namespace
}  // namespace heatsink
