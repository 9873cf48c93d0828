// Covers batch puts over the gRPC control plane, in one process (the
// fixture of control_plane_fixture.h): BatchPutStart, BatchPutEnd and
// BatchPutRevoke give a result per key over the wire, and
// HeatsinkClient::BatchPut ends the keys whose bytes landed and revokes the
// rest, refusing a batch whose keys and values differ in number or that is
// above the master's batch_keys_max.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/client/object_data_path.h"
#include "tests/runtime/rpc/control_plane_fixture.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

using test::ControlPlaneTest;
using test::kSegmentBytes;
using test::Pattern;
using test::Wait;

TEST_F(ControlPlaneTest, BatchPutsGiveAResultPerKeyOverTheWire) {
  StartCluster(DynamicReplicationMode::kOff);
  std::unique_ptr<HeatsinkClient> writer = MakeClient(ClientId(100), "host-a", "a");
  ASSERT_TRUE(writer->Put("exists", Pattern(2, 1000)).ok());
  GrpcMasterClient* rpc = client_rpcs_.back().get();
  const ClientId me(100);
  const auto name = [](const std::string& key) { return ObjectName{"t1", key}; };

  // Per key, in order: a fit, a key that exists, one too large for any
  // segment, another fit.
  BatchPutStartRequest start;
  start.names = {name("b1"), name("exists"), name("huge"), name("b2")};
  start.sizes_bytes = {1000, 1000, 2 * kSegmentBytes, 3000};
  const auto started = Wait<absl::StatusOr<BatchPutStartResponse>>(
      [&](auto done) { rpc->BatchPutStart(me, start, std::move(done)); });
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->results.size(), 4u);
  ASSERT_TRUE(started->results[0].ok()) << started->results[0].status();
  EXPECT_EQ(started->results[1].status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(started->results[2].ok());
  ASSERT_TRUE(started->results[3].ok()) << started->results[3].status();
  EXPECT_EQ(started->results[3]->replicas.size(), 1u);

  // End b1, revoke b2; a stale version is refused for its key alone.
  BatchPutEndRequest end;
  end.puts = {{name("b1"), started->results[0]->version},
              {name("b2"), started->results[3]->version + 1}};
  const auto ended = Wait<absl::StatusOr<BatchPutResponse>>(
      [&](auto done) { rpc->BatchPutEnd(me, end, std::move(done)); });
  ASSERT_TRUE(ended.ok()) << ended.status();
  ASSERT_EQ(ended->results.size(), 2u);
  EXPECT_TRUE(ended->results[0].ok()) << ended->results[0];
  EXPECT_FALSE(ended->results[1].ok());
  BatchPutRevokeRequest revoke;
  revoke.puts = {{name("b2"), started->results[3]->version}};
  const auto revoked = Wait<absl::StatusOr<BatchPutResponse>>(
      [&](auto done) { rpc->BatchPutRevoke(me, revoke, std::move(done)); });
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  ASSERT_EQ(revoked->results.size(), 1u);
  EXPECT_TRUE(revoked->results[0].ok()) << revoked->results[0];

  const auto b1 = Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
    rpc->GetReplicaList(GetReplicaListRequest{name("b1"), me, "a"}, std::move(done));
  });
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_EQ(b1->size_bytes, 1000u);
  const auto b2 = Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
    rpc->GetReplicaList(GetReplicaListRequest{name("b2"), me, "a"}, std::move(done));
  });
  EXPECT_EQ(b2.status().code(), absl::StatusCode::kNotFound);

  // A batch whose names and sizes differ in count is refused whole.
  BatchPutStartRequest bad;
  bad.names = {name("c1"), name("c2")};
  bad.sizes_bytes = {1000};
  const auto refused = Wait<absl::StatusOr<BatchPutStartResponse>>(
      [&](auto done) { rpc->BatchPutStart(me, bad, std::move(done)); });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

// Moves bytes over TCP, but refuses writes of `failing_bytes` bytes (a store
// that breaks in the middle of one key of a batch).
class WriteFailingDataPath final : public ObjectDataPath {
 public:
  explicit WriteFailingDataPath(uint64_t failing_bytes) : failing_bytes_(failing_bytes) {}
  absl::Status Write(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                     absl::string_view bytes) override {
    if (bytes.size() == failing_bytes_) return absl::UnavailableError("the store went away");
    return tcp_.Write(location, segment, offset, bytes);
  }
  absl::Status ReadInto(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                        absl::Span<uint8_t> out) override {
    return tcp_.ReadInto(location, segment, offset, out);
  }
  absl::string_view name() const override { return "tcp"; }

 private:
  const uint64_t failing_bytes_;
  TcpObjectDataPath tcp_{TcpTransportKnobs{}};
};

// HeatsinkClient::BatchPut: a status per key, whatever happened to the
// others; keys whose bytes all landed are readable, a key whose write failed
// is revoked and never readable.
TEST_F(ControlPlaneTest, ClientBatchPutEndsTheKeysThatLandedAndRevokesTheRest) {
  StartCluster(DynamicReplicationMode::kOff);
  std::unique_ptr<HeatsinkClient> plain = MakeClient(ClientId(100), "host-a", "a");
  ASSERT_TRUE(plain->Put("exists", Pattern(2, 1000)).ok());
  HeatsinkClientOptions options = plain->options();
  options.object_bytes_max = 4 * kSegmentBytes;
  WriteFailingDataPath path(/*failing_bytes=*/777);
  HeatsinkClient writer(client_rpcs_.back().get(), &path, options);

  const std::vector<std::string> keys = {"b1", "exists", "too-big", "broken", "b2", "no-room"};
  const std::string b1 = Pattern(11, (2 << 20) + 17);  // three TCP chunks
  const std::string b2 = Pattern(12, 3000);
  const std::string exists = Pattern(13, 1000);
  const std::string too_big = Pattern(14, 4 * kSegmentBytes + 1);
  const std::string broken = Pattern(15, 777);
  const std::string no_room = Pattern(16, 2 * kSegmentBytes);  // larger than any segment
  const std::vector<absl::string_view> values = {b1, exists, too_big, broken, b2, no_room};
  absl::StatusOr<std::vector<absl::Status>> put = writer.BatchPut(keys, values);
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_EQ(put->size(), keys.size());
  EXPECT_TRUE((*put)[0].ok()) << (*put)[0];
  EXPECT_EQ((*put)[1].code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ((*put)[2].code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string((*put)[2].message()), ::testing::HasSubstr("object_bytes_max"));
  EXPECT_EQ((*put)[3].code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE((*put)[4].ok()) << (*put)[4];
  EXPECT_FALSE((*put)[5].ok());

  std::unique_ptr<HeatsinkClient> reader = MakeClient(ClientId(200), "host-b", "b");
  const auto bytes_of = [&](const std::string& key) -> std::string {
    absl::StatusOr<GetResult> got = reader->Get(key);
    return got.ok() ? got->bytes : std::string(got.status().ToString());
  };
  EXPECT_EQ(StableHash(bytes_of("b1")), StableHash(b1));
  EXPECT_EQ(bytes_of("b2"), b2);
  EXPECT_EQ(bytes_of("exists"), Pattern(2, 1000));  // the first put's bytes
  EXPECT_EQ(reader->Get("broken").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reader->Get("too-big").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(reader->Get("no-room").status().code(), absl::StatusCode::kNotFound);
  // The revoked key can be put again.
  const std::vector<std::string> again = {"broken"};
  const std::string fixed = Pattern(17, 778);
  const std::vector<absl::string_view> fixed_values = {fixed};
  absl::StatusOr<std::vector<absl::Status>> retried = writer.BatchPut(again, fixed_values);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE((*retried)[0].ok()) << (*retried)[0];
  EXPECT_EQ(bytes_of("broken"), fixed);

  // Refused whole: keys and values that differ in number, and a batch above
  // the master's batch_keys_max (1024).
  const std::vector<absl::string_view> one = {b2};
  EXPECT_EQ(writer.BatchPut(keys, one).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<std::string> many;
  for (int i = 0; i < 1025; ++i) many.push_back(absl::StrCat("m", i));
  const std::vector<absl::string_view> many_values(many.size(), absl::string_view(b2));
  const absl::StatusOr<std::vector<absl::Status>> too_many = writer.BatchPut(many, many_values);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()), ::testing::HasSubstr("batch_keys_max"));
  EXPECT_EQ(reader->Get("m0").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(master_->CheckInvariants().ok());
}

}  // namespace
}  // namespace heatsink::runtime
