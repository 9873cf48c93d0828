#include "runtime/rpc/grpc_store_client.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/channel_arguments.h"
#include "runtime/rpc/status.h"

namespace heatsink::runtime {
namespace {

void SetDeadline(grpc::ClientContext* ctx, int64_t timeout_ms) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
}

}  // namespace

absl::Status GrpcDataPathOptions::Validate() const {
  HS_RETURN_IF_ERROR(rpc.Validate());
  if (data_chunk_bytes == 0 ||
      data_chunk_bytes + 64 > static_cast<uint64_t>(rpc.message_bytes_max)) {
    return absl::InvalidArgumentError(absl::StrCat("data_chunk_bytes=", data_chunk_bytes,
                                                   " must be positive and fit in "
                                                   "message_bytes_max=",
                                                   rpc.message_bytes_max));
  }
  if (channels_max == 0) return absl::InvalidArgumentError("channels_max must be positive");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> GrpcObjectDataPath::Create(
    const GrpcDataPathOptions& options) {
  HS_RETURN_IF_ERROR(options.Validate());
  HS_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                      MakeChannelCredentials(options.rpc.tls));
  return std::unique_ptr<GrpcObjectDataPath>(
      new GrpcObjectDataPath(options, std::move(credentials)));
}

GrpcObjectDataPath::GrpcObjectDataPath(const GrpcDataPathOptions& options,
                                       std::shared_ptr<grpc::ChannelCredentials> credentials)
    : options_(options), credentials_(std::move(credentials)) {}

std::shared_ptr<v1::Store::Stub> GrpcObjectDataPath::StubForEndpoint(const std::string& endpoint) {
  MutexLock lock(&mu_);
  auto it = stubs_.find(endpoint);
  if (it != stubs_.end()) return it->second;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.rpc.message_bytes_max);
  args.SetMaxSendMessageSize(options_.rpc.message_bytes_max);
  std::shared_ptr<v1::Store::Stub> stub =
      v1::Store::NewStub(grpc::CreateCustomChannel(endpoint, credentials_, args));
  if (stubs_.size() >= options_.channels_max) {
    stubs_.erase(stub_order_.front());
    stub_order_.pop_front();
  }
  stubs_.emplace(endpoint, stub);
  stub_order_.push_back(endpoint);
  return stub;
}

absl::StatusOr<std::shared_ptr<v1::Store::Stub>> GrpcObjectDataPath::StubFor(
    const SegmentLocation& location) {
  if (location.data_service_endpoint.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store of segment ", location.id.value,
                     " serves no gRPC data service (start it with --data-service-listen)"));
  }
  return StubForEndpoint(location.data_service_endpoint);
}

absl::Status GrpcObjectDataPath::Write(const SegmentLocation& location, SegmentId segment,
                                       uint64_t offset, absl::string_view bytes) {
  HS_ASSIGN_OR_RETURN(std::shared_ptr<v1::Store::Stub> stub, StubFor(location));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc.call_timeout_ms);
  v1::WriteObjectResponse resp;
  std::unique_ptr<grpc::ClientWriter<v1::WriteObjectChunk>> writer = stub->WriteObject(&ctx, &resp);
  v1::WriteObjectChunk chunk;
  chunk.set_segment_id(segment.value);
  chunk.set_offset(offset);
  chunk.set_length(bytes.size());
  uint64_t sent = 0;
  bool first = true;
  // A failed Write means the stream is broken; Finish() tells why.
  while (first || sent < bytes.size()) {
    const uint64_t n = std::min<uint64_t>(options_.data_chunk_bytes, bytes.size() - sent);
    chunk.set_data(bytes.data() + sent, n);
    if (!writer->Write(chunk)) break;
    sent += n;
    if (first) {
      chunk.clear_segment_id();
      chunk.clear_offset();
      chunk.clear_length();
      first = false;
    }
  }
  writer->WritesDone();
  HS_RETURN_IF_ERROR(FromGrpcStatus(writer->Finish()));
  if (resp.bytes_written() != bytes.size()) {
    return absl::DataLossError(
        absl::StrCat("store acknowledged ", resp.bytes_written(), " of ", bytes.size(), " bytes"));
  }
  return absl::OkStatus();
}

absl::Status GrpcObjectDataPath::ReadInto(const SegmentLocation& location, SegmentId segment,
                                          uint64_t offset, absl::Span<uint8_t> out) {
  HS_ASSIGN_OR_RETURN(std::shared_ptr<v1::Store::Stub> stub, StubFor(location));
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc.call_timeout_ms);
  v1::ReadObjectRequest req;
  req.set_segment_id(segment.value);
  req.set_offset(offset);
  req.set_length(out.size());
  std::unique_ptr<grpc::ClientReader<v1::DataChunk>> reader = stub->ReadObject(&ctx, req);
  uint64_t got = 0;
  v1::DataChunk chunk;
  absl::Status malformed = absl::OkStatus();
  while (reader->Read(&chunk)) {
    if (chunk.offset() != offset + got || chunk.data().size() > out.size() - got) {
      malformed = absl::DataLossError(absl::StrCat("store sent a chunk at offset ", chunk.offset(),
                                                   " of ", chunk.data().size(), " bytes after ",
                                                   got, " of ", out.size()));
      ctx.TryCancel();
      break;
    }
    std::memcpy(out.data() + got, chunk.data().data(), chunk.data().size());
    got += chunk.data().size();
  }
  const absl::Status finished = FromGrpcStatus(reader->Finish());
  HS_RETURN_IF_ERROR(malformed);
  HS_RETURN_IF_ERROR(finished);
  if (got != out.size()) {
    return absl::DataLossError(absl::StrCat("store sent ", got, " of ", out.size(), " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::StatResponse> GrpcObjectDataPath::Stat(const std::string& endpoint) {
  std::shared_ptr<v1::Store::Stub> stub = StubForEndpoint(endpoint);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, options_.rpc.call_timeout_ms);
  v1::StatResponse resp;
  HS_RETURN_IF_ERROR(FromGrpcStatus(stub->Stat(&ctx, v1::StatRequest(), &resp)));
  return resp;
}

absl::StatusOr<std::unique_ptr<ObjectDataPath>> MakeObjectDataPath(absl::string_view data_path,
                                                                   const RpcOptions& rpc,
                                                                   const TcpTransportKnobs& tcp) {
  if (data_path == "tcp") {
    HS_RETURN_IF_ERROR(tcp.Validate());
    return std::unique_ptr<ObjectDataPath>(new TcpObjectDataPath(tcp));
  }
  if (data_path == "grpc") {
    GrpcDataPathOptions options;
    options.rpc = rpc;
    HS_ASSIGN_OR_RETURN(std::unique_ptr<GrpcObjectDataPath> path,
                        GrpcObjectDataPath::Create(options));
    return std::unique_ptr<ObjectDataPath>(std::move(path));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("data_path must be 'tcp' or 'grpc', got '", data_path, "'"));
}

}  // namespace heatsink::runtime
