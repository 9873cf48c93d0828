// File: runtime/rpc/grpc_store_client.h
//
// ObjectDataPath over the stores' heatsink.v1.Store gRPC service
// (`data_path = grpc`): a put's bytes go up as one WriteObject client stream,
// a read comes back as one ReadObject server stream, every message at most
// `data_chunk_bytes` of data. The store is reached at its segment's
// `data_service_endpoint` (FAILED_PRECONDITION when the store serves no gRPC
// data service). Each call carries the RpcOptions deadline; statuses come
// back unchanged (1:1 with gRPC codes).
//
// Channels are cached per endpoint (at most `channels_max`; the oldest is
// dropped beyond that). Thread-safe.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto path, MakeObjectDataPath("grpc", rpc, tcp));
//   HeatsinkClient client(master, path.get(), options);
#ifndef HEATSINK_RUNTIME_RPC_GRPC_STORE_CLIENT_H_
#define HEATSINK_RUNTIME_RPC_GRPC_STORE_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "heatsink/store.grpc.pb.h"
#include "runtime/client/object_data_path.h"
#include "runtime/rpc/rpc_options.h"
#include "runtime/transport/tcp_knobs.h"

namespace heatsink::runtime {

struct GrpcDataPathOptions {
  RpcOptions rpc;
  // Largest data piece of one WriteObject message (the store refuses more
  // than its own data_chunk_bytes).
  uint64_t data_chunk_bytes = uint64_t{1} << 20;
  size_t channels_max = 256;

  [[nodiscard]] absl::Status Validate() const;
};

class GrpcObjectDataPath final : public ObjectDataPath {
 public:
  // INVALID_ARGUMENT for bad options or unreadable TLS files.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> Create(
      const GrpcDataPathOptions& options);
  GrpcObjectDataPath(const GrpcObjectDataPath&) = delete;
  GrpcObjectDataPath& operator=(const GrpcObjectDataPath&) = delete;

  absl::Status Write(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                     absl::string_view bytes) override;
  absl::Status ReadInto(const SegmentLocation& location, SegmentId segment, uint64_t offset,
                        absl::Span<uint8_t> out) override;
  absl::string_view name() const override { return "grpc"; }

  // The store's Stat (segments and counters) at `endpoint`.
  [[nodiscard]] absl::StatusOr<v1::StatResponse> Stat(const std::string& endpoint);

 private:
  GrpcObjectDataPath(const GrpcDataPathOptions& options,
                     std::shared_ptr<grpc::ChannelCredentials> credentials);
  absl::StatusOr<std::shared_ptr<v1::Store::Stub>> StubFor(const SegmentLocation& location);
  std::shared_ptr<v1::Store::Stub> StubForEndpoint(const std::string& endpoint);

  const GrpcDataPathOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<v1::Store::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> stub_order_ ABSL_GUARDED_BY(mu_);  // oldest first
};

// "tcp" (TcpObjectDataPath over `tcp`) or "grpc" (GrpcObjectDataPath over
// `rpc`); INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<std::unique_ptr<ObjectDataPath>> MakeObjectDataPath(
    absl::string_view data_path, const RpcOptions& rpc, const TcpTransportKnobs& tcp);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_RPC_GRPC_STORE_CLIENT_H_
