// Fuzz target: protobuf request handling at the runtime boundary.
//
// A real MasterServer (gRPC over loopback, an ephemeral port) serves a
// ReplicatedMaster in enforce mode with TestMin knobs on a ManualEnv, through
// the same MasterServer that heatsink-master uses. The input is a
// sequence of at most kCallsMax items, each:
//   byte 0   the RPC (one of the heatsink.v1.Master methods, or a clock
//            advance that runs the master's timers: admission, leases, sweep)
//   byte 1   the caller identity sent as `heatsink-client-id`: none, one of
//            four valid client ids, or a malformed value ("0", "-1", "x")
//   byte 2,3 payload length (little endian, capped by what is left); the
//            clock advance has no payload and moves (length % 5000) + 1 ms
//   payload  parsed as the method's request message with ParseFromString:
//            protobuf wire format, so any bytes are tried (unknown fields,
//            wrong wire types, truncated sub-messages, huge varints). Bytes
//            that do not parse are sent as an empty request.
// The seed corpus (fuzz/corpus/master_rpc/) holds well-formed calls: register,
// mount, put, repeated reads that cross the hit count, task fetches and copy
// calls, so mutations start from a live cluster.
//
// Checked after every call:
// - the call completes; its status is never UNKNOWN or INTERNAL (INTERNAL
//   would be a violated invariant or an exception escaping the master; every
//   operating error maps 1:1 from an absl::Status);
// - a call that acts for a client without a valid identity fails
//   (UNAUTHENTICATED, or a refusal by gRPC itself) and changes nothing the
//   master reports (its stats are unchanged);
// - MasterService::CheckInvariants() and dynamic replication's invariants
//   (ReplicatedMaster::CheckInvariants) hold;
// - a successful response re-serializes within the server's message bound.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "core/master/master_knobs.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "heatsink/master.grpc.pb.h"
#include "runtime/rpc/master_server.h"
#include "runtime/rpc/rpc_options.h"

namespace heatsink {
namespace {

namespace v1 = ::heatsink::v1;

constexpr int kCallsMax = 64;
constexpr int kMethods = 25;  // 24 RPCs + the clock advance

void Fail(const std::string& what) {
  std::fprintf(stderr, "master_rpc fuzz check failed: %s\n", what.c_str());
  std::abort();
}

// One master and its gRPC server, fresh for every input.
class World {
 public:
  World() : env_(1) {
    // Payloads with invalid UTF-8 in string fields fail to parse (and are
    // sent empty); protobuf would log each one.
    google::protobuf::SetLogHandler(nullptr);
    MasterKnobs master_knobs = MasterKnobs::TestMin();
    master_knobs.client_live_ttl_sec = 3600;  // clients stay live through the clock advances
    ReplicationKnobs knobs = ReplicationKnobs::TestMin();
    knobs.dynamic_replication_mode = DynamicReplicationMode::kEnforce;
    absl::StatusOr<std::unique_ptr<ReplicatedMaster>> master =
        ReplicatedMaster::Create(env_.env(), master_knobs, knobs, nullptr);
    if (!master.ok()) Fail(master.status().ToString());
    master_ = *std::move(master);
    runtime::RpcOptions options;
    options.message_bytes_max = 1 << 20;
    options.server_threads_max = 4;
    absl::StatusOr<std::unique_ptr<runtime::MasterServer>> server =
        runtime::MasterServer::Start(master_.get(), "127.0.0.1:0", options);
    if (!server.ok()) Fail(server.status().ToString());
    server_ = *std::move(server);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options.message_bytes_max);
    args.SetMaxSendMessageSize(64 << 20);  // the server must refuse oversized requests itself
    stub_ = v1::Master::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args));
    message_bytes_max_ = static_cast<size_t>(options.message_bytes_max);
  }

  // Runs the call at the front of [*data, end) and moves *data past it.
  // REQUIRES: at least 4 bytes.
  void RunOne(const uint8_t** data, const uint8_t* end) {
    const uint8_t* p = *data;
    const int method = p[0] % kMethods;
    const int caller = p[1] % 8;
    const size_t length_field = p[2] | (size_t{p[3]} << 8);
    if (method == kMethods - 1) {  // no payload
      *data = p + 4;
      env_.AdvanceBy(MsToNs(static_cast<int64_t>(length_field % 5000) + 1));
      Check("clock advance", grpc::Status::OK, /*acts_for_client=*/false, /*identified=*/true);
      return;
    }
    const size_t length = std::min<size_t>(length_field, static_cast<size_t>(end - p) - 4);
    const std::string payload(reinterpret_cast<const char*>(p + 4), length);
    *data = p + 4 + length;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    bool identified = false;
    switch (caller) {
      case 0: break;  // no identity
      case 5: ctx.AddMetadata(runtime::kClientIdMetadataKey, "0"); break;
      case 6: ctx.AddMetadata(runtime::kClientIdMetadataKey, "-1"); break;
      case 7: ctx.AddMetadata(runtime::kClientIdMetadataKey, "x"); break;
      default:
        ctx.AddMetadata(runtime::kClientIdMetadataKey, absl::StrCat(caller));
        identified = true;
        break;
    }
    const MasterStats before = master_->master().Stats();
    grpc::Status status;
    bool acts_for_client = true;
    std::string response_bytes;
    switch (method) {
#define HS_FUZZ_CALL(index, Rpc, Request, Response, ActsForClient) \
  case index: {                                                   \
    Request req;                                                  \
    if (!req.ParseFromString(payload)) req.Clear();               \
    Response resp;                                                \
    status = stub_->Rpc(&ctx, req, &resp);                        \
    acts_for_client = ActsForClient;                              \
    if (status.ok()) response_bytes = resp.SerializeAsString();   \
    break;                                                        \
  }
      HS_FUZZ_CALL(0, Ping, v1::Empty, v1::Empty, false)
      HS_FUZZ_CALL(1, RegisterClient, v1::RegisterClientRequest, v1::Empty, true)
      HS_FUZZ_CALL(2, Heartbeat, v1::Empty, v1::Empty, true)
      HS_FUZZ_CALL(3, MountSegment, v1::MountSegmentRequest, v1::Empty, true)
      HS_FUZZ_CALL(4, UnmountSegment, v1::UnmountSegmentRequest, v1::Empty, true)
      HS_FUZZ_CALL(5, ListSegments, v1::Empty, v1::ListSegmentsResponse, false)
      HS_FUZZ_CALL(6, PutStart, v1::PutStartRequest, v1::PutStartResponse, true)
      HS_FUZZ_CALL(7, PutEnd, v1::PutFenceRequest, v1::Empty, true)
      HS_FUZZ_CALL(8, PutRevoke, v1::PutFenceRequest, v1::Empty, true)
      HS_FUZZ_CALL(9, GetReplicaList, v1::GetReplicaListRequest, v1::GetReplicaListResponse,
                   false)
      HS_FUZZ_CALL(10, BatchGetReplicaList, v1::BatchGetReplicaListRequest,
                   v1::BatchGetReplicaListResponse, false)
      HS_FUZZ_CALL(11, Remove, v1::RemoveRequest, v1::Empty, false)
      HS_FUZZ_CALL(12, FetchTasks, v1::FetchTasksRequest, v1::FetchTasksResponse, true)
      HS_FUZZ_CALL(13, MarkTaskComplete, v1::MarkTaskCompleteRequest, v1::Empty, true)
      HS_FUZZ_CALL(14, CopyStart, v1::CopyTaskFence, v1::CopyStartResponse, true)
      HS_FUZZ_CALL(15, CopyEnd, v1::CopyTaskFence, v1::Empty, true)
      HS_FUZZ_CALL(16, CopyRevoke, v1::CopyTaskFence, v1::Empty, true)
      HS_FUZZ_CALL(17, DynamicReplicaCopyStart, v1::CopyTaskFence, v1::CopyStartResponse, true)
      HS_FUZZ_CALL(18, DynamicReplicaCopyEnd, v1::CopyTaskFence, v1::Empty, true)
      HS_FUZZ_CALL(19, DynamicReplicaCopyRevoke, v1::CopyTaskFence, v1::Empty, true)
      HS_FUZZ_CALL(20, Ping, v1::Empty, v1::Empty, false)
      HS_FUZZ_CALL(21, BatchPutStart, v1::BatchPutStartRequest, v1::BatchPutStartResponse, true)
      HS_FUZZ_CALL(22, BatchPutEnd, v1::BatchPutFenceRequest, v1::BatchPutResponse, true)
      HS_FUZZ_CALL(23, BatchPutRevoke, v1::BatchPutFenceRequest, v1::BatchPutResponse, true)
#undef HS_FUZZ_CALL
      default:
        Fail(absl::StrCat("method index ", method));
    }
    if (response_bytes.size() > message_bytes_max_) {
      Fail(absl::StrCat("method ", method, ": response of ", response_bytes.size(),
                        " bytes above the server's bound ", message_bytes_max_));
    }
    Check(absl::StrCat("method ", method), status, acts_for_client, identified);
    if (acts_for_client && !identified) {
      const MasterStats after = master_->master().Stats();
      if (after.objects != before.objects || after.segments != before.segments ||
          after.clients != before.clients || after.tasks_pending != before.tasks_pending ||
          after.tasks_processing != before.tasks_processing ||
          after.used_bytes != before.used_bytes || after.reserved_bytes != before.reserved_bytes) {
        Fail(absl::StrCat("method ", method, ": an unauthenticated call changed the master"));
      }
    }
  }

 private:
  void Check(const std::string& what, const grpc::Status& status, bool acts_for_client,
             bool identified) {
    if (status.error_code() == grpc::StatusCode::UNKNOWN ||
        status.error_code() == grpc::StatusCode::INTERNAL) {
      Fail(absl::StrCat(what, ": status ", static_cast<int>(status.error_code()), " ",
                        status.error_message()));
    }
    // UNAUTHENTICATED from the identity check; gRPC itself may refuse first
    // (RESOURCE_EXHAUSTED when its threads are busy, for example). Never OK.
    if (acts_for_client && !identified && status.ok()) {
      Fail(absl::StrCat(what, ": a call without a valid client identity succeeded"));
    }
    if (absl::Status inv = master_->CheckInvariants(); !inv.ok()) {
      Fail(absl::StrCat(what, ": ", inv.ToString()));
    }
  }

  ManualEnv env_;
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<runtime::MasterServer> server_;
  std::unique_ptr<v1::Master::Stub> stub_;
  size_t message_bytes_max_ = 0;
};

}  // namespace
}  // namespace heatsink

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A fresh master and server per input, so every input replays alone.
  heatsink::World world;
  const uint8_t* const end = data + size;
  for (int i = 0; i < heatsink::kCallsMax && end - data >= 4; ++i) world.RunOne(&data, end);
  return 0;
}
