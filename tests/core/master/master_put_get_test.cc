// Covers puts and reads: PutStart/PutEnd/PutRevoke with real offsets,
// tenant scoping, versions that increase on every re-put, preferred segments,
// the `random` and `free_ratio_first` strategies, GetReplicaList descriptors
// and read leases, BatchPutStart/End/Revoke, BatchGetReplicaList, the ReadObserver extension point
// (and the word it keeps per object), Remove's distinct refusals, and every limit's status code.
#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "tests/core/master/master_test_util.h"

namespace heatsink {
namespace {

using testing::MasterHarness;
using testing::Name;
using testing::ReadLog;
using testing::TestKnobs;

TEST(MasterPut, PutThenGetReturnsDescriptors) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000, "hostA", "rack1"));
  absl::StatusOr<PutStartResponse> started = h.Start("k", 100);
  HS_ASSERT_OK(started);
  ASSERT_EQ(started->replicas.size(), 1u);
  EXPECT_EQ(started->replicas[0].status, ReplicaStatus::kProcessing);
  // Not readable until PutEnd.
  HS_EXPECT_CODE(h.Get("k"), kUnavailable);
  HS_ASSERT_OK(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), started->version}));

  absl::StatusOr<GetReplicaListResponse> got = h.Get("k");
  HS_ASSERT_OK(got);
  ASSERT_EQ(got->replicas.size(), 1u);
  const ReplicaDescriptor& d = got->replicas[0];
  EXPECT_EQ(d.status, ReplicaStatus::kComplete);
  EXPECT_EQ(d.segment_id, SegmentId(1));
  EXPECT_EQ(d.offset, 0u);
  EXPECT_EQ(d.size_bytes, 100u);
  EXPECT_EQ(d.version, started->version);
  ASSERT_NE(d.location, nullptr);
  EXPECT_EQ(d.location->host, "hostA");
  EXPECT_EQ(d.location->domain, "rack1");
  EXPECT_EQ(d.location->transport_endpoint, "tcp://hostA:1");
  EXPECT_EQ(got->size_bytes, 100u);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPut, ReplicasGetDistinctOffsetsInsideTheSegment) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("a", 100));
  HS_ASSERT_OK(h.Put("b", 250));
  HS_ASSERT_OK(h.Put("c", 50));
  std::map<uint64_t, uint64_t> ranges;
  for (const char* k : {"a", "b", "c"}) {
    absl::StatusOr<GetReplicaListResponse> got = h.Get(k);
    HS_ASSERT_OK(got);
    ranges[got->replicas[0].offset] = got->replicas[0].size_bytes;
  }
  uint64_t end = 0;
  for (const auto& [offset, size] : ranges) {
    EXPECT_GE(offset, end);
    end = offset + size;
  }
  EXPECT_LE(end, 1000u);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 400u);
}

TEST(MasterPut, EmptyTenantIsDefaultAndTenantsAreSeparate) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("k", 10, 1, {}, ""));
  HS_EXPECT_OK(h.Get("k", "default"));
  HS_EXPECT_CODE(h.Get("k", "other"), kNotFound);
  HS_ASSERT_OK(h.Put("k", 20, 1, {}, "other"));
  EXPECT_EQ(h.Get("k", "other")->size_bytes, 20u);
  EXPECT_EQ(h.Get("k", "")->size_bytes, 10u);
  HS_EXPECT_CODE(h.Put("k", 10, 1, {}, "default"), kAlreadyExists);
}

TEST(MasterPut, VersionIncreasesOnEveryReput) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  absl::StatusOr<Version> v1 = h.Put("k", 10);
  HS_ASSERT_OK(v1);
  HS_ASSERT_OK(h.master().Remove(RemoveRequest{Name("k")}));
  absl::StatusOr<Version> v2 = h.Put("k", 10);
  HS_ASSERT_OK(v2);
  EXPECT_GT(*v2, *v1);
  // Two puts at the same clock reading still differ.
  HS_ASSERT_OK(h.master().Remove(RemoveRequest{Name("k")}));
  absl::StatusOr<Version> v3 = h.Put("k", 10);
  HS_ASSERT_OK(v3);
  EXPECT_GT(*v3, *v2);
  EXPECT_EQ(h.Get("k")->version, *v3);
}

TEST(MasterPut, PutEndChecksVersionAndWriter) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  absl::StatusOr<PutStartResponse> s = h.Start("k", 10);
  HS_ASSERT_OK(s);
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), s->version + 1}),
                 kAborted);
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(101), PutEndRequest{Name("k"), s->version}),
                 kPermissionDenied);
  HS_EXPECT_CODE(h.master().PutEnd(ClientId(100), PutEndRequest{Name("nope"), s->version}),
                 kNotFound);
  HS_EXPECT_OK(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), s->version}));
  // Idempotent.
  HS_EXPECT_OK(h.master().PutEnd(ClientId(100), PutEndRequest{Name("k"), s->version}));
  HS_EXPECT_CODE(h.master().PutRevoke(ClientId(100), PutRevokeRequest{Name("k"), s->version}),
                 kFailedPrecondition);
}

TEST(MasterPut, PutRevokeFreesTheBytes) {
  MasterHarness h;
  testing::RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  absl::StatusOr<PutStartResponse> s = h.Start("k", 300);
  HS_ASSERT_OK(s);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 300u);
  HS_ASSERT_OK(h.master().PutRevoke(ClientId(100), PutRevokeRequest{Name("k"), s->version}));
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 0u);
  HS_EXPECT_CODE(h.Get("k"), kNotFound);
  ASSERT_EQ(log.removals.size(), 1u);
  EXPECT_EQ(log.removals[0].cause, RemovalCause::kPutRevoked);
  EXPECT_TRUE(log.removals[0].object_deleted);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPut, PreferredSegmentWinsAndFallsBackWhenFull) {
  MasterHarness h;
  for (uint64_t id : {1, 2, 3}) HS_ASSERT_OK(h.AddStore(id, 1000));
  for (int i = 0; i < 5; ++i) {
    const std::string key = "p" + std::to_string(i);
    HS_ASSERT_OK(h.Put(key, 100, 1, {SegmentId(3)}));
    EXPECT_EQ(h.Get(key)->replicas[0].segment_id, SegmentId(3));
  }
  // Two preferred segments, two replicas: both used, in order.
  HS_ASSERT_OK(h.Put("two", 100, 2, {SegmentId(2), SegmentId(1)}));
  EXPECT_EQ(h.SegmentsOf(*h.Get("two")), (std::vector<SegmentId>{SegmentId(2), SegmentId(1)}));
  // Segment 3 has 500 bytes left: a 600-byte put falls back to another one.
  HS_ASSERT_OK(h.Put("big", 600, 1, {SegmentId(3)}));
  EXPECT_NE(h.Get("big")->replicas[0].segment_id, SegmentId(3));
  // An unknown preferred segment also falls back.
  HS_ASSERT_OK(h.Put("unknown", 10, 1, {SegmentId(99)}));
}

TEST(MasterPut, FreeRatioFirstPicksTheEmptiestSegment) {
  MasterKnobs knobs = TestKnobs();
  knobs.allocation_strategy = AllocationStrategy::kFreeRatioFirst;
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 2000));
  HS_ASSERT_OK(h.AddStore(3, 1000));
  // Fill segment 1 to 50%, segment 3 to 20%; segment 2 is empty (100% free).
  HS_ASSERT_OK(h.Put("a", 500, 1, {SegmentId(1)}));
  HS_ASSERT_OK(h.Put("b", 200, 1, {SegmentId(3)}));
  HS_ASSERT_OK(h.Put("x", 100));
  EXPECT_EQ(h.Get("x")->replicas[0].segment_id, SegmentId(2));
  // Now 2 is 95% free, 3 is 80%, 1 is 50%: two replicas go to 2 then 3.
  HS_ASSERT_OK(h.Put("y", 100, 2));
  EXPECT_EQ(h.SegmentsOf(*h.Get("y")), (std::vector<SegmentId>{SegmentId(2), SegmentId(3)}));
  // Equal ratios: lower segment id first.
  MasterHarness tie(knobs);
  HS_ASSERT_OK(tie.AddStore(5, 1000));
  HS_ASSERT_OK(tie.AddStore(4, 1000));
  HS_ASSERT_OK(tie.Put("t", 10));
  EXPECT_EQ(tie.Get("t")->replicas[0].segment_id, SegmentId(4));
}

std::vector<SegmentId> RandomPlacements(uint64_t seed) {
  MasterHarness h(TestKnobs(), seed);
  for (uint64_t id : {1, 2, 3, 4}) EXPECT_TRUE(h.AddStore(id, 10'000).ok());
  std::vector<SegmentId> out;
  for (int i = 0; i < 24; ++i) {
    const std::string key = "r" + std::to_string(i);
    EXPECT_TRUE(h.Put(key, 10).ok());
    out.push_back(h.Get(key)->replicas[0].segment_id);
  }
  return out;
}

TEST(MasterPut, RandomStrategyIsSeededAndSpreads) {
  const std::vector<SegmentId> a = RandomPlacements(11);
  EXPECT_EQ(a, RandomPlacements(11));
  std::set<SegmentId> used(a.begin(), a.end());
  EXPECT_GE(used.size(), 3u) << "random placement should spread over segments";
  EXPECT_NE(a, RandomPlacements(12));
}

// The random strategy draws uniformly without replacement from the segments
// that can take the object, in segment id order, with the master's
// "master.allocation" stream: a reference model of that rule predicts every
// placement of 2- and 3-replica puts, with one segment too small to be a
// candidate.
TEST(MasterPut, RandomStrategyDrawsWithoutReplacementFromUsableSegments) {
  constexpr uint64_t kSeed = 23;
  MasterHarness h(TestKnobs(), kSeed);
  const std::vector<uint64_t> ids = {1, 2, 3, 4, 5};
  for (uint64_t id : ids) HS_ASSERT_OK(h.AddStore(id, id == 3 ? 50 : 100'000));
  Rng reference = Rng(kSeed).Fork("master.allocation");
  for (int i = 0; i < 40; ++i) {
    const uint32_t replicas = i % 2 == 0 ? 2 : 3;
    std::vector<SegmentId> candidates = {SegmentId(1), SegmentId(2), SegmentId(4), SegmentId(5)};
    std::vector<SegmentId> expected;
    while (expected.size() < replicas) {
      const size_t pick = static_cast<size_t>(reference.Uniform(candidates.size()));
      expected.push_back(candidates[pick]);
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    const std::string key = "k" + std::to_string(i);
    HS_ASSERT_OK(h.Put(key, 100, replicas));
    std::vector<SegmentId> got = h.SegmentsOf(*h.Get(key));
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(got, expected) << key;
  }
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPut, ReplicasLandOnDistinctSegmentsAllOrNothing) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("two", 100, 2));
  std::vector<SegmentId> segs = h.SegmentsOf(*h.Get("two"));
  std::sort(segs.begin(), segs.end());
  EXPECT_EQ(segs, (std::vector<SegmentId>{SegmentId(1), SegmentId(2)}));
  // Three replicas cannot fit on two segments: nothing is allocated.
  HS_EXPECT_CODE(h.Start("three", 100, 3), kResourceExhausted);
  EXPECT_EQ(h.master().Stats().used_bytes, 200u);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPut, NonAllocatableSegmentGetsNothingNew) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddClient(1));
  HS_ASSERT_OK(h.Mount(1, 1, 1000, "host", "", /*allocatable=*/false));
  HS_EXPECT_CODE(h.Start("k", 10), kResourceExhausted);
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("k", 10, 1, {SegmentId(1)}));
  EXPECT_EQ(h.Get("k")->replicas[0].segment_id, SegmentId(2));
}

TEST(MasterPut, BadRequestsAreInvalidArguments) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  const MasterKnobs& k = h.master().knobs();
  HS_EXPECT_CODE(h.Start(std::string(static_cast<size_t>(k.key_bytes_max) + 1, 'x'), 10),
                 kInvalidArgument);
  HS_EXPECT_OK(h.Start(std::string(static_cast<size_t>(k.key_bytes_max), 'x'), 10));
  HS_EXPECT_CODE(h.Start("", 10), kInvalidArgument);
  HS_EXPECT_CODE(h.Start("k", 10, 1, {}, 100,
                         std::string(static_cast<size_t>(k.tenant_bytes_max) + 1, 't')),
                 kInvalidArgument);
  HS_EXPECT_CODE(h.Start("k", 0), kInvalidArgument);
  HS_EXPECT_CODE(h.Start("k", 10, 0), kInvalidArgument);
  HS_EXPECT_CODE(h.Start("k", 10, 1, {}, /*writer=*/0), kInvalidArgument);
  HS_EXPECT_CODE(h.Get(std::string(static_cast<size_t>(k.key_bytes_max) + 1, 'x')),
                 kInvalidArgument);
}

TEST(MasterPut, BatchPutGivesPerKeyResultsInOrder) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("exists", 10));
  BatchPutStartRequest start;
  start.names = {Name("a"), Name("exists"), Name("b"), Name("c")};
  start.sizes_bytes = {100, 10, 0, 200};
  start.preferred_segments = {SegmentId(1)};
  absl::StatusOr<BatchPutStartResponse> started = h.master().BatchPutStart(ClientId(100), start);
  HS_ASSERT_OK(started);
  ASSERT_EQ(started->results.size(), 4u);
  HS_ASSERT_OK(started->results[0]);
  HS_EXPECT_CODE(started->results[1], kAlreadyExists);
  HS_EXPECT_CODE(started->results[2], kInvalidArgument);  // size 0, as PutStart
  HS_ASSERT_OK(started->results[3]);
  EXPECT_EQ(started->results[0]->replicas.at(0).size_bytes, 100u);
  EXPECT_EQ(started->results[3]->replicas.at(0).size_bytes, 200u);
  EXPECT_LT(started->results[0]->version, started->results[3]->version);  // in order
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 310u);

  // End "a" (and a stale version of "c"), revoke "c"; an unknown key is
  // NOT_FOUND in its own slot.
  BatchPutEndRequest end;
  end.puts = {PutEndRequest{Name("a"), started->results[0]->version},
              PutEndRequest{Name("c"), started->results[3]->version + 1},
              PutEndRequest{Name("nope"), 1}};
  absl::StatusOr<BatchPutResponse> ended = h.master().BatchPutEnd(ClientId(100), end);
  HS_ASSERT_OK(ended);
  ASSERT_EQ(ended->results.size(), 3u);
  HS_EXPECT_OK(ended->results[0]);
  HS_EXPECT_CODE(ended->results[1], kAborted);
  HS_EXPECT_CODE(ended->results[2], kNotFound);
  HS_EXPECT_OK(h.Get("a"));
  HS_EXPECT_CODE(h.Get("c"), kUnavailable);

  BatchPutRevokeRequest revoke;
  revoke.puts = {PutRevokeRequest{Name("c"), started->results[3]->version},
                 PutRevokeRequest{Name("a"), started->results[0]->version}};
  absl::StatusOr<BatchPutResponse> revoked = h.master().BatchPutRevoke(ClientId(100), revoke);
  HS_ASSERT_OK(revoked);
  ASSERT_EQ(revoked->results.size(), 2u);
  HS_EXPECT_OK(revoked->results[0]);
  HS_EXPECT_CODE(revoked->results[1], kFailedPrecondition);  // already ended
  HS_EXPECT_CODE(h.Get("c"), kNotFound);
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 110u);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterPut, BatchPutRefusesWholeBatchesItCannotTake) {
  const MasterKnobs knobs = TestKnobs();
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 100'000));
  BatchPutStartRequest start;
  for (int i = 0; i <= knobs.batch_keys_max; ++i) {
    start.names.push_back(Name("k" + std::to_string(i)));
    start.sizes_bytes.push_back(10);
  }
  HS_EXPECT_CODE(h.master().BatchPutStart(ClientId(100), start), kInvalidArgument);
  start.names.resize(2);
  start.sizes_bytes.resize(1);
  HS_EXPECT_CODE(h.master().BatchPutStart(ClientId(100), start), kInvalidArgument);
  // Nothing was started by either refusal.
  EXPECT_EQ(h.master().GetSegment(SegmentId(1))->used_bytes, 0u);
  HS_EXPECT_CODE(h.Get("k0"), kNotFound);

  BatchPutEndRequest end;
  end.puts.resize(static_cast<size_t>(knobs.batch_keys_max) + 1, PutEndRequest{Name("k0"), 1});
  HS_EXPECT_CODE(h.master().BatchPutEnd(ClientId(100), end), kInvalidArgument);
  BatchPutRevokeRequest revoke;
  revoke.puts.resize(static_cast<size_t>(knobs.batch_keys_max) + 1,
                     PutRevokeRequest{Name("k0"), 1});
  HS_EXPECT_CODE(h.master().BatchPutRevoke(ClientId(100), revoke), kInvalidArgument);
}

TEST(MasterLimits, TablesRejectAtTheirLimitWithResourceExhausted) {
  MasterKnobs knobs = MasterKnobs::TestMin();  // objects_max 16, segments_max 4, ...
  MasterHarness h(knobs);
  HS_ASSERT_OK(h.AddStore(1, 100'000));
  for (int i = 0; i < knobs.objects_max; ++i) HS_ASSERT_OK(h.Put("o" + std::to_string(i), 10));
  HS_EXPECT_CODE(h.Start("one-more", 10), kResourceExhausted);

  HS_EXPECT_CODE(h.Start("x", 10, static_cast<uint32_t>(knobs.replicas_per_object_max) + 1),
                 kResourceExhausted);
  std::vector<SegmentId> preferred(static_cast<size_t>(knobs.preferred_segments_max) + 1,
                                   SegmentId(1));
  HS_EXPECT_CODE(h.Start("x", 10, 1, preferred), kResourceExhausted);

  BatchGetReplicaListRequest batch;
  for (int i = 0; i <= knobs.batch_keys_max; ++i) batch.names.push_back(Name("o0"));
  HS_EXPECT_CODE(h.master().BatchGetReplicaList(batch), kInvalidArgument);

  // clients_max (4): one registered already.
  for (uint64_t c = 2; c <= static_cast<uint64_t>(knobs.clients_max); ++c) {
    HS_ASSERT_OK(h.AddClient(c));
  }
  HS_EXPECT_CODE(h.AddClient(50), kResourceExhausted);
  HS_EXPECT_OK(h.AddClient(2));  // re-registering is not a new client

  // segments_per_client_max (2), then segments_max (4).
  HS_ASSERT_OK(h.Mount(1, 11, 100));
  HS_EXPECT_CODE(h.Mount(1, 12, 100), kResourceExhausted);
  HS_ASSERT_OK(h.Mount(2, 21, 100));
  HS_ASSERT_OK(h.Mount(2, 22, 100));
  HS_EXPECT_CODE(h.Mount(3, 31, 100), kResourceExhausted);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterGet, ReadGrantsALease) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("k", 10));
  h.Advance(MsToNs(10));
  const TimeNs now = h.env().NowNs();
  absl::StatusOr<GetReplicaListResponse> got = h.Get("k");
  HS_ASSERT_OK(got);
  EXPECT_EQ(got->lease_expiry_ns, now + h.master().knobs().default_kv_lease_ttl_ns());
  EXPECT_EQ(h.master().GetObjectView(Name("k"))->lease_expiry_ns, got->lease_expiry_ns);
}

TEST(MasterGet, BatchReturnsPerKeyResultsInOrder) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.Put("a", 10));
  HS_ASSERT_OK(h.Start("writing", 10));
  BatchGetReplicaListRequest req;
  req.names = {Name("a"), Name("missing"), Name("writing")};
  absl::StatusOr<BatchGetReplicaListResponse> got = h.master().BatchGetReplicaList(req);
  HS_ASSERT_OK(got);
  ASSERT_EQ(got->results.size(), 3u);
  HS_EXPECT_OK(got->results[0]);
  HS_EXPECT_CODE(got->results[1], kNotFound);
  HS_EXPECT_CODE(got->results[2], kUnavailable);
}

TEST(MasterGet, ReadObserverSeesOneCallPerKeyRead) {
  MasterHarness h;
  ReadLog log;
  h.master().SetReadObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  absl::StatusOr<Version> v = h.Put("two", 10, 2);
  HS_ASSERT_OK(v);
  HS_ASSERT_OK(h.Get("two", "", "rackB"));
  HS_EXPECT_CODE(h.Get("missing"), kNotFound);
  ASSERT_EQ(log.entries.size(), 1u);  // not per replica, not for a miss
  EXPECT_EQ(log.entries[0].tenant, "default");
  EXPECT_EQ(log.entries[0].key, "two");
  EXPECT_EQ(log.entries[0].domain, "rackB");
  EXPECT_EQ(log.entries[0].requester, ClientId(100));
  EXPECT_EQ(log.entries[0].version, *v);
  EXPECT_EQ(log.entries[0].readable, 2u);

  BatchGetReplicaListRequest batch;
  batch.names = {Name("two"), Name("missing"), Name("two")};
  HS_ASSERT_OK(h.master().BatchGetReplicaList(batch));
  ASSERT_EQ(log.entries.size(), 3u);
  EXPECT_EQ(log.entries[1].domain, "default");
  h.master().SetReadObserver(nullptr);
  HS_ASSERT_OK(h.Get("two"));
  EXPECT_EQ(log.entries.size(), 3u);
}

TEST(MasterRemove, RefusalsHaveDistinctCodes) {
  MasterHarness h;
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_EXPECT_CODE(h.master().Remove(RemoveRequest{Name("missing")}), kNotFound);

  // Put in progress: a PROCESSING replica.
  HS_ASSERT_OK(h.Start("writing", 10));
  HS_EXPECT_CODE(h.master().Remove(RemoveRequest{Name("writing")}), kUnavailable);

  // Read lease.
  HS_ASSERT_OK(h.Put("leased", 10, 1, {SegmentId(1)}));
  HS_ASSERT_OK(h.Get("leased"));
  HS_EXPECT_CODE(h.master().Remove(RemoveRequest{Name("leased")}), kFailedPrecondition);
  h.Advance(h.master().knobs().default_kv_lease_ttl_ns());
  HS_EXPECT_OK(h.master().Remove(RemoveRequest{Name("leased")}));

  // Replication task.
  HS_ASSERT_OK(h.Put("copied", 10, 1, {SegmentId(1)}));
  HS_ASSERT_OK(h.master().CreateCopyTask(CopyTaskRequest{Name("copied"), SegmentId(2), {}}));
  HS_EXPECT_CODE(h.master().Remove(RemoveRequest{Name("copied")}), kAborted);
  HS_EXPECT_OK(h.master().CheckInvariants());
}

TEST(MasterRemove, RemoveFreesEveryReplica) {
  MasterHarness h;
  testing::RemovalLog log;
  h.master().SetReplicaRemovalObserver(&log);
  HS_ASSERT_OK(h.AddStore(1, 1000));
  HS_ASSERT_OK(h.AddStore(2, 1000));
  HS_ASSERT_OK(h.Put("k", 100, 2));
  HS_ASSERT_OK(h.master().Remove(RemoveRequest{Name("k")}));
  EXPECT_EQ(h.master().Stats().used_bytes, 0u);
  EXPECT_EQ(h.master().Stats().objects, 0);
  ASSERT_EQ(log.removals.size(), 2u);
  EXPECT_FALSE(log.removals[0].object_deleted);
  EXPECT_TRUE(log.removals[1].object_deleted);
  EXPECT_EQ(log.removals[1].cause, RemovalCause::kRemove);
}

}  // namespace
}  // namespace heatsink
