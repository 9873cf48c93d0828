#include "runtime/rpc/convert.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace heatsink::runtime {
namespace {

std::shared_ptr<const SegmentLocation> Location(uint64_t id, const std::string& host) {
  SegmentLocation l;
  l.id = SegmentId(id);
  l.name = "segment-" + host;
  l.owner = ClientId(id);
  l.host = host;
  l.domain = "domain-" + host;
  l.transport_endpoint = host + ":7000";
  l.data_service_endpoint = host + ":7001";
  return std::make_shared<const SegmentLocation>(l);
}

ReplicaDescriptor Replica(uint64_t id, std::shared_ptr<const SegmentLocation> location) {
  ReplicaDescriptor r;
  r.replica_id = ReplicaId(id);
  r.status = ReplicaStatus::kComplete;
  r.origin = id % 2 == 0 ? ReplicaOrigin::kCopy : ReplicaOrigin::kPut;
  r.segment_id = location->id;
  r.offset = id * 4096;
  r.size_bytes = 4096;
  r.version = 7;
  r.dynamic = id % 2 == 0;
  r.lease_id = LeaseId(id * 10);
  r.location = std::move(location);
  return r;
}

TEST(BatchGetReplicaListConversion, EachSegmentsLocationTravelsOnceAndEveryReplicaGetsItsOwnBack) {
  auto a = Location(1, "host-a");
  auto b = Location(2, "host-b");
  BatchGetReplicaListResponse in;
  for (uint64_t k = 0; k < 3; ++k) {
    GetReplicaListResponse one;
    one.version = 7;
    one.size_bytes = 4096;
    one.lease_expiry_ns = 1000 + k;
    one.replicas = {Replica(2 * k + 1, a), Replica(2 * k + 2, b)};
    in.results.push_back(one);
  }
  in.results.insert(in.results.begin() + 1, absl::NotFoundError("object 'x' not found"));

  v1::BatchGetReplicaListResponse proto;
  ToProto(in, &proto);
  // Two locations for six replicas; no replica carries its own.
  ASSERT_EQ(proto.locations_size(), 2);
  for (const v1::BatchGetReplicaListResult& r : proto.results()) {
    for (const v1::ReplicaDescriptor& replica : r.response().replicas()) {
      EXPECT_FALSE(replica.has_location());
      EXPECT_GE(replica.location_index(), 1u);
    }
  }

  // Through the wire and back: the same answer, replica by replica.
  v1::BatchGetReplicaListResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(proto.SerializeAsString()));
  absl::StatusOr<BatchGetReplicaListResponse> out = FromProto(parsed);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->results.size(), in.results.size());
  EXPECT_EQ(out->results[1].status().code(), absl::StatusCode::kNotFound);
  for (size_t i = 0; i < in.results.size(); ++i) {
    if (!in.results[i].ok()) continue;
    const GetReplicaListResponse& want = *in.results[i];
    ASSERT_TRUE(out->results[i].ok());
    const GetReplicaListResponse& got = *out->results[i];
    EXPECT_EQ(got.version, want.version);
    EXPECT_EQ(got.size_bytes, want.size_bytes);
    EXPECT_EQ(got.lease_expiry_ns, want.lease_expiry_ns);
    ASSERT_EQ(got.replicas.size(), want.replicas.size());
    for (size_t j = 0; j < want.replicas.size(); ++j) {
      const ReplicaDescriptor& w = want.replicas[j];
      const ReplicaDescriptor& g = got.replicas[j];
      EXPECT_EQ(g.replica_id, w.replica_id);
      EXPECT_EQ(g.status, w.status);
      EXPECT_EQ(g.origin, w.origin);
      EXPECT_EQ(g.segment_id, w.segment_id);
      EXPECT_EQ(g.offset, w.offset);
      EXPECT_EQ(g.size_bytes, w.size_bytes);
      EXPECT_EQ(g.version, w.version);
      EXPECT_EQ(g.dynamic, w.dynamic);
      EXPECT_EQ(g.lease_id, w.lease_id);
      ASSERT_NE(g.location, nullptr);
      EXPECT_EQ(g.location->id, w.location->id);
      EXPECT_EQ(g.location->name, w.location->name);
      EXPECT_EQ(g.location->owner, w.location->owner);
      EXPECT_EQ(g.location->host, w.location->host);
      EXPECT_EQ(g.location->domain, w.location->domain);
      EXPECT_EQ(g.location->transport_endpoint, w.location->transport_endpoint);
      EXPECT_EQ(g.location->data_service_endpoint, w.location->data_service_endpoint);
    }
  }
  // Replicas on one segment share one parsed location.
  EXPECT_EQ(out->results[0]->replicas[0].location, out->results[2]->replicas[0].location);
}

TEST(BatchGetReplicaListConversion, ALocationIndexOutsideTheTableIsInternal) {
  v1::BatchGetReplicaListResponse proto;
  v1::BatchGetReplicaListResult* r = proto.add_results();
  r->mutable_status()->set_code(0);
  r->mutable_response()->add_replicas()->set_location_index(3);
  proto.add_locations()->set_host("a");
  const absl::StatusOr<BatchGetReplicaListResponse> out = FromProto(proto);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInternal);
}

TEST(BatchGetReplicaListConversion, AReplicaCarryingItsOwnLocationIsStillRead) {
  v1::BatchGetReplicaListResponse proto;
  v1::BatchGetReplicaListResult* r = proto.add_results();
  r->mutable_response()->add_replicas()->mutable_location()->set_host("own-host");
  const absl::StatusOr<BatchGetReplicaListResponse> out = FromProto(proto);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->results[0].ok());
  EXPECT_EQ(out->results[0]->replicas[0].location->host, "own-host");
}

}  // namespace
}  // namespace heatsink::runtime
