// File: runtime/transport/data_plane.h
//
// Selects a store's data plane by name ("tcp" or "ucx", the store's
// --transport flag): the mover that pushes copies out, and the data server
// that serves this store's segments to peers (writes, reads, RMA grants).
//
// Example:
//   DataPlaneOptions options;
//   options.transport = "ucx";
//   HS_ASSIGN_OR_RETURN(auto plane, MakeDataPlane(env->clock, options, &segments, &resolver));
//   descriptor.data_endpoint = plane->endpoint();
//   worker.SetDataMover(&plane->mover());
//   ...
//   plane->Shutdown();  // server first, then the mover
#ifndef HEATSINK_RUNTIME_TRANSPORT_DATA_PLANE_H_
#define HEATSINK_RUNTIME_TRANSPORT_DATA_PLANE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/clock.h"
#include "core/env/data_mover.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/tcp_knobs.h"
#include "runtime/transport/ucx_worker.h"

namespace heatsink::runtime {

enum class TransportKind { kTcp, kUcx };

// "tcp" or "ucx"; INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<TransportKind> ParseTransport(absl::string_view name);

struct DataPlaneOptions {
  std::string transport = "tcp";
  TcpTransportKnobs tcp;
  UcxOptions ucx;
  uint64_t ucx_put_chunk_bytes = uint64_t{8} << 20;
};

// Only a mover (a process that copies out but serves nothing). `clock` is
// the Env's (never null); it, `local` and `resolver` must outlive the mover.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DataMover>> MakeDataMover(
    const Clock* clock, absl::string_view transport, SegmentMemory* local,
    EndpointResolver* resolver, const DataPlaneOptions& options);

class DataPlane {
 public:
  DataPlane(std::unique_ptr<DataMover> mover, std::unique_ptr<TcpDataServer> server)
      : mover_(std::move(mover)), server_(std::move(server)) {}
  ~DataPlane() { Shutdown(); }
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  DataMover& mover() { return *mover_; }
  TcpDataServer& server() { return *server_; }
  const std::string& endpoint() const { return server_->endpoint(); }

  // Stops serving peers, then fails and drains this store's own copies.
  void Shutdown();

 private:
  std::unique_ptr<DataMover> mover_;
  std::unique_ptr<TcpDataServer> server_;
};

// `clock` (the Env's, never null), `local` and `resolver` must outlive the
// plane.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DataPlane>> MakeDataPlane(
    const Clock* clock, const DataPlaneOptions& options, SegmentMemory* local,
    EndpointResolver* resolver);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_DATA_PLANE_H_
